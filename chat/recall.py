"""The ``recall`` tool's search: exact passages from the whole persisted conversation.

Compaction may have summarised a detail away (numbers, names, early decisions); the
messages themselves are still in the database, so the agent can look them up. The search
is a plain ORM ``icontains`` over the conversation's own messages (a conversation is small;
no search engine needed), ranked by how many query terms a message contains, then by
recency. Passages are verbatim slices of the stored text.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from asgiref.sync import sync_to_async
from django.db.models import Q

from chat.models import Message

PASSAGE_CHARS = 600
MAX_CANDIDATES = 300
MAX_TERMS = 12

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")
# Words that say "look back" rather than what to look for.
_STOPWORDS = frozenset(
    """a an and are as at be but by did do does for from had has have how i in is it its me
    my of on or our said say says so that the their them then there these this to was we
    were what when where which who why with you your about earlier before remember recall
    told tell mentioned again previously""".split()
)


def search_terms(query: str) -> list[str]:
    """Lower-cased words worth matching; CJK runs also as overlapping pairs (no spaces)."""
    terms: list[str] = []
    for word in _WORD.findall(query.lower()):
        for cjk in _CJK.findall(word):
            if len(cjk) <= 2:
                terms.append(cjk)
            else:
                terms.extend(cjk[i : i + 2] for i in range(len(cjk) - 1))
        rest = _CJK.sub(" ", word).split()
        terms.extend(w for w in rest if (len(w) > 1 or w.isdigit()) and w not in _STOPWORDS)
    unique = list(dict.fromkeys(terms))
    return unique[:MAX_TERMS]


def recall_passages(
    *, conversation_id, query: str, limit: int = 5, before_id: int | None = None
) -> list[str]:
    """Up to ``limit`` passages matching ``query``, best first (sync: ORM)."""
    query = query.strip()
    if not query or limit <= 0:
        return []
    terms = search_terms(query) or [query.lower()]
    condition = Q()
    for term in terms:
        if term.isascii():
            condition |= Q(content__icontains=term)
        else:
            # SQLite's LIKE folds ASCII case only; its REGEXP (Python's re) folds Unicode.
            condition |= Q(content__iregex=re.escape(term))
    rows = Message.objects.filter(
        condition,
        conversation_id=conversation_id,
        role__in=[Message.Role.USER, Message.Role.ASSISTANT],
    )
    if before_id is not None:
        # The run's own query ("what did I say about X?") would only find itself.
        rows = rows.filter(id__lt=before_id)
    candidates = list(
        rows.order_by("-id").only("id", "role", "content", "created_at")[:MAX_CANDIDATES]
    )
    phrase = query.lower()
    scored = []
    for message in candidates:
        text = message.content.lower()
        hits = sum(1 for term in terms if term in text)
        if hits == 0:
            continue  # the database and Python may fold case differently: Python decides
        score = hits + (len(terms) if phrase in text else 0)
        scored.append((score, message.id, message))
    scored.sort(key=lambda item: (item[0], item[1]), reverse=True)
    return [_passage(message, terms) for _, _, message in scored[:limit]]


def _passage(message: Message, terms: list[str]) -> str:
    text = message.content
    lowered = text.lower()
    positions = [p for p in (lowered.find(term) for term in terms) if p >= 0]
    start = max(0, min(positions) - PASSAGE_CHARS // 3) if positions else 0
    end = min(len(text), start + PASSAGE_CHARS)
    start = _word_start(text, start)
    snippet = text[start:end].strip()
    prefix = "…" if start > 0 else ""
    suffix = "…" if end < len(text) else ""
    when = message.created_at.strftime("%Y-%m-%d %H:%M")
    return f"{message.role} ({when}): {prefix}{snippet}{suffix}"


def _word_start(text: str, index: int) -> int:
    """Move ``index`` forward to the start of a word, so a passage starts cleanly."""
    if index == 0:
        return 0
    space = text.find(" ", index, index + 40)
    return space + 1 if space >= 0 else index


def recall_search_for(
    conversation_id, *, before_id: int | None = None
) -> Callable[[str, int], Awaitable[list[str]]]:
    """The ``async recall_search(query, limit)`` the agent's ``recall`` tool calls."""

    async def recall_search(query: str, limit: int) -> list[str]:
        return await sync_to_async(recall_passages)(
            conversation_id=conversation_id, query=query, limit=limit, before_id=before_id
        )

    return recall_search
