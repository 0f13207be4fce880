"""A better description for an image that now travels as text, written once by the fast
model when its configuration can see images.

A run's history may show older images as their stored description (``chat.history``);
where that is still the offline one, the fast model is asked — at most ``MAX_PER_RUN``
images, concurrently, each call bounded — and its answer is stored on the attachment
(``description_source`` ``model``). Normally that happens right after the answer that
pushed an image out of the pixel turns (``chat.runs.ahead``, in the background); a run's
async preparation asks for whatever is still missing before the engine starts and reloads
the history. A call that fails there marks the image ``model_failed``: the offline
description stays, and the model is never asked about that image again (a failure in the
background marks nothing: the next run asks once more).

Described once: only images that have no model description yet are sent, a model's
description is never overwritten (a conditional update), and within a process an image
being described is not sent again: a second caller waits for that call (bounded by its
own time limit) instead. The calls' usage is counted with the run's compaction usage
(both are context upkeep).
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


# Images this process is describing right now, by attachment id: resolved (True when a
# description was stored) once the call and its write are over, so another caller waits
# for that call instead of asking the model about the same image again.
_in_flight: dict[str, asyncio.Future] = {}


def pending(
    file_ids: list[str], *, limit: int = MAX_PER_RUN, exclude: Iterable[str] = ()
) -> list[tuple[str, str]]:
    """(id, data URL) of up to ``limit`` of these images that only have the offline
    description, newest first, leaving out ``exclude`` (sync: ORM, file reads)."""
    rows = (
        Attachment.objects.filter(
            pk__in=file_ids,
            description_source__in=(
                Attachment.DescriptionSource.NONE,
                Attachment.DescriptionSource.OFFLINE,
            ),
        )
        .exclude(pk__in=list(exclude))
        .order_by("-created_at")
        .only("id", "file", "mime_type")
    )
    out = []
    for attachment in rows[:limit]:
        url = data_url(attachment)
        if url is not None:
            out.append((str(attachment.pk), url))
    return out


def store(pk: Any, text: str | None) -> None:
    """The model's description, or (None) the mark that it failed; never overwrites a
    description a model already wrote (one conditional UPDATE: of two writers of the same
    image, the first description wins and a failure never replaces it)."""
    rows = Attachment.objects.filter(pk=pk).exclude(
        description_source=Attachment.DescriptionSource.MODEL
    )
    if text:
        rows.update(description=text, description_source=Attachment.DescriptionSource.MODEL)
    else:
        rows.update(description_source=Attachment.DescriptionSource.MODEL_FAILED)


async def describe_images(
    llm: LLM, file_ids: list[str], *, time_limit: float | None, mark_failures: bool = True
) -> int:
    """Describe the images among ``file_ids`` that need it; returns how many got a
    description (here, or by a call of this process already under way, which is waited
    for rather than made again). ``mark_failures`` False: a failed call leaves its image as
    it was, for a later caller to try once more."""
    loop = asyncio.get_running_loop()
    ids = [str(i) for i in file_ids]
    found = await sync_to_async(pending)(ids, exclude=_busy(ids, loop))
    # Claimed with no await after the check: of two callers of this process, one asks.
    busy = _busy(ids, loop)
    mine = [(pk, url) for pk, url in found if pk not in busy]
    claims = {pk: loop.create_future() for pk, _url in mine}
    _in_flight.update(claims)
    try:
        own, waited = await asyncio.gather(
            _describe_all(llm, mine, claims, time_limit, mark_failures),
            _wait_for(busy.values(), time_limit),
        )
    finally:
        for pk, claim in claims.items():
            if not claim.done():
                claim.set_result(False)  # stopped half way: a waiter goes on without it
            if _in_flight.get(pk) is claim:
                del _in_flight[pk]
    return own + waited


def _busy(ids: list[str], loop: asyncio.AbstractEventLoop) -> dict[str, asyncio.Future]:
    """Which of these images a call of this process (this event loop) is describing."""
    return {
        pk: claim
        for pk in ids
        if (claim := _in_flight.get(pk)) is not None
        and not claim.done()
        and claim.get_loop() is loop
    }


async def _describe_all(llm, found, claims, time_limit, mark_failures) -> int:
    if not found:
        return 0
    results = await asyncio.gather(*(_describe(llm, url, time_limit) for _pk, url in found))
    for (pk, _url), text in zip(found, results, strict=True):
        if text or mark_failures:
            await sync_to_async(store)(pk, text)
        claims[pk].set_result(bool(text))
    return sum(1 for text in results if text)


async def _wait_for(claims, time_limit: float | None) -> int:
    """Wait for other callers' descriptions (never cancelling them: ``asyncio.wait``)."""
    claims = list(claims)
    if not claims:
        return 0
    done, _late = await asyncio.wait(claims, timeout=time_limit)
    return sum(1 for claim in done if claim.result())


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
