"""HTTP API for steering compaction (docs/protocol.md): pins, and the summaries behind the
"Earlier context was summarized" divider. Thin: selectors read, services write; owner-only
(another user's conversation, message or summary answers 404); CSRF on every write."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.translation import gettext

from chat import selectors, services
from chat.api.plumbing import api_view, message_json, messages_json, query_int, read_json
from chat.errors import InvalidInput
from chat.models import ContextSummary
from contextmgmt.core.factcheck import is_present


def summary_json(summary: ContextSummary, *, current: bool) -> dict[str, Any]:
    metadata = summary.metadata or {}
    return {
        "id": summary.pk,
        # Exactly the text the model is given (a user's edit once edited).
        "content": summary.content,
        "covered_count": summary.covered_count,
        "tokens": summary.tokens,
        "covers_through": summary.covers_through_id,
        # Messages up to covers_through that stayed verbatim (pins, mostly).
        "uncovered": list(summary.uncovered_ids or []),
        **_fact_check(summary, metadata),
        "created_at": summary.created_at.isoformat(),
        "edited": summary.edited_at is not None,
        "edited_at": summary.edited_at.isoformat() if summary.edited_at else None,
        # The model's own text, kept when a user edited it.
        "original": metadata.get("original") if summary.edited_at else None,
        "discarded": summary.discarded_at is not None,
        # Whether the next request starts from it (only then can it be edited or discarded).
        "current": current,
    }


def _fact_check(summary: ContextSummary, metadata: dict[str, Any]) -> dict[str, list[str]]:
    """The fact check as it bears on the text the model now gets: once a user edited the
    summary, a fact put back counts only while their text still holds it, and every fact the
    check found that the text no longer holds is listed as missing."""
    appended = list(metadata.get("facts_appended") or [])
    missing = list(metadata.get("facts_missing") or [])
    if summary.edited_at is None:
        return {"facts_appended": appended, "facts_missing": missing}
    content = summary.content
    return {
        "facts_appended": [fact for fact in appended if is_present(fact, content)],
        "facts_missing": [
            fact for fact in dict.fromkeys(missing + appended) if not is_present(fact, content)
        ],
    }


@api_view("GET", "PATCH", "DELETE")
def summary_detail(request: HttpRequest, conversation_id: str, summary_id: str) -> HttpResponse:
    conversation = selectors.conversation_get(user=request.user, conversation_id=conversation_id)
    summary = selectors.summary_get(conversation=conversation, summary_id=summary_id)
    if request.method == "DELETE":
        services.summary_discard(summary=summary)
        return HttpResponse(status=204)
    if request.method == "PATCH":
        body = read_json(request)
        if "content" not in body:
            raise InvalidInput("missing_content", gettext("Send the new summary as 'content'."))
        summary = services.summary_edit(summary=summary, content=body["content"])
        return JsonResponse(summary_json(summary, current=True))
    return JsonResponse(
        summary_json(summary, current=selectors.summary_is_current(summary=summary))
    )


@api_view("GET")
def summary_messages(request: HttpRequest, conversation_id: str, summary_id: str) -> HttpResponse:
    conversation = selectors.conversation_get(user=request.user, conversation_id=conversation_id)
    summary = selectors.summary_get(conversation=conversation, summary_id=summary_id)
    page = selectors.summary_covered_page(
        summary=summary,
        after_id=query_int(request, "after"),
        limit=query_int(request, "limit", default=50),
    )
    return JsonResponse(
        {
            "messages": messages_json(page.messages, conversation=conversation),
            "has_more": page.has_more,
        }
    )


@api_view("PATCH")
def message_detail(request: HttpRequest, conversation_id: str, message_id: str) -> HttpResponse:
    conversation = selectors.conversation_get(user=request.user, conversation_id=conversation_id)
    message = selectors.message_get(conversation=conversation, message_id=message_id)
    body = read_json(request)
    if "pinned" not in body:
        raise InvalidInput("missing_pinned", gettext('Send {"pinned": true} or {"pinned": false}.'))
    message = services.message_pin_set(message=message, pinned=body["pinned"])
    return JsonResponse(message_json(message))
