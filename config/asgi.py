"""ASGI entry point: HTTP (with static files) and websockets, served by daphne."""

import asyncio
import gc
import os
import sys

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Django must be set up before anything imports models (the consumers do).
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from chat import drain, runs  # noqa: E402
from chat.sockets.routing import websocket_urlpatterns  # noqa: E402
from config.loop_monitor import MonitoredApp  # noqa: E402


def _formless_under_daphne() -> None:
    """Under daphne, Twisted's form parsing is off, whichever command started it: plain
    ``daphne config.asgi:application`` imports this module before it builds its HTTP
    factory, in time for the switch (config/server.py says why)."""
    if "daphne.server" not in sys.modules:
        return  # imported by another server or by tests
    from config.server import serve_without_form_parsing

    serve_without_form_parsing()


_formless_under_daphne()


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
            # Twisted's interfaces declare their methods without self, which the checker
            # reads as one argument less.
            stop=lambda: reactor.callFromThread(reactor.stop),  # type: ignore[misc]
        )

    def close_tool_servers():
        # After the drain (its stop) and on any other shutdown: stdio tool servers are this
        # process's children and are stopped with it (docs/tools.md).
        from twisted.internet.defer import Deferred

        from chat.tool_servers import pool as tool_servers

        return Deferred.fromFuture(asyncio.ensure_future(tool_servers.close()))

    reactor.callWhenRunning(install)
    reactor.addSystemEventTrigger("before", "shutdown", close_tool_servers)  # type: ignore[arg-type]


_drain_on_sigterm()


def _settle_heap() -> None:
    """Import now what the first requests would otherwise import on the serving loop (the URL
    conf with its views, the model SDK's chat resources: 100 ms and more), then take every
    object loaded so far out of the garbage collector's scans. A full collection walks all
    tracked objects; with Django, the SDKs and the app loaded that is ~150,000 of them, a
    pause of 50-400 ms on the loop every few seconds under load. Frozen, they are never
    scanned again; what requests allocate still is (docs/operations.md)."""
    from django.urls import get_resolver
    from openai import AsyncOpenAI

    get_resolver().url_patterns  # noqa: B018 — imports every view module
    # A client that is never used: building it and reaching its chat resource imports the
    # SDK's lazily loaded modules and its HTTP transport's (no connection is made).
    AsyncOpenAI(api_key="unused", base_url="http://127.0.0.1:9/v1").chat.completions  # noqa: B018
    gc.collect()
    gc.freeze()


_settle_heap()


def _read_context_windows() -> None:
    """The environment's endpoints asked for their windows, off the serving loop
    (contextmgmt/env_window.py); runs use the default budget until the answer is in."""
    import threading

    from contextmgmt import env_window

    threading.Thread(
        target=env_window.read_env_windows, name="read-context-windows", daemon=True
    ).start()


_read_context_windows()

# The lag monitor starts with the first connection: daphne has no startup hook.
application = MonitoredApp(
    ProtocolTypeRouter(
        {
            # Static files are served by WhiteNoise, a middleware (config/static_files.py).
            "http": django_asgi_app,
            "websocket": AllowedHostsOriginValidator(
                # The stub wants its own pattern type; path() makes these (chat/sockets/routing.py).
                AuthMiddlewareStack(URLRouter(websocket_urlpatterns))  # type: ignore[arg-type]
            ),
        }
    )
)
