"""ASGI entry point: HTTP (with static files) and websockets, served by daphne."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fimone.settings")
# Django must be set up before anything imports models (the consumers do).
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from chat.routing import websocket_urlpatterns  # noqa: E402
from fimone.loop_monitor import MonitoredApp  # noqa: E402

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
