"""The ``recall`` tool's search: exact passages from the whole persisted conversation.

Compaction may have summarised a detail away (numbers, names, early decisions); the
messages themselves, and the whole tool results of earlier runs, are still in the database
and in its full-text index (``chat.search.conversations``), so the agent can look them up
by any of their words; a passage of a tool result names the id that brings the whole result
back. Each passage is a verbatim slice of the stored text centred on its best match, named
by its date and its place in the chat; a page of a document sent with a message is quoted with
its file name and page, and so is a page of a file of the conversation's project (a
project's conversation searches itself and the project's files, never the project's other
conversations: docs/projects.md). A passage that states a value next to the key comes before those
that only name it, and a question is quoted with its reply (``chat.recall.quotes``).

What a result costs the model is its characters, not its count: a text said several times
(a question asked again, a stock reply) is quoted once, and short passages leave room for
more of them — up to ``limit`` full passages' worth of characters. Otherwise a key word
that also names a topic discussed all along (twenty short "what about the dashboard?"
turns) would fill every slot with the same few lines and push out the one message that
stated the detail, longer because it holds the detail.

After the passages come the earlier images that match (``chat.recall.images``); an id a
passage names brings its whole result back through ``chat.recall.tool_results``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from asgiref.sync import sync_to_async

from chat.models import Message, SearchDocument
from chat.recall.images import recall_images
from chat.recall.quotes import (
    COMPANION_CHARS,
    Focus,
    centred_bounds,
    focus_of,
    focuses_of,
    is_question,
    message_name,
    neighbours,
    places,
    shown_messages,
    states_value_early,
    where_text,
)
from chat.search.conversations import CANDIDATES, Hit, search
from chat.search.text import Term, query_terms
from fimone.agent.tools import RecalledImage

PASSAGE_CHARS = 600
_NO_DIGITS = str.maketrans("", "", "0123456789")
# A passage of at least this many lines, most of one shape, is machine output; its rank
# counts this much.
MACHINE_ROWS_MIN = 4
MACHINE_OUTPUT_SHARE = 0.3
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
    *,
    conversation_id,
    query: str,
    limit: int = 5,
    before_id: int | None = None,
    vision: bool = False,
    project_id: int | None = None,
) -> list[str | RecalledImage]:
    """Distinct passages matching ``query``, best first, within ``limit`` full passages'
    worth of characters (at most ``MAX_PASSAGES_PER_LIMIT × limit``), then the matching
    images (``recall_images``, with their pixels when ``vision``); ``project_id``: the
    conversation's project, whose files are searched too. Sync: ORM, files."""
    terms = recall_terms(query)
    if not terms or limit <= 0:
        return []
    passages = _text_passages(conversation_id, terms, limit, before_id, project_id)
    images = recall_images(
        conversation_id=conversation_id, terms=terms, before_id=before_id, vision=vision
    )
    return [*passages, *images]


@dataclass(frozen=True)
class _Candidate:
    hit: Hit
    focus: Focus | None  # where its quote is centred
    states_value: int  # 2: a value next to the key; 1: in the reply it got; 0: none
    question: bool  # the last passage of a message that ends with a question
    reply: Message | None  # the reply a question got (the next shown message, other side)


def _text_passages(
    conversation_id, terms: list[Term], limit: int, before_id, project_id: int | None
) -> list[str]:
    most = limit * MAX_PASSAGES_PER_LIMIT
    hits = search(
        query=terms,
        conversation_id=conversation_id,
        project_id=project_id,
        kinds=(SearchDocument.Kind.MESSAGE, SearchDocument.Kind.TOOL, SearchDocument.Kind.DOCUMENT),
        # The run's own query ("what did I say about X?") would only find itself.
        before_message_id=before_id,
        # Every candidate the engine ranked: repeats are dropped and machine output is
        # ranked down below, so the best few by the search's own order may all be one
        # paste's passages.
        limit=CANDIDATES,
    )
    said: dict[str, list[Hit]] = {}  # each text's copies, best first
    for hit in hits:
        said.setdefault(hit.document.terms, []).append(hit)
    # A question asked again with another number ("… for route 3?", "… for route 4?")
    # tells less each time: each text's rank is shared among the texts of its template, so
    # the one passage that stated a detail comes before a dozen variations of one question.
    template = {key: key.translate(_NO_DIGITS) for key in said}
    variants = Counter(template.values())
    # Machine output (a pasted log, an export: one row shape repeated) names a word on
    # every row, and a long paste has dozens of passages: such a passage counts for a
    # fraction, and each further passage of the same message for less.
    from_message: Counter[tuple[str, object]] = Counter()
    weighted = []
    for key, copies in said.items():
        document = copies[0].document
        weight: float = variants[template[key]] * len(copies)
        if _is_machine_output(document.body):
            weight /= MACHINE_OUTPUT_SHARE
        # A project file's passages have no message: each file is one text, as a message is.
        source = (
            ("file", document.attachment_id)
            if document.project_id
            else ("message", document.message_id)
        )
        from_message[source] += 1
        weight *= from_message[source]
        weighted.append((copies[0].matched, copies[0].rank / weight, copies))
    weighted.sort(key=lambda w: (w[0], w[1]), reverse=True)
    best = _valued_first(weighted, terms, most, _Replies.among(hits, before_id))
    quotes = _Quotes.of(conversation_id, best)
    room = limit * PASSAGE_CHARS
    passages: list[str] = []
    for candidate in best:
        copy_count = len(said[candidate.hit.document.terms])
        passage = quotes.passage(candidate, terms, copies=copy_count)
        if passage is None:
            continue  # quoted whole already, as another passage's question or reply
        cost = min(len(passage), PASSAGE_CHARS)  # a full passage costs one slot
        if cost > room:
            break
        passages.append(passage)
        room -= cost
    return passages


def _valued_first(
    weighted: list[tuple[int, float, list[Hit]]], terms: list[Term], most: int, replies: _Replies
) -> list[_Candidate]:
    """The best ``most`` texts: among those holding as many of the query's terms, one
    that states a value next to the key comes before a question whose reply gave one, and
    both before those that only name the key; else in ``weighted``'s order.

    Whether a text states a value is looked at in that order, and no further once
    ``most`` texts stating one are found: the rest could only come after them (a common
    word's 200 candidates are not all scanned)."""
    chosen: list[_Candidate] = []
    at = 0
    while at < len(weighted) and len(chosen) < most:
        matched = weighted[at][0]
        group: list[_Candidate] = []
        stating = 0
        focuses: dict[int, Focus | None] = {}
        while at < len(weighted) and weighted[at][0] == matched:
            if at not in focuses:
                # The texts the loop reads whatever they state (each adds at most one
                # stating text) have their values scanned together.
                reach = range(at, at + max(1, most - len(chosen) - stating))
                ahead = [i for i in reach if i < len(weighted) and weighted[i][0] == matched]
                bodies = [weighted[i][2][0].document.body for i in ahead]
                focuses.update(zip(ahead, focuses_of(bodies, terms), strict=True))
            candidate = _candidate(weighted[at][2], focuses[at], replies)
            at += 1
            group.append(candidate)
            stating += candidate.states_value == 2
            if len(chosen) + stating >= most:
                break
        group.sort(key=lambda c: c.states_value, reverse=True)  # stable: rank order kept
        chosen.extend(group)
    return chosen[:most]


def _candidate(copies: list[Hit], focus: Focus | None, replies: _Replies) -> _Candidate:
    """A text said once or more, as quoted: of its copies (the same words), the one a
    question whose reply gave a value; else the best ranked. ``focus``: the first copy's
    (``focus_of``)."""
    if focus is not None and focus.states_value:
        return _Candidate(
            copies[0], focus, 2, replies.is_question(copies[0]), replies.reply_to(copies[0])
        )
    for hit in copies:
        reply = replies.reply_to(hit)
        if reply is not None and states_value_early(reply.content):
            return _Candidate(hit, focus, 1, True, reply)
    return _Candidate(
        copies[0], focus, 0, replies.is_question(copies[0]), replies.reply_to(copies[0])
    )


@dataclass(frozen=True)
class _Replies:
    """The reply each question among the hits got: the next shown message, by the other
    side (one query for the replies' ids, one for them)."""

    questions: frozenset[int]
    replies: dict[int, Message]  # by the question's message id

    @classmethod
    def among(cls, hits: list[Hit], before_id: int | None) -> _Replies:
        questions = {
            message_id
            for hit in hits
            if (message_id := hit.document.message_id) is not None
            and hit.document.kind == SearchDocument.Kind.MESSAGE
            and _ends_its_message(hit)
            and is_question(hit.document.body)
        }
        after = neighbours(questions, before_id=before_id)
        found = shown_messages(n.after for n in after.values() if n.after is not None)
        roles = {hit.document.message_id: hit.message.role for hit in hits if hit.message}
        replies = {}
        for question, around in after.items():
            reply = found.get(around.after) if around.after is not None else None
            if reply is not None and reply.role != roles.get(question):
                replies[question] = reply
        return cls(frozenset(questions), replies)

    def is_question(self, hit: Hit) -> bool:
        return hit.document.message_id in self.questions

    def reply_to(self, hit: Hit) -> Message | None:
        message_id = hit.document.message_id
        if message_id is None or message_id not in self.questions:
            return None
        return self.replies.get(message_id)


def _ends_its_message(hit: Hit) -> bool:
    document = hit.document
    message = hit.message
    return message is not None and document.offset + len(document.body) >= len(message.content)


@dataclass
class _Quotes:
    """What the chosen passages are quoted with: their questions, replies and places."""

    questions: dict[int, Message]  # a reply's message id -> the question it answered
    places: dict[int, int]
    quoted: set[int] = field(default_factory=set)  # messages quoted whole so far

    @classmethod
    def of(cls, conversation_id, chosen: list[_Candidate]) -> _Quotes:
        opening = [
            message_id
            for c in chosen
            if (message_id := c.hit.document.message_id) is not None
            and c.hit.document.kind == SearchDocument.Kind.MESSAGE
            and c.hit.document.offset == 0
        ]
        before = neighbours(opening)
        earlier = shown_messages(n.before for n in before.values() if n.before is not None)
        questions: dict[int, Message] = {}
        for c in chosen:
            message_id, message = c.hit.document.message_id, c.hit.message
            if message_id is None or message is None:
                continue  # no message, so nothing before it to quote
            neighbour = before.get(message_id)
            question = (
                earlier.get(neighbour.before)
                if neighbour is not None and neighbour.before is not None
                else None
            )
            if (
                question is not None
                and question.role != message.role
                and is_question(question.content)
            ):
                questions[message_id] = question
        named = {
            message_id: c.hit.message.created_at
            for c in chosen
            if c.hit.message is not None and (message_id := c.hit.document.message_id) is not None
        }
        named.update((m.pk, m.created_at) for m in questions.values())
        named.update((c.reply.pk, c.reply.created_at) for c in chosen if c.reply)
        return cls(questions=questions, places=places(conversation_id, named.items()))

    def passage(self, candidate: _Candidate, terms: list[Term], *, copies: int) -> str | None:
        hit = candidate.hit
        message_id = hit.document.message_id
        # A message's first passage: the one a question before it is quoted with.
        opening = hit.document.kind == SearchDocument.Kind.MESSAGE and hit.document.offset == 0
        if opening and message_id in self.quoted:
            return None
        place = self.places.get(message_id) if message_id is not None else None
        text = passage_of(hit, terms, copies=copies, focus=candidate.focus, place=place)
        if message_id is None:
            return text  # no message: no question, reply or place to quote it with
        if opening and hit.message is not None and len(hit.message.content) <= PASSAGE_CHARS:
            self.quoted.add(message_id)  # quoted whole
        question = self.questions.get(message_id) if opening else None
        if question is not None and question.pk not in self.quoted:
            text = f"in reply to {self._companion(question, tail=True)}\n{text}"
        reply = candidate.reply if candidate.question else None
        if reply is not None and reply.pk not in self.quoted:
            text = f"{text}\n↳ reply, {self._companion(reply, tail=False)}"
        return text

    def _companion(self, message: Message, *, tail: bool) -> str:
        """A question (its end) or a reply (its start), named, at most COMPANION_CHARS."""
        content = message.content.strip()
        if len(content) <= COMPANION_CHARS:
            self.quoted.add(message.pk)
            quote = content
        elif tail:
            quote = "…" + content[-COMPANION_CHARS:]
        else:
            quote = content[:COMPANION_CHARS] + "…"
        name = message_name(message.role, message.created_at, self.places.get(message.pk))
        return f"{name}: {quote}"


_LETTERS = re.compile(r"[^\W\d_]+")
_DIGITS = re.compile(r"\d+")


def _is_machine_output(body: str) -> bool:
    """Whether most lines of ``body`` share one row shape (runs of letters and of digits
    aside): a log's or an export's passage."""
    lines = [line for line in body.split("\n") if line.strip()]
    if len(lines) < MACHINE_ROWS_MIN:
        return False
    shapes = Counter(_DIGITS.sub("0", _LETTERS.sub("a", line)) for line in lines)
    return shapes.most_common(1)[0][1] * 2 >= len(lines)


def passage_of(
    hit: Hit,
    terms: list[Term],
    *,
    copies: int = 1,
    focus: Focus | None = None,
    place: int | None = None,
) -> str:
    """``hit`` quoted: at most ``PASSAGE_CHARS`` of it centred on ``focus`` (its best
    match, ``focus_of``), named by its kind, its date and ``place`` in the chat."""
    document = hit.document
    text = document.body
    if focus is None:
        focus = focus_of(text, terms)
    start, end = centred_bounds(text, focus, PASSAGE_CHARS)
    snippet = text[start:end].strip()
    # The passage's place in its whole text (a long message is indexed as passages).
    whole = len(text)
    if document.kind == SearchDocument.Kind.MESSAGE and hit.message is not None:
        whole = len(hit.message.content) - document.offset
    prefix = "…" if start > 0 or document.offset > 0 else ""
    suffix = "…" if end < whole else ""
    where = where_text(document.created_at, place)
    if document.kind == SearchDocument.Kind.TOOL and document.tool_result_id is not None:
        # A passage of a stored whole result: its id brings the whole back.
        source = (
            f"tool result of {document.label} (in your answer of {where}; "
            f'whole result: recall id "r{document.tool_result_id}")'
        )
    elif document.kind == SearchDocument.Kind.TOOL:
        source = f"tool result of {document.label} (in your answer of {where})"
    elif document.kind == SearchDocument.Kind.DOCUMENT and document.project_id is not None:
        # A file of the conversation's project: not sent with a message, no date of its own.
        source = f"project file {document.label}"
    elif document.kind == SearchDocument.Kind.DOCUMENT:
        # The label names the file and the page: "report.pdf, page 7".
        source = f"document {document.label} (sent with the user's message of {where})"
    else:
        role = hit.message.role if hit.message else Message.Role.USER
        source = message_name(role, document.created_at, place)
    if copies > 1:
        source += f" [said {copies} times]"
    return f"{source}: {prefix}{snippet}{suffix}"


def recall_search_for(
    conversation_id,
    *,
    before_id: int | None = None,
    vision: bool = False,
    project_id: int | None = None,
) -> Callable[[str, int], Awaitable[list[str | RecalledImage]]]:
    """The ``async recall_search(query, limit)`` the agent's ``recall`` tool calls;
    ``vision``: found images come with their pixels; ``project_id``: the conversation's
    project (read once with the run), whose files it searches too."""

    async def recall_search(query: str, limit: int) -> list[str | RecalledImage]:
        return await sync_to_async(recall_passages)(
            conversation_id=conversation_id,
            query=query,
            limit=limit,
            before_id=before_id,
            vision=vision,
            project_id=project_id,
        )

    return recall_search
