"""Endpoints that turn out not to accept images.

A model configured as able to see ("supports images", or ``LLM_SUPPORTS_VISION`` left at its
default) may sit behind an endpoint that refuses image parts with a 400: a text-only model
on vLLM or llama.cpp, DeepSeek, an older OpenAI model. Rather than failing every request that
holds an image (Retry would fail the same way), the request is sent once more with each
image as its description — the text the history already keeps for old images
(``metadata[IMAGE_NOTES]``) — and the refusal is remembered, so later requests and runs
send descriptions from the start:

- for a model configuration row, on the row (the client reports it through
  ``on_images_refused``, the registry stores it: ``contextmgmt.profiles``), so every
  process and every restart knows it, and the admin shows it and can reset it;
- for a model configured from the environment, here, for the life of the process (per base
  URL and model).
"""

from __future__ import annotations

import dataclasses
import logging
import re
import threading
from collections.abc import Awaitable, Callable

import openai

from contextmgmt.core.messages import IMAGE_NOTES, ChatMessage

log = logging.getLogger(__name__)

# How servers word it: OpenAI ("image_url is only supported by certain models", "Invalid
# content type"), vLLM ("is not a multimodal model"), DeepSeek ("unknown variant
# `image_url`, expected `text`"), llama.cpp ("image input is not supported"), gateways
# ("model does not support images / vision").
_REFUSES_IMAGES = re.compile(
    r"image_url|image[ _]?(?:input|content|part)s?\b.*\bnot supported"
    r"|(?:does not|doesn't|cannot|can't) (?:support|accept|process) (?:image|vision|multimodal)"
    r"|not (?:a )?(?:multimodal|vision)|vision is not|multimodal (?:input|content) is not"
    r"|invalid content type",
    re.IGNORECASE,
)
UNSEEN = "[image not shown: this model does not accept images]"

# on_images_refused(server's message): where a client reports that its endpoint refused images.
ImagesRefused = Callable[[str], Awaitable[None]]

_REFUSING: set[tuple[str, str]] = set()
_REFUSING_LOCK = threading.Lock()


def refuses_images(base_url: str | None, model: str) -> bool:
    """Whether this endpoint has refused images in this process."""
    return (base_url or "", model) in _REFUSING


def remember_refusal(base_url: str | None, model: str, reason: str) -> None:
    with _REFUSING_LOCK:
        _REFUSING.add((base_url or "", model))
    log.warning(
        "model %s at %s refused images (%s); sending their descriptions from now on",
        model,
        base_url or "the default endpoint",
        reason,
    )


def says_no_images(err: BaseException) -> bool:
    """A 400/422 whose message or body says the request's images are not accepted."""
    if not isinstance(err, openai.APIStatusError) or err.status_code not in (400, 422):
        return False
    return any(_REFUSES_IMAGES.search(s) for s in (err.message, str(err.body or "")) if s)


def has_pixels(messages: list[ChatMessage]) -> bool:
    return any(m.image_parts() for m in messages)


def without_pixels(messages: list[ChatMessage]) -> list[ChatMessage]:
    """The messages with every image part replaced by its description (a generic note when
    the message carries none); messages without images are the same objects."""
    out = []
    for message in messages:
        content = message.content
        if not isinstance(content, list) or not message.image_parts():
            out.append(message)
            continue
        notes = list(message.metadata.get(IMAGE_NOTES) or [])
        texts = []
        for part in content:
            if part.get("type") == "image_url":
                texts.append(notes.pop(0) if notes else UNSEEN)
            elif isinstance(part.get("text"), str):
                texts.append(part["text"])
        out.append(dataclasses.replace(message, content="\n".join(t for t in texts if t)))
    return out
