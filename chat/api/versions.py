"""Showing another version of an edited question or a regenerated answer (docs/protocol.md,
"Versions"): ``POST /api/conversations/<id>/messages/<message_id>/show/``, owner-only, CSRF
checked like every write. The other sockets of the conversation are told, so a second tab
shows the same branch."""

from __future__ import annotations

import logging
import uuid

from asgiref.sync import async_to_sync
from django.http import HttpRequest, HttpResponse, JsonResponse

from chat import runs, versions
from chat.api.plumbing import api_view
from chat.runs.events import channel_layer

logger = logging.getLogger(__name__)

SHOWN_EVENT = "versions.shown"


@api_view("POST")
def version_show(request: HttpRequest, conversation_id: str, message_id: str) -> HttpResponse:
    shown = versions.version_show(
        user=request.user, conversation_id=conversation_id, message_id=message_id
    )
    if shown.changed:
        _announce(conversation_id, shown)
    return JsonResponse(
        {
            "message_id": shown.message_id,
            "changed": shown.changed,
            "versions": list(shown.versions),
            "title": shown.title,
        }
    )


def _announce(conversation_id: str, shown: versions.VersionShown) -> None:
    """Every open socket of the conversation reloads its messages (never raises: the switch
    is stored; a tab that misses this shows it at its next load)."""
    event = {"type": SHOWN_EVENT, "message_id": shown.message_id, "title": shown.title}
    try:
        group = runs.conversation_group(str(uuid.UUID(conversation_id)))
        async_to_sync(channel_layer().group_send)(group, {"type": "chat.event", "event": event})
    except Exception:
        logger.exception("could not tell the sockets of %s about a version", conversation_id)
