"""ASGI entry point: HTTP (with static files) and websockets, served by daphne."""

import asyncio
import os
import sys

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fimone.settings")
# Django must be set up before anything imports models (the consumers do).
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from chat import drain, runs  # noqa: E402
from chat.routing import websocket_urlpatterns  # noqa: E402
from fimone.loop_monitor import MonitoredApp  # noqa: E402


def _drain_on_sigterm() -> None:
    """Under daphne, SIGTERM drains this process instead of dropping its runs
    (docs/operations.md). Installed once Twisted's own signal handlers are in place."""
    if "daphne.server" not in sys.modules:
        return  # imported by another server or by tests
    from twisted.internet import reactor

    def install() -> None:
        drain.install_sigterm_drain(
            loop=asyncio.get_event_loop(),
            running=runs.local_run_count,
            interrupt_rest=runs.interrupt_local_runs,
            stop=lambda: reactor.callFromThread(reactor.stop),
        )

    reactor.callWhenRunning(install)


_drain_on_sigterm()

# The lag monitor starts with the first connection: daphne has no startup hook.
application = MonitoredApp(
    ProtocolTypeRouter(
        {
            # Static files are served by the app itself so the one-command run needs no proxy.
            "http": ASGIStaticFilesHandler(django_asgi_app),
            "websocket": AllowedHostsOriginValidator(
                AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
            ),
        }
    )
)
