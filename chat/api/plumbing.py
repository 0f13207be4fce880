"""JSON plumbing of the HTTP API (docs/protocol.md): the decorator, body parsing, shapes.

The shapes (``conversation_json``, ``message_json``, ``attachment_json``) are shared with
the websocket layer so that a message looks the same however it reaches the browser.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, overload

from django.core.exceptions import ObjectDoesNotExist
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse
from django.utils.translation import gettext

from chat import selectors
from chat.errors import ChatError, InvalidInput
from chat.json_input import parse_json
from chat.models import Attachment, Conversation, Message
from chat.rendering.message_html import answer_html
from chat.runs.record import dag_with_html
from chat.versions import versions_of


def error_response(code: str, message: str, status: int) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message}}, status=status)


def _refusal(user: Any, method: str | None, allowed: set[str]) -> HttpResponse | None:
    """What an API view answers before it runs: 401 to a stranger, 405 to a wrong method."""
    if not user.is_authenticated:
        # 401, not a redirect to the login page: API clients cannot follow that.
        response = error_response("not_authenticated", gettext("Log in first."), 401)
        response["WWW-Authenticate"] = 'Session realm="fimone"'
        return response
    if method not in allowed:
        response = error_response("method_not_allowed", f"{method} is not allowed here.", 405)
        response["Allow"] = ", ".join(sorted(allowed))
        return response
    return None


def _error_of(exc: Exception) -> HttpResponse:
    if isinstance(exc, ChatError):
        return error_response(exc.code, exc.message, exc.status)
    return error_response("not_found", gettext("Not found."), 404)


def api_view(*methods: str) -> Callable:
    """Session-authenticated, method-checked JSON view; errors become JSON 4xx answers.

    CSRF stays on: the middleware checks every unsafe method before the view runs.
    """

    allowed = {m.upper() for m in methods}

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            refused = _refusal(request.user, request.method, allowed)
            if refused is not None:
                return refused
            try:
                return view(request, *args, **kwargs)
            except (ChatError, ObjectDoesNotExist) as exc:
                return _error_of(exc)

        return wrapper

    return decorator


def async_api_view(*methods: str) -> Callable:
    """``api_view`` for async views: the user is read without blocking the event loop."""

    allowed = {m.upper() for m in methods}

    def decorator(view: Callable[..., Awaitable[HttpResponse]]) -> Callable:
        @functools.wraps(view)
        async def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            refused = _refusal(await request.auser(), request.method, allowed)
            if refused is not None:
                return refused
            try:
                return await view(request, *args, **kwargs)
            except (ChatError, ObjectDoesNotExist) as exc:
                return _error_of(exc)

        return wrapper

    return decorator


def read_json(request: HttpRequest) -> dict[str, Any]:
    """The request body as a JSON object; an empty body is an empty object."""
    if not request.body:
        return {}
    data = parse_json(request.body)
    if not isinstance(data, dict):
        raise InvalidInput("invalid_json", gettext("The request body must be a JSON object."))
    return data


@overload
def query_int(request: HttpRequest, name: str, default: int) -> int: ...
@overload
def query_int(request: HttpRequest, name: str, default: None = None) -> int | None: ...
def query_int(request: HttpRequest, name: str, default: int | None = None) -> int | None:
    raw = request.GET.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise InvalidInput(f"invalid_{name}", f"{name} must be an integer.") from exc


def conversation_json(conversation: Conversation) -> dict[str, Any]:
    return {
        "id": str(conversation.id),
        "title": conversation.title,
        "mode": conversation.mode,
        # The picked main model (a ModelConfig id), or null for the configured default.
        "model_config": conversation.model_config_id,
        # The built-in offline model picked (then ``model_config`` is null).
        "builtin_model": conversation.builtin_model,
        # The project it belongs to (an id), or null; its own instructions (docs/projects.md).
        "project": conversation.project_id,
        "instructions": conversation.instructions,
        "created_at": conversation.created_at.isoformat(),
        "updated_at": conversation.updated_at.isoformat(),
    }


def attachment_url(file_id: str | uuid.UUID) -> str:
    return reverse("chat:attachment", args=[str(file_id)])


def messages_json(messages: list[Message], *, conversation: Conversation) -> list[dict[str, Any]]:
    """A page of messages, their images described (one query for all of them)."""
    descriptions = selectors.image_descriptions(conversation=conversation, messages=messages)
    versions = versions_of(messages)
    results = selectors.tool_result_ids(messages=messages)
    return [
        message_json(
            m, descriptions=descriptions, versions=versions.get(m.pk), results=results.get(m.pk)
        )
        for m in messages
    ]


def tool_result_url(conversation_id, result_id: int) -> str:
    return reverse(
        "chat:tool_result",
        kwargs={"conversation_id": str(conversation_id), "result_id": str(result_id)},
    )


def _steps_json(message: Message, steps: list, results: dict[str, int] | None) -> list:
    """The recorded steps; a tool result's with ``result_url`` when its whole text is
    stored (the step itself keeps a preview)."""
    if not results:
        return steps
    return [
        {**step, "result_url": tool_result_url(message.conversation_id, results[step["call_id"]])}
        if isinstance(step, dict)
        and step.get("kind") == "tool_result"
        and step.get("call_id") in results
        else step
        for step in steps
    ]


def message_json(
    message: Message,
    *,
    descriptions: dict[str, str] | None = None,
    versions: tuple[int, ...] | None = None,
    results: dict[str, int] | None = None,
) -> dict[str, Any]:
    """``results``: the message's stored whole tool results, by call id."""
    metadata = message.metadata or {}
    descriptions = descriptions or {}
    images = [
        {
            "file_id": str(image["file_id"]),
            "mime_type": image.get("mime_type", ""),
            "url": attachment_url(image["file_id"]),
            # What the picture shows, as the model is told (alt text for the UI).
            "description": descriptions.get(str(image["file_id"]), ""),
        }
        for image in metadata.get("images") or []
        if isinstance(image, dict) and image.get("file_id")
    ]
    is_assistant = message.role == Message.Role.ASSISTANT
    return {
        "id": message.id,
        "role": message.role,
        "kind": message.kind,
        "status": message.status,
        "content": message.content,
        # Rendered and sanitised on the server (chat/rendering/markdown.py); user text is shown as
        # plain text by the UI.
        # Stored with the message (chat/rendering/message_html.py): a read does not render.
        "html": answer_html(message) if is_assistant else None,
        "pinned": message.pinned,
        "created_at": message.created_at.isoformat(),
        "run_id": message.run_id or None,
        "mode": metadata.get("mode"),
        "images": images,
        # Chips: name, pages, size (chat.documents.extraction.document_refs, stored when sent).
        "documents": [
            {
                "file_id": str(doc["file_id"]),
                "name": str(doc.get("name") or ""),
                "mime_type": doc.get("mime_type", ""),
                "kind": doc.get("kind", ""),
                "pages": doc.get("pages", 0),
                "size": doc.get("size", 0),
                "url": attachment_url(doc["file_id"]),
            }
            for doc in metadata.get("documents") or []
            if isinstance(doc, dict) and doc.get("file_id")
        ],
        "usage": metadata.get("usage"),
        "compaction": metadata.get("compaction"),
        "error": metadata.get("error"),
        # Why a run stopped by itself (an approval that waited too long): {code, message}.
        "note": metadata.get("note"),
        # What the run showed besides its answer (chat.runs.record.RunRecord), for a reload.
        "steps": _steps_json(message, metadata.get("steps") or [], results),
        "steps_omitted": metadata.get("steps_omitted", 0),
        "dag": dag_with_html(metadata.get("dag")),
        "reasoning": metadata.get("reasoning") or "",
        # Set on a message hidden because another version is shown (chat.versions).
        "superseded_by": message.superseded_by_id,
        "retry_of": metadata.get("retry_of"),
        # An answer's replies to follow-ups sent while it was written (ids, oldest first).
        "follow_ups": metadata.get("follow_ups") or [],
        # Every version of an edited question or a regenerated answer, oldest first; null
        # for a message with one version.
        "versions": list(versions) if versions else None,
    }


def attachment_json(attachment: Attachment) -> dict[str, Any]:
    if attachment.kind == Attachment.Kind.DOCUMENT:
        document = attachment.document or {}
        return {
            "file_id": str(attachment.id),
            "kind": "document",
            "name": attachment.original_name,
            "mime_type": attachment.mime_type,
            "document_kind": document.get("kind", ""),
            "pages": attachment.page_count,
            "size": attachment.size,
            "url": attachment_url(attachment.id),
            # What the reading left out or could not read (no text layer, pages cut).
            "warnings": document.get("warnings") or [],
        }
    return {
        "file_id": str(attachment.id),
        "kind": "image",
        "name": attachment.original_name,
        "mime_type": attachment.mime_type,
        "width": attachment.width,
        "height": attachment.height,
        "size": attachment.size,
        "url": attachment_url(attachment.id),
        "description": attachment.description,
    }
