"""The ``recall`` tool's search: exact passages from the whole persisted conversation.

Compaction may have summarised a detail away (numbers, names, early decisions); the
messages themselves, and the tool results of earlier runs, are still in the database and
in its full-text index (``chat.search``), so the agent can look them up by any of their
words. Each passage is a verbatim slice of the stored text around the first match, with
its date and the message it came from.

What a result costs the model is its characters, not its count: a text said several times
(a question asked again, a stock reply) is quoted once, and short passages leave room for
more of them — up to ``limit`` full passages' worth of characters. Otherwise a key word
that also names a topic discussed all along (twenty short "what about the dashboard?"
turns) would fill every slot with the same few lines and push out the one message that
stated the detail, longer because it holds the detail.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from asgiref.sync import sync_to_async

from chat.models import SearchDocument
from chat.search import Hit, search
from chat.search_text import Term, query_terms, snippet_bounds

PASSAGE_CHARS = 600
# However short the passages, at most this many times ``limit`` of them.
MAX_PASSAGES_PER_LIMIT = 3

# Words that say "look back" rather than what to look for.
STOPWORDS = frozenset(
    """a an and are as at be but by did do does for from had has have how i in is it its me
    my of on or our said say says so that the their them then there these this to was we
    were what when where which who why with you your about earlier before remember recall
    told tell mentioned again previously""".split()
)


def recall_terms(query: str) -> list[Term]:
    """The query's terms worth matching: its look-back words left out."""
    return query_terms(query, stopwords=STOPWORDS)


def recall_passages(
    *, conversation_id, query: str, limit: int = 5, before_id: int | None = None
) -> list[str]:
    """Distinct passages matching ``query``, best first, within ``limit`` full passages'
    worth of characters (at most ``MAX_PASSAGES_PER_LIMIT × limit``) (sync)."""
    terms = recall_terms(query)
    if not terms or limit <= 0:
        return []
    most = limit * MAX_PASSAGES_PER_LIMIT
    hits = search(
        query=terms,
        conversation_id=conversation_id,
        kinds=(SearchDocument.Kind.MESSAGE, SearchDocument.Kind.TOOL),
        # The run's own query ("what did I say about X?") would only find itself.
        before_message_id=before_id,
        # Repeats are dropped below: ask for enough to fill the budget anyway.
        limit=most * 4,
    )
    copies: dict[str, int] = {}
    distinct: list[Hit] = []
    for hit in hits:
        key = hit.document.terms
        if key not in copies:
            distinct.append(hit)
        copies[key] = copies.get(key, 0) + 1
    room = limit * PASSAGE_CHARS
    passages: list[str] = []
    for hit in distinct[:most]:
        passage = passage_of(hit, terms, copies=copies[hit.document.terms])
        cost = min(len(passage), PASSAGE_CHARS)  # a full passage costs one slot
        if cost > room:
            break
        passages.append(passage)
        room -= cost
    return passages


def passage_of(hit: Hit, terms: list[Term], *, copies: int = 1) -> str:
    document = hit.document
    text = document.body
    start, end = snippet_bounds(text, terms, PASSAGE_CHARS)
    snippet = text[start:end].strip()
    prefix = "…" if start > 0 else ""
    suffix = "…" if end < len(text) else ""
    when = document.created_at.strftime("%Y-%m-%d %H:%M")
    if document.kind == SearchDocument.Kind.TOOL:
        source = f"tool result of {document.label} ({when}, in answer #{document.message_id})"
    else:
        role = hit.message.role if hit.message else "message"
        source = f"{role} ({when}, message #{document.message_id})"
    if copies > 1:
        source += f" [said {copies} times]"
    return f"{source}: {prefix}{snippet}{suffix}"


def recall_search_for(
    conversation_id, *, before_id: int | None = None
) -> Callable[[str, int], Awaitable[list[str]]]:
    """The ``async recall_search(query, limit)`` the agent's ``recall`` tool calls."""

    async def recall_search(query: str, limit: int) -> list[str]:
        return await sync_to_async(recall_passages)(
            conversation_id=conversation_id, query=query, limit=limit, before_id=before_id
        )

    return recall_search
