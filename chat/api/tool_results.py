"""HTTP API for a run's whole tool results (docs/protocol.md, "Tool results"): a step's
"show all" after a reload reads one. Owner-only: another user's conversation or result
answers 404, as a missing one does."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse

from chat import selectors
from chat.api.plumbing import api_view
from chat.models import ToolResult


def tool_result_json(result: ToolResult) -> dict[str, Any]:
    return {
        "id": result.result_id,
        "message_id": result.message_id,
        "call_id": result.call_id,
        "name": result.name,
        "arguments": result.arguments,
        # The whole result as the tool returned it, up to the stored maximum
        # (``chat.services.TOOL_RESULT_MAX_CHARS``); ``chars`` is its whole length.
        "content": result.content,
        "chars": result.chars,
        "truncated": result.chars > len(result.content),
        "created_at": result.created_at.isoformat(),
    }


@api_view("GET")
def tool_result_detail(request: HttpRequest, conversation_id: str, result_id: str) -> HttpResponse:
    conversation = selectors.conversation_get(user=request.user, conversation_id=conversation_id)
    result = selectors.tool_result_get(conversation=conversation, result_id=result_id)
    return JsonResponse(tool_result_json(result))
