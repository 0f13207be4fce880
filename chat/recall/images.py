"""The ``recall`` tool's images: earlier images of the conversation that match the query.

An earlier image (sent before the run's query) matches when its file name or stored
description holds a query term, and any does when the query asks for an image, picture,
photo or screenshot — at most ``IMAGE_LIMIT``, best match first, then newest; images the
model already sees as pixels (the newest pixel turns) are not sent again. Each is named
in the result as ``[image: name, WxH — description]``; for a model that can see images its
pixels go with the next call (``fimone.agent.tools.RecalledImage``), so an old screenshot
that only travels as text can be looked at again.
"""

from __future__ import annotations

import uuid

from django.db.models.fields.json import KT

from chat.history import data_url, image_note, image_pixel_turns
from chat.history_rows import json_or_none
from chat.models import Attachment, Message
from chat.recall.quotes import places, where_text
from chat.search.text import Term, index_text
from fimone.agent.tools import RecalledImage

IMAGE_LIMIT = 2
IMAGES_SCANNED = 200  # the newest images looked at; older ones are not recalled
# Words that ask for images in general: every earlier image matches them.
IMAGE_WORDS = frozenset(
    "image images picture pictures photo photos screenshot screenshots bild bilder foto "
    "fotos capture imagen imagenes 图片 图像 截图 照片".split()
)


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
        sent_with = attachment.message
        if sent_with is None:  # not when the query asks for a message; the field allows it
            continue
        if score or general:
            scored.append((score, sent_with.created_at, sent_with.pk, attachment, note))
    scored.sort(key=lambda s: (s[0], s[1]), reverse=True)
    best = scored[:IMAGE_LIMIT]
    place = places(conversation_id, ((sent, created) for _, created, sent, _, _ in best))
    found = []
    for _score, created, sent, attachment, note in best:
        where = where_text(created, place.get(sent))
        label = f"image sent by the user ({where}): {note}"
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
