"""A better description for an image that now travels as text, written once by the fast
model when its configuration can see images.

A run's history may show older images as their stored description (``chat.history``);
where that is still the offline one, the run's async preparation asks the fast model —
at most ``MAX_PER_RUN`` images, concurrently, each call bounded — before the engine
starts, stores the answer on the attachment (``description_source`` ``model``) and reloads
the history. A call that fails marks the image ``model_failed``: the offline description
stays, and the model is never asked about that image again. The calls' usage is counted
with the run's compaction usage (both are context upkeep).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

from asgiref.sync import sync_to_async

from chat.history import data_url
from chat.models import Attachment
from contextmgmt.core.llm import LLM
from contextmgmt.core.messages import ChatMessage

logger = logging.getLogger(__name__)

MAX_PER_RUN = 4
DESCRIPTION_CHARS = 600
DESCRIBE_PROMPT = (
    "Describe this image for someone who cannot see it, in at most three sentences: what "
    "it shows, any text in it verbatim, numbers, names and colours that matter. No preamble."
)


def can_describe(llm: Any) -> bool:
    """Only a model configured as seeing images is asked (the offline model is not)."""
    return getattr(llm, "supports_vision", False) is True


def images_as_text(messages: Iterable[ChatMessage]) -> list[str]:
    """Ids of the images the loaded history shows as text, oldest first, no repeats."""
    ids: dict[str, None] = {}
    for message in messages:
        for file_id in message.metadata.get("images_as_text") or ():
            ids[file_id] = None
    return list(ids)


def pending(file_ids: list[str], *, limit: int = MAX_PER_RUN) -> list[tuple[Any, str]]:
    """(pk, data URL) of up to ``limit`` of these images that only have the offline
    description, newest first (sync: ORM, file reads)."""
    rows = (
        Attachment.objects.filter(
            pk__in=file_ids,
            description_source__in=(
                Attachment.DescriptionSource.NONE,
                Attachment.DescriptionSource.OFFLINE,
            ),
        )
        .order_by("-created_at")
        .only("id", "file", "mime_type")
    )
    out = []
    for attachment in rows[:limit]:
        url = data_url(attachment)
        if url is not None:
            out.append((attachment.pk, url))
    return out


def store(pk: Any, text: str | None) -> None:
    """The model's description, or (None) the mark that it failed; never overwrites a
    description a model already wrote."""
    rows = Attachment.objects.filter(pk=pk).exclude(
        description_source=Attachment.DescriptionSource.MODEL
    )
    if text:
        rows.update(description=text, description_source=Attachment.DescriptionSource.MODEL)
    else:
        rows.update(description_source=Attachment.DescriptionSource.MODEL_FAILED)


async def describe_images(llm: LLM, file_ids: list[str], *, time_limit: float | None) -> int:
    """Describe the images among ``file_ids`` that need it; returns how many were stored."""
    found = await sync_to_async(pending)(file_ids)
    if not found:
        return 0
    results = await asyncio.gather(*(_describe(llm, url, time_limit) for _pk, url in found))
    for (pk, _url), text in zip(found, results, strict=True):
        await sync_to_async(store)(pk, text)
    return sum(1 for text in results if text)


async def _describe(llm: LLM, url: str, time_limit: float | None) -> str | None:
    message = ChatMessage(
        role="user",
        content=[
            {"type": "text", "text": DESCRIBE_PROMPT},
            {"type": "image_url", "image_url": {"url": url}},
        ],
    )
    try:
        async with asyncio.timeout(time_limit):
            result = await llm.chat([message])
    except Exception as exc:  # the offline description stands in
        logger.warning("image description failed: %s: %s", type(exc).__name__, exc)
        return None
    text = " ".join(result.message.text().split())
    return text[:DESCRIPTION_CHARS] or None
