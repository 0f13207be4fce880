"""Websocket routes; asgi.py wraps them in origin validation and session auth."""

from django.urls import path

from chat.sockets.consumer import ChatConsumer

# Channels routes ASGI applications through Django's path(), whose stub knows views only.
websocket_urlpatterns = [
    path("ws/chat/<uuid:conversation_id>/", ChatConsumer.as_asgi()),  # type: ignore[arg-type]
]
