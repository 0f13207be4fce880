"""DbMemory load time and query count: 2,000 messages with 20 images.

Builds one conversation in a fresh SQLite database (temporary FIMONE_DATA_DIR), then
times ``DbMemory.get_messages()`` — the whole load: summary lookup, message query,
attachment query, reading the image files and base64-encoding them — over several runs.
Target: <= 150 ms on this machine.

    .venv/bin/python bench/dbmemory.py [--messages 2000] [--images 20] [--runs 15]
"""

from __future__ import annotations

import argparse
import io
import random
import shutil
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from _django import setup_django  # noqa: E402 — beside this script


def noisy_png(width: int, height: int, seed: int) -> bytes:
    from PIL import Image

    # Incompressible pixels: file sizes like photos, not like flat test squares.
    pixels = random.Random(seed).randbytes(width * height * 3)
    out = io.BytesIO()
    Image.frombytes("RGB", (width, height), pixels).save(out, format="PNG")
    return out.getvalue()


def build(count: int, images: int, size: tuple[int, int]):
    from django.contrib.auth import get_user_model
    from django.core.files.base import ContentFile

    from chat.models import Attachment, Conversation, Message

    owner = get_user_model().objects.create_user(username="bench")
    conversation = Conversation.objects.create(owner=owner, title="bench")
    attachments = []
    for i in range(images):
        data = noisy_png(*size, seed=i)
        a = Attachment(
            owner=owner,
            conversation=conversation,
            original_name=f"photo{i}.png",
            mime_type="image/png",
            size=len(data),
            width=size[0],
            height=size[1],
            sha256="0" * 64,
        )
        a.file.save("upload", ContentFile(data), save=False)
        a.save()
        attachments.append(a)
    user_slots = list(range(0, count, 2))
    step = max(1, len(user_slots) // max(images, 1))
    with_image = dict(zip(user_slots[::step], attachments, strict=False))
    text = "A typical chat message about the project, with some numbers 42 and 3.14. " * 4
    rows = []
    for i in range(count):
        role = "user" if i % 2 == 0 else "assistant"
        meta = {}
        if i in with_image:
            a = with_image[i]
            meta = {"images": [{"file_id": str(a.id), "mime_type": a.mime_type}]}
        rows.append(
            Message(
                conversation=conversation,
                role=role,
                content=f"#{i} {text}",
                kind="query" if role == "user" else "answer",
                metadata=meta,
            )
        )
    Message.objects.bulk_create(rows, batch_size=500)
    Message.objects.create(conversation=conversation, role="user", content="current question")
    return conversation, sum(a.size for a in attachments)


def time_loads(conversation_id, max_tokens: int, runs: int):
    from asgiref.sync import async_to_sync
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from contextmgmt.db_memory import DbMemory

    times, queries, memory, messages = [], 0, None, []
    for _ in range(runs):
        memory = DbMemory(conversation_id, max_tokens, vision=True)
        with CaptureQueriesContext(connection) as ctx:
            started = time.perf_counter()
            # async_to_sync from this thread: the ORM work runs here, on this connection.
            messages = async_to_sync(memory.get_messages)()
            times.append((time.perf_counter() - started) * 1000)
        queries = len(ctx.captured_queries)
    return times, queries, memory, messages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=2_000)
    parser.add_argument("--images", type=int, default=20)
    parser.add_argument("--image-size", type=int, nargs=2, default=(320, 240), metavar=("W", "H"))
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    data_dir = setup_django()
    try:
        conversation, image_bytes = build(args.messages, args.images, tuple(args.image_size))
        print(
            f"{args.messages:,} messages, {args.images} images "
            f"({image_bytes / 1e6:.1f} MB on disk, {args.image_size[0]}x{args.image_size[1]}), "
            f"{args.runs} runs each (first run included in max)"
        )
        print(
            f"  {'budget':<28}{'queries':>8}{'kept':>7}{'median ms':>11}{'min ms':>8}{'max ms':>8}"
        )
        for label, budget in (
            ("everything (no compaction)", 10**9),
            ("60,000 (smart_truncate)", 60_000),
        ):
            times, queries, memory, messages = time_loads(conversation.id, budget, args.runs)
            print(
                f"  {label:<28}{queries:>8}{len(messages):>7}{statistics.median(times):>11.1f}"
                f"{min(times):>8.1f}{max(times):>8.1f}"
            )
        verdict = "meets" if statistics.median(times) <= 150 else "MISSES"
        print(f"target <= 150 ms: {verdict} (median of the 60K-budget load)")
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
