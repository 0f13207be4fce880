"""Input tokens per request with the image lifecycle vs re-sending every image.

A 50-turn conversation with 20 images (screenshots, phone screenshots, photos, small
crops; uploaded through ``services.attachment_create``, so each gets its offline
description once) is replayed turn by turn in a fresh SQLite database. Before each answer
the request's messages are built the way a run builds them — ``chat.history.load_history``
and ``query_message`` — twice:

- **lifecycle**: the current turn's images and those of the newest K earlier turns
  (``FIMONE_IMAGE_PIXEL_TURNS``, default 2) as pixels, older ones as their description;
- **reference**: every earlier image re-sent as pixels on every request — what the
  reference design (FIM One's DbMemory) does, and what fimone did before the lifecycle.

Both are counted with the same estimator (``contextmgmt.core.tokens``: text by character
class, images by the OpenAI tile rule from their real sizes), with a system prompt of
~300 tokens and no compaction (a budget large enough for either), so the difference is the
images alone. Prints every request, the totals and the ratio (target: lifecycle ≤ 25 % of
reference over the conversation). Also prints the floor no lifecycle can go under: the
same requests with the current message's images as pixels and every earlier image dropped.

    .venv/bin/python bench/images.py [--turns 50] [--images 20] [--pixel-turns 2]
        [--description-chars N]   # stand-in for model-written descriptions of N chars
"""

from __future__ import annotations

import argparse
import io
import os
import random
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from _django import setup_django  # noqa: E402 — beside this script

# (kind, width, height, format): what people paste into a chat.
IMAGE_KINDS = [
    ("screenshot", 1920, 1080, "PNG"),
    ("phone", 1170, 2532, "PNG"),
    ("photo", 4032, 3024, "JPEG"),
    ("crop", 640, 400, "PNG"),
    ("screenshot", 1440, 900, "PNG"),
]
SYSTEM = "You are fimone, a careful assistant. " * 40  # ~300 tokens, as a real prompt
WORDS = (
    "the build fails on the login page after the last deploy because the token expires "
    "early and the retry loop never stops so we should check the config values again"
).split()


def picture(kind: str, width: int, height: int, fmt: str, seed: int) -> bytes:
    """A light but real image of the given size: flat panels and bars, like a UI."""
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    image = Image.new("RGB", (width, height), (245, 245, 245))
    draw = ImageDraw.Draw(image)
    for _ in range(12):
        x, y = rng.randrange(width), rng.randrange(height)
        colour = tuple(rng.randrange(256) for _ in range(3))
        draw.rectangle([x, y, x + width // 6, y + height // 10], fill=colour)
    out = io.BytesIO()
    image.save(out, format=fmt, quality=70) if fmt == "JPEG" else image.save(out, format=fmt)
    return out.getvalue()


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def build_and_measure(turns: int, images: int, description_chars: int | None):
    from django.contrib.auth import get_user_model
    from django.core.files.uploadedfile import SimpleUploadedFile

    from chat import services
    from chat.history import load_history, query_message
    from chat.models import Attachment, Message
    from contextmgmt.core.messages import ChatMessage
    from contextmgmt.core.tokens import estimate_messages_tokens

    rng = random.Random(7)
    owner = get_user_model().objects.create_user(username="bench")
    conversation = services.conversation_create(owner=owner, title="bench")
    # Images spread over the conversation: turn i carries one when it is in this set.
    with_image = {round(i * turns / images) for i in range(images)} if images else set()
    system = ChatMessage(role="system", content=SYSTEM)
    rows = []
    for turn in range(turns):
        attachments = []
        if turn in with_image:
            kind, width, height, fmt = IMAGE_KINDS[len(rows) % len(IMAGE_KINDS)]
            data = picture(kind, width, height, fmt, seed=turn)
            upload = SimpleUploadedFile(f"{kind}{turn}.{fmt.lower()}", data)
            attachment = services.attachment_create(
                owner=owner, conversation=conversation, uploaded_file=upload
            )
            if description_chars:
                text = sentence(rng, 200)[:description_chars]
                Attachment.objects.filter(pk=attachment.pk).update(
                    description=text, description_source="model"
                )
            attachments.append(attachment)
        question = services.user_message_create(
            conversation=conversation,
            content=sentence(rng, rng.randint(8, 30)),
            attachments=attachments,
        )
        query = query_message(question)
        lifecycle = load_history(conversation.pk).messages
        reference = load_history(conversation.pk, pixel_turns=10**6).messages
        rows.append(
            (
                turn + 1,
                len(attachments),
                sum(r[1] for r in rows) + len(attachments),
                estimate_messages_tokens([system, *lifecycle, query]),
                estimate_messages_tokens([system, *reference, query]),
                _pixel_parts([*lifecycle, query]),
                _pixel_parts([*reference, query]),
                estimate_messages_tokens([system, *_text_only([*reference, query])]),
                estimate_messages_tokens([system, *_text_only(reference), query]),
            )
        )
        Message.objects.create(
            conversation=conversation,
            role="assistant",
            content=" ".join(sentence(rng, rng.randint(10, 25)) for _ in range(rng.randint(2, 5))),
        )
    return rows


def _text_only(messages):
    """The messages without their image parts: the floor neither variant can go under."""
    from contextmgmt.core.messages import ChatMessage

    return [ChatMessage(role=m.role, content=m.text()) for m in messages]


def _pixel_parts(messages) -> int:
    return sum(
        1
        for m in messages
        if isinstance(m.content, list)
        for p in m.content
        if p.get("type") == "image_url"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--images", type=int, default=20)
    parser.add_argument("--pixel-turns", type=int, default=2)
    parser.add_argument("--description-chars", type=int, default=None)
    args = parser.parse_args()
    os.environ["FIMONE_IMAGE_PIXEL_TURNS"] = str(args.pixel_turns)
    data_dir = setup_django()
    try:
        rows = build_and_measure(args.turns, args.images, args.description_chars)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)

    print(
        f"{'request':>7} {'img now':>7} {'img so far':>10} {'lifecycle':>10} "
        f"{'reference':>10} {'ratio':>6} {'pixels (lc/ref)':>16}"
    )
    for request, now, so_far, lifecycle, reference, px_lc, px_ref, _text, _floor in rows:
        print(
            f"{request:>7} {now:>7} {so_far:>10} {lifecycle:>10,} {reference:>10,} "
            f"{lifecycle / reference:>6.1%} {px_lc:>7}/{px_ref:<8}"
        )
    total_lc = sum(r[3] for r in rows)
    total_ref = sum(r[4] for r in rows)
    total_text = sum(r[7] for r in rows)
    last = rows[-1]
    print()
    described = (
        f"{args.description_chars} chars (stand-in for a model's)"
        if args.description_chars
        else "offline (written at upload)"
    )
    print(
        f"turns {args.turns}, images {args.images}, pixel turns {args.pixel_turns}, "
        f"descriptions: {described}"
    )
    print(
        f"total input tokens over {len(rows)} requests: lifecycle {total_lc:,}, "
        f"reference {total_ref:,}, ratio {total_lc / total_ref:.1%} (target <= 25%)"
    )
    print(
        f"of which images (total minus the same messages without images, {total_text:,}): "
        f"lifecycle {total_lc - total_text:,}, reference {total_ref - total_text:,}, "
        f"ratio {(total_lc - total_text) / (total_ref - total_text):.1%}"
    )
    total_floor = sum(r[8] for r in rows)
    print(
        f"floor of any lifecycle that sends the current message's images as pixels (the "
        f"text, and no earlier image at all, not even a description): {total_floor:,}, "
        f"{total_floor / total_ref:.1%} of reference"
    )
    print(
        f"last request: lifecycle {last[3]:,}, reference {last[4]:,}, "
        f"ratio {last[3] / last[4]:.1%}; pixel images sent {last[5]} vs {last[6]}"
    )


if __name__ == "__main__":
    main()
