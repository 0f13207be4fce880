"""What ``recall`` quotes of a hit and how it names it (``chat.recall.lookup`` ranks the hits).

- **The value next to the key**: where a passage names a query term, the values written
  within ``NEAR_CHARS`` of it (numbers, dates, identifiers, amounts, e-mail addresses, phone
  numbers: contextmgmt's fact scanner, ``facts_in``) make it a passage that *states* the
  detail, ranked above passages that only mention the key. Only the windows around the
  matches are scanned, so a long passage costs what its matches do.
- **The quote's centre**: the match with a value beside it (else the one with most query
  terms around it, else the first), with the value; the quote is the ``width`` characters
  around that span, so a phone number stated late in a long message is in the quote even
  when the key was named in passing at its start.
- **A question and its reply**: a message that ends with a question is quoted with the
  reply that followed it (the next shown message, by the other side), and a reply with the
  question it answered: "Your EORI number?" holds the key, the reply "DE8841…" the value.
- **Names**: a message is named by its date and its place among the conversation's shown
  messages — "the user's message (3 March 2026 14:05 UTC, 14th in this chat)" — the places
  of all the quoted messages read from the conversation's (created_at, id) index alone
  (the ids up to the newest of them, in order: one query, whatever their number), less
  the hidden messages before each (from a partial index of those).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import OuterRef, Subquery

from chat.models import Message
from chat.search.text import Term, term_pattern
from contextmgmt.core.factscan import facts_in, facts_in_texts

# A value counts as stated with a key when it starts or ends this close to it.
NEAR_CHARS = 60
WIDEN_CHARS = 40
# A reply states the value asked for when one starts this early in it.
REPLY_VALUE_CHARS = 80
# How much of a question or a reply is quoted with its partner.
COMPANION_CHARS = 300
# A message is a question when it ends with one of these (closing quotes aside).
_QUESTION_MARKS = ("?", "？", "¿")
_CLOSING = " \t\r\n\"'”’»」』)）"

MONTHS = (
    "January February March April May June July August September October November December"
).split()


@dataclass(frozen=True)
class Focus:
    """Where a passage's quote is centred, and whether a value stands next to its key."""

    start: int
    end: int
    states_value: bool


def focus_of(text: str, terms: list[Term]) -> Focus | None:
    """The best match of ``terms`` in ``text`` (see the module's docstring), or None."""
    return focuses_of([text], terms)[0]


def focuses_of(texts: list[str], terms: list[Term]) -> list[Focus | None]:
    """:func:`focus_of` of each of ``texts``, the windows around their matches scanned
    for values together: each of the scanner's patterns makes one pass over all of them,
    not one pass per text (a pass costs about the same for 200 characters as for 20,000)."""
    matched = [
        sorted({m.span() for t in terms for m in term_pattern(t).finditer(text)}) for text in texts
    ]
    windows = [_windows(text, matches) for text, matches in zip(texts, matched, strict=True)]
    pieces = [
        text[low:high] for text, spans in zip(texts, windows, strict=True) for low, high in spans
    ]
    scanned = iter(facts_in_texts(pieces))
    out: list[Focus | None] = []
    for text, matches, spans in zip(texts, matched, windows, strict=True):
        found = [(low + f[0], low + f[1]) for low, _ in spans for f in next(scanned)]
        out.append(_best_focus(text, terms, matches, _beside(found, matches)) if matches else None)
    return out


def _best_focus(
    text: str, terms: list[Term], matches: list[tuple[int, int]], values: list[tuple[int, int]]
) -> Focus | None:
    best: tuple[tuple[int, int, int], Focus] | None = None
    for start, end in matches:
        value = _nearest(values, start, end)
        around = sum(
            1
            for term in terms
            if term_pattern(term).search(text, max(0, start - NEAR_CHARS), end + NEAR_CHARS)
        )
        # Better: a value beside it, more terms around it, earlier.
        score = (value is not None, around, -start)
        if best is None or score > best[0]:
            span = (min(start, value[0]), max(end, value[1])) if value else (start, end)
            best = (score, Focus(span[0], span[1], value is not None))
    return best[1] if best else None


def _windows(text: str, matches: list[tuple[int, int]]) -> list[list[int]]:
    """The windows of ``text`` within ``NEAR_CHARS`` of ``matches`` (in order), widened
    (:func:`_widened`) and merged where they touch."""
    windows: list[list[int]] = []
    for start, end in matches:
        low, high = _widened(text, start - NEAR_CHARS, end + NEAR_CHARS)
        if windows and low <= windows[-1][1]:
            windows[-1][1] = max(windows[-1][1], high)
        else:
            windows.append([low, high])
    return windows


def _beside(found: list[tuple[int, int]], matches: list[tuple[int, int]]) -> list[tuple[int, int]]:
    # A value that holds a match is the key's own words ("Zur Probe" read as a name; an
    # id asked for by itself), not a value stated beside it.
    return [v for v in found if not any(v[0] < end and start < v[1] for start, end in matches)]


def _widened(text: str, low: int, high: int) -> tuple[int, int]:
    """``[low, high)`` moved out to white space, or by ``WIDEN_CHARS`` where there is none
    so near (CJK text): a value cut at a window's edge is then farther than ``NEAR_CHARS``
    from the match, and does not count."""
    low, high = max(0, low), min(len(text), high)
    if low > 0:
        reach = max(0, low - WIDEN_CHARS)
        space = max(text.rfind(" ", reach, low), text.rfind("\n", reach, low))
        low = space + 1 if space >= 0 else reach
    if high < len(text):
        reach = min(len(text), high + WIDEN_CHARS)
        spaces = [i for i in (text.find(" ", high, reach), text.find("\n", high, reach)) if i >= 0]
        high = min(spaces) if spaces else reach
    return low, high


def _nearest(values: list[tuple[int, int]], start: int, end: int) -> tuple[int, int] | None:
    near = [v for v in values if v[0] < end + NEAR_CHARS and v[1] > start - NEAR_CHARS]
    return min(near, key=lambda v: abs(v[0] - start), default=None)


def centred_bounds(text: str, focus: Focus | None, width: int) -> tuple[int, int]:
    """A window of ``width`` characters of ``text`` centred on ``focus`` (the start when
    None), its ends moved in to word boundaries where a space is near."""
    if len(text) <= width:
        return 0, len(text)
    centre = (focus.start + focus.end) // 2 if focus else 0
    start = max(0, min(centre - width // 2, len(text) - width))
    end = start + width
    if start > 0:
        space = text.find(" ", start, start + 40)
        start = space + 1 if space >= 0 else start
    if end < len(text):
        space = text.rfind(" ", end - 40, end)
        end = space if space > start else end
    return start, end


def is_question(text: str) -> bool:
    return text.rstrip(_CLOSING).endswith(_QUESTION_MARKS)


def states_value_early(text: str) -> bool:
    """Whether a reply gives a value at its start ("DE8841…", "+49 30 …, ask for Ana")."""
    head = text[: REPLY_VALUE_CHARS + 40]
    return any(f[0] < REPLY_VALUE_CHARS for f in facts_in(head))


# --- the conversation around a message ----------------------------------------------------


@dataclass(frozen=True)
class Neighbours:
    before: int | None  # the shown message just before, by id
    after: int | None  # the shown message just after (before ``before_id``), by id


def neighbours(ids: Iterable[int], *, before_id: int | None = None) -> dict[int, Neighbours]:
    """The shown messages just before and after each of ``ids`` in creation order (one
    query; each neighbour a step in the conversation's (created_at, id) index)."""
    ids = list(ids)
    if not ids:
        return {}
    shown = Message.objects.filter(
        conversation_id=OuterRef("conversation_id"), superseded_by__isnull=True
    )
    after = shown.filter(created_at__gte=OuterRef("created_at")).exclude(
        created_at=OuterRef("created_at"), id__lte=OuterRef("id")
    )
    if before_id is not None:
        after = after.filter(id__lt=before_id)
    before = shown.filter(created_at__lte=OuterRef("created_at")).exclude(
        created_at=OuterRef("created_at"), id__gte=OuterRef("id")
    )
    rows = (
        Message.objects.filter(pk__in=ids)
        .order_by()
        .annotate(
            after_id=Subquery(after.order_by("created_at", "id").values("id")[:1]),
            before_id=Subquery(before.order_by("-created_at", "-id").values("id")[:1]),
        )
        .values_list("id", "before_id", "after_id")
    )
    return {pk: Neighbours(before=b, after=a) for pk, b, a in rows}


def shown_messages(ids: Iterable[int]) -> dict[int, Message]:
    """Messages by id, with what a quote needs of them."""
    return Message.objects.only("id", "role", "content", "created_at").in_bulk(list(set(ids)))


def places(conversation_id, messages: Iterable[tuple[int, datetime]]) -> dict[int, int]:
    """Each message's place in the conversation (1 = first): one more than the shown
    messages before it (see the module's docstring). Two queries whatever the number of
    messages: the ids up to the newest, in order, read from the index alone, and the
    hidden ones among them."""
    targets = dict(messages)
    if not targets:
        return {}
    upto = Message.objects.filter(
        conversation_id=conversation_id, created_at__lte=max(targets.values())
    )
    order = upto.order_by("created_at", "id").values_list("id", flat=True)
    position = {pk: at for at, pk in enumerate(order.iterator(chunk_size=5_000))}
    hidden = sorted(
        position[pk]
        for pk in upto.filter(superseded_by__isnull=False).values_list("id", flat=True)
        if pk in position
    )
    return {
        pk: position[pk] + 1 - bisect_left(hidden, position[pk]) for pk in targets if pk in position
    }


# --- names --------------------------------------------------------------------------------


def ordinal(n: int) -> str:
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th') }"


def when_text(when: datetime) -> str:
    """``3 March 2026 14:05 UTC`` (English month names whatever the server's locale)."""
    return f"{when.day} {MONTHS[when.month - 1]} {when.year} {when:%H:%M} UTC"


def where_text(when: datetime, place: int | None) -> str:
    """``3 March 2026 14:05 UTC, 14th in this chat``."""
    if place is None:
        return when_text(when)
    return f"{when_text(when)}, {ordinal(place)} in this chat"


def message_name(role: str, when: datetime, place: int | None) -> str:
    """``the user's message (…)`` or ``your answer (…)``: the recall result is read by the
    model, whose own messages are the assistant's."""
    who = "your answer" if role == Message.Role.ASSISTANT else "the user's message"
    return f"{who} ({where_text(when, place)})"
