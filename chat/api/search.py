"""``GET /api/search/?q=``: the signed-in user's conversations searched by title and text
(docs/protocol.md, "Search"); the same full-text index as ``recall``
(``chat.search.conversations``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.translation import gettext

from chat.api.plumbing import api_view, conversation_json, query_int
from chat.errors import InvalidInput
from chat.search.conversations import Hit, search
from chat.search.text import Term, highlights, query_terms, snippet_bounds

MAX_QUERY_CHARS = 200
MAX_LIMIT = 50
SNIPPET_CHARS = 160
PER_CONVERSATION = 3  # hits of one conversation shown under it, so others still appear


@api_view("GET")
def search_view(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(
            "query_too_long",
            gettext("Search for at most %(limit)d characters.") % {"limit": MAX_QUERY_CHARS},
        )
    limit = query_int(request, "limit", default=20)
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput("invalid_limit", f"limit must be between 1 and {MAX_LIMIT}.")
    terms = typed_terms(query)
    hits = search(query=terms, owner_id=request.user.pk, match_all=True, limit=limit * 3)
    per_conversation: dict[Any, int] = {}
    sources: set[tuple[Any, str, str]] = set()
    results = []
    for hit in hits:
        # A long text is indexed as passages: it is shown once, by its best passage.
        document = hit.document
        source = (document.message_id, document.kind, document.label)
        if document.message_id is not None and source in sources:
            continue
        sources.add(source)
        seen = per_conversation.get(hit.document.conversation_id, 0)
        if seen >= PER_CONVERSATION:
            continue
        per_conversation[hit.document.conversation_id] = seen + 1
        results.append(result_json(hit, terms))
        if len(results) >= limit:
            break
    return JsonResponse({"query": query, "results": results})


def typed_terms(query: str) -> list[Term]:
    """The search box's terms: every word must match; the last one as typed so far may be
    the start of a longer word (unless the query ends with a space)."""
    terms = query_terms(query)
    if terms and not terms[-1].cjk and query[-1:].strip():
        terms[-1] = replace(terms[-1], prefix=True)
    return terms


def result_json(hit: Hit, terms: list[Term]) -> dict[str, Any]:
    document = hit.document
    # The sidebar's search is scoped by the conversations' owner: every hit has one.
    assert document.conversation is not None
    text = document.body
    start, end = snippet_bounds(text, terms, SNIPPET_CHARS)
    window = text[start:end]
    # The snippet in pieces, matched ones marked: the client shows them as text, and no
    # offsets have to agree between Python's code points and JavaScript's UTF-16 units.
    parts: list[list[Any]] = [["…", False]] if start > 0 else []
    at = 0
    for a, b in highlights(window, terms):
        if a > at:
            parts.append([window[at:a], False])
        parts.append([window[a:b], True])
        at = b
    if at < len(window):
        parts.append([window[at:], False])
    if end < len(text):
        parts.append(["…", False])
    return {
        "conversation": conversation_json(document.conversation),
        "kind": document.kind,
        "message_id": document.message_id,
        "role": hit.message.role if hit.message else None,
        "label": document.label,
        "snippet": "".join(text for text, _ in parts),
        "parts": parts,
        "created_at": document.created_at.isoformat(),
    }
