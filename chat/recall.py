"""The ``recall`` tool's search: exact passages from the whole persisted conversation.

Compaction may have summarised a detail away (numbers, names, early decisions); the
messages themselves, and the whole tool results of earlier runs, are still in the database
and in its full-text index (``chat.search``), so the agent can look them up by any of their
words; a passage of a tool result names the id that brings the whole result back. Each
passage is a verbatim slice of the stored text around the first match, with its date and
the message it came from; a page of a document sent with a message is quoted with its
file name and page.

What a result costs the model is its characters, not its count: a text said several times
(a question asked again, a stock reply) is quoted once, and short passages leave room for
more of them — up to ``limit`` full passages' worth of characters. Otherwise a key word
that also names a topic discussed all along (twenty short "what about the dashboard?"
turns) would fill every slot with the same few lines and push out the one message that
stated the detail, longer because it holds the detail.

Images are found too: an earlier image (sent before the run's query) whose file name or
stored description holds a query term, or any when the query asks for an image, picture,
photo or screenshot — at most ``IMAGE_LIMIT``, best match first, then newest; images the
model already sees as pixels (the newest pixel turns) are not sent again. Each is named
in the result as ``[image: name, WxH — description]``; for a model that can see images its
pixels go with the next call (``fimone.agent.tools.RecalledImage``), so an old screenshot
that only travels as text can be looked at again.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable

from asgiref.sync import sync_to_async
from django.db.models.fields.json import KT

from chat.history import data_url, image_note, image_pixel_turns
from chat.history_rows import json_or_none
from chat.models import Attachment, Message, SearchDocument, ToolResult
from chat.search import CANDIDATES, Hit, search
from chat.search_text import Term, index_text, query_terms, snippet_bounds
from fimone.agent.tools import KeptResult, RecalledImage

PASSAGE_CHARS = 600
_NO_DIGITS = str.maketrans("", "", "0123456789")
# A passage of at least this many lines, most of one shape, is machine output; its rank
# counts this much.
MACHINE_ROWS_MIN = 4
MACHINE_OUTPUT_SHARE = 0.3
# However short the passages, at most this many times ``limit`` of them.
MAX_PASSAGES_PER_LIMIT = 3
IMAGE_LIMIT = 2
IMAGES_SCANNED = 200  # the newest images looked at; older ones are not recalled
# Words that ask for images in general: every earlier image matches them.
IMAGE_WORDS = frozenset(
    "image images picture pictures photo photos screenshot screenshots bild bilder foto "
    "fotos capture imagen imagenes 图片 图像 截图 照片".split()
)

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
) -> list[str | RecalledImage]:
    """Distinct passages matching ``query``, best first, within ``limit`` full passages'
    worth of characters (at most ``MAX_PASSAGES_PER_LIMIT × limit``), then up to
    ``IMAGE_LIMIT`` matching images (with their pixels when ``vision``). Sync: ORM, files."""
    terms = recall_terms(query)
    if not terms or limit <= 0:
        return []
    passages = _text_passages(conversation_id, terms, limit, before_id)
    images = recall_images(
        conversation_id=conversation_id, terms=terms, before_id=before_id, vision=vision
    )
    return [*passages, *images]


def recall_images(
    *, conversation_id, terms: list[Term], before_id: int | None, vision: bool
) -> list[RecalledImage]:
    """Earlier images of the conversation matching ``terms`` (see the module's docstring)."""
    rows = Attachment.objects.filter(
        conversation_id=conversation_id, message__isnull=False
    ).select_related("message")
    if before_id is not None:
        rows = rows.filter(message_id__lt=before_id)
    # A question edited and sent again keeps its images, which stay linked to the first
    # copy: superseded messages' images are still the user's images here.
    rows = rows.order_by("-created_at")
    if vision and before_id is not None:
        # The model already sees these as pixels (its query, the newest pixel turns).
        rows = rows.exclude(pk__in=_pixel_turn_images(conversation_id, before_id))
    general = any(len(t.words) == 1 and t.words[0] in IMAGE_WORDS for t in terms)
    scored = []
    for attachment in rows[:IMAGES_SCANNED]:
        note = image_note(attachment)  # describes it first if it never was
        indexed = index_text(f"{attachment.original_name} {note}")
        score = sum(1 for t in terms if t.found_in(indexed))
        if score or general:
            scored.append((score, attachment.message.created_at, attachment, note))
    scored.sort(key=lambda s: (s[0], s[1]), reverse=True)
    found = []
    for _score, created, attachment, note in scored[:IMAGE_LIMIT]:
        when = created.strftime("%Y-%m-%d %H:%M")
        label = f"image sent by the user ({when}, message #{attachment.message_id}): {note}"
        url = data_url(attachment) if vision else None
        part = {"type": "image_url", "image_url": {"url": url}} if url else None
        found.append(RecalledImage(label=label, part=part))
    return found


def _pixel_turn_images(conversation_id, before_id: int) -> list[str]:
    """Ids of the images sent as pixels anyway: the run's query's (``before_id``) and the
    newest pixel turns' before it."""
    turns = image_pixel_turns() + 1
    newest = (
        Message.objects.filter(conversation_id=conversation_id, role="user", pk__lte=before_id)
        .filter(superseded_by__isnull=True)
        .order_by("-created_at", "-id")
        # The key as an annotation, not "metadata__images" in values_list (see
        # docs/architecture.md: that name leaves a reference cycle behind).
        .annotate(images_json=KT("metadata__images"))
        .values_list("images_json", flat=True)
    )
    return [
        str(ref["file_id"])
        for refs in map(json_or_none, newest[:turns])
        if isinstance(refs, list)
        for ref in refs
        if isinstance(ref, dict) and _is_uuid(ref.get("file_id"))
    ]


def _is_uuid(value) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


def _text_passages(conversation_id, terms: list[Term], limit: int, before_id) -> list[str]:
    most = limit * MAX_PASSAGES_PER_LIMIT
    hits = search(
        query=terms,
        conversation_id=conversation_id,
        kinds=(SearchDocument.Kind.MESSAGE, SearchDocument.Kind.TOOL, SearchDocument.Kind.DOCUMENT),
        # The run's own query ("what did I say about X?") would only find itself.
        before_message_id=before_id,
        # Every candidate the engine ranked: repeats are dropped and machine output is
        # ranked down below, so the best few by the search's own order may all be one
        # paste's passages.
        limit=CANDIDATES,
    )
    copies: dict[str, int] = {}
    distinct: list[Hit] = []
    for hit in hits:
        key = hit.document.terms
        if key not in copies:
            distinct.append(hit)
        copies[key] = copies.get(key, 0) + 1
    # A question asked again with another number ("… for route 3?", "… for route 4?")
    # tells less each time: each text's rank is shared among the texts of its template, so
    # the one passage that stated a detail comes before a dozen variations of one question.
    template = {hit.document.terms: hit.document.terms.translate(_NO_DIGITS) for hit in hits}
    variants = Counter(template[key] for key in copies)
    # Machine output (a pasted log, an export: one row shape repeated) names a word on
    # every row, and a long paste has dozens of passages: such a passage counts for a
    # fraction, and each further passage of the same message for less.
    from_message: Counter[int | None] = Counter()
    weighted = []
    for hit in distinct:
        weight = variants[template[hit.document.terms]] * copies[hit.document.terms]
        if _is_machine_output(hit.document.body):
            weight /= MACHINE_OUTPUT_SHARE
        from_message[hit.document.message_id] += 1
        weight *= from_message[hit.document.message_id]
        weighted.append((hit.matched, hit.rank / weight, hit))
    weighted.sort(key=lambda w: (w[0], w[1]), reverse=True)
    distinct = [hit for _, _, hit in weighted]
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


def passage_of(hit: Hit, terms: list[Term], *, copies: int = 1) -> str:
    document = hit.document
    text = document.body
    start, end = snippet_bounds(text, terms, PASSAGE_CHARS)
    snippet = text[start:end].strip()
    # The passage's place in its whole text (a long message is indexed as passages).
    whole = len(text)
    if document.kind == SearchDocument.Kind.MESSAGE and hit.message is not None:
        whole = len(hit.message.content) - document.offset
    prefix = "…" if start > 0 or document.offset > 0 else ""
    suffix = "…" if end < whole else ""
    when = document.created_at.strftime("%Y-%m-%d %H:%M")
    if document.kind == SearchDocument.Kind.TOOL and document.tool_result_id is not None:
        # A passage of a stored whole result: its id brings the whole back.
        source = (
            f"tool result of {document.label} ({when}, in answer #{document.message_id}; "
            f'whole result: recall id "r{document.tool_result_id}")'
        )
    elif document.kind == SearchDocument.Kind.TOOL:
        source = f"tool result of {document.label} ({when}, in answer #{document.message_id})"
    elif document.kind == SearchDocument.Kind.DOCUMENT:
        # The label names the file and the page: "report.pdf, page 7".
        source = f"document {document.label} (sent {when}, message #{document.message_id})"
    else:
        role = hit.message.role if hit.message else "message"
        source = f"{role} ({when}, message #{document.message_id})"
    if copies > 1:
        source += f" [said {copies} times]"
    return f"{source}: {prefix}{snippet}{suffix}"


def recall_search_for(
    conversation_id, *, before_id: int | None = None, vision: bool = False
) -> Callable[[str, int], Awaitable[list[str | RecalledImage]]]:
    """The ``async recall_search(query, limit)`` the agent's ``recall`` tool calls;
    ``vision``: found images come with their pixels."""

    async def recall_search(query: str, limit: int) -> list[str | RecalledImage]:
        return await sync_to_async(recall_passages)(
            conversation_id=conversation_id,
            query=query,
            limit=limit,
            before_id=before_id,
            vision=vision,
        )

    return recall_search


def stored_tool_result(*, conversation_id, result_id: str) -> KeptResult | None:
    """An earlier run's whole tool result by the id its record's stub names (``r<pk>``), or
    by its call id (the newest with it); only of this conversation. Sync: ORM."""
    rows = ToolResult.objects.filter(conversation_id=conversation_id)
    if result_id.startswith("r") and result_id[1:].isdigit():
        row = rows.filter(pk=int(result_id[1:])).first()
    else:
        row = rows.filter(call_id=result_id).order_by("-id").first()
    if row is None:
        return None
    return KeptResult(row.result_id, row.name, row.arguments, row.content)


def tool_result_for(conversation_id) -> Callable[[str], Awaitable[KeptResult | None]]:
    """The ``async fetch_result(id)`` the ``recall`` tool brings a masked result back with."""

    async def fetch_result(result_id: str) -> KeptResult | None:
        return await sync_to_async(stored_tool_result)(
            conversation_id=conversation_id, result_id=result_id
        )

    return fetch_result
