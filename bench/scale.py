"""What a turn costs as a conversation grows: 1,000 / 10,000 / 100,000 messages.

Each conversation has a persisted summary covering all but its newest 50 messages and five
pinned messages among those it covers, so a turn needs the same rows whatever the size. For
each size, on SQLite and on PostgreSQL, it times (median of ``--runs``):

- load: ``DbMemory.get_messages()`` — the history a run reads (the summary, the 50 newest
  messages, the pinned ones), with the budget large enough that nothing is compacted;
- page: ``GET /api/conversations/<id>/messages/`` — the messages API's newest page (50);
- search: ``chat.search.conversations.search`` in the conversation for a word ten of its
  messages hold (what ``recall`` runs);
- gauge: ``GET /api/conversations/<id>/context/`` — the context gauge, which counts the
  same history as the load.

Target: each figure at 100,000 within 1.5x of its figure at 1,000 (the ratio is printed).
The three conversations live in one database (111,000 messages), as in a real installation.
PostgreSQL is a throw-away server started the way the tests start theirs
(tests/support/services.py); without its binaries that half is skipped, with the reason.

    .venv/bin/python bench/scale.py [--sizes 1000,10000,100000] [--runs 15] [--only sqlite]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TAIL = 50  # messages after the summary's end
PINNED = 5  # pinned messages the summary covers
RARE_HITS = 10  # messages holding the searched word
RARE_WORD = "quetzalcoatlus"
TEXT = "A typical chat message about the project, with some numbers 42 and 3.14. " * 3


def build(owner, count: int):
    """One conversation of ``count`` messages, its summary, its pins and search index."""
    from datetime import timedelta

    from django.utils import timezone

    from chat.models import ContextSummary, Conversation, Message, SearchDocument
    from chat.search.text import index_text

    conversation = Conversation.objects.create(owner=owner, title=f"bench {count}")
    start = timezone.now() - timedelta(days=30)
    rare = {int(count * (k + 0.5) / RARE_HITS) for k in range(RARE_HITS)}
    pinned = {int((count - TAIL) * (k + 0.5) / PINNED) for k in range(PINNED)}
    created = Message._meta.get_field("created_at")
    created.auto_now_add = False  # distinct stamps, one second apart, as a real chat has
    try:
        batch: list = []
        for i in range(count):
            role = "user" if i % 2 == 0 else "assistant"
            word = f" {RARE_WORD}" if i in rare else ""
            batch.append(
                Message(
                    conversation=conversation,
                    role=role,
                    kind="query" if role == "user" else "answer",
                    content=f"#{i} {TEXT}{word}",
                    pinned=i in pinned,
                    created_at=start + timedelta(seconds=i),
                )
            )
            if len(batch) == 5000 or i == count - 1:
                rows = Message.objects.bulk_create(batch, batch_size=1000)
                SearchDocument.objects.bulk_create(
                    [
                        SearchDocument(
                            conversation=conversation,
                            message_id=m.pk,
                            kind=SearchDocument.Kind.MESSAGE,
                            body=m.content,
                            terms=index_text(m.content),
                            created_at=m.created_at,
                        )
                        for m in rows
                    ],
                    batch_size=1000,
                )
                batch = []
    finally:
        created.auto_now_add = True
    ids = list(
        Message.objects.filter(conversation=conversation)
        .order_by("created_at", "id")
        .values_list("id", flat=True)
    )
    ContextSummary.objects.create(
        conversation=conversation,
        covers_through_id=ids[-TAIL - 1],
        content="Summary of the conversation so far: the project, its numbers, its plan.",
        covered_count=count - TAIL,
        tokens=20,
    )
    return conversation


def timed(fn, runs: int) -> float:
    fn()  # warm: caches, the first query's plan
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def measure(sizes: list[int], runs: int) -> dict:
    """In this process (Django set up on the backend given by the environment)."""
    import asyncio

    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    from chat.search.conversations import search
    from contextmgmt.db_memory import DbMemory

    owner = get_user_model().objects.create_user(username="bench", password="x")
    built = {}
    for size in sizes:
        t0 = time.perf_counter()
        built[size] = build(owner, size)
        print(f"  built {size:,} messages in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    client = Client(HTTP_HOST="localhost")
    client.force_login(owner)
    results = {}
    for size, conversation in built.items():
        memory = DbMemory(conversation.pk, max_tokens=10_000_000, vision=False)
        loaded: list = []

        def load(memory=memory, loaded=loaded):
            loaded[:] = asyncio.run(memory.get_messages())

        def page(conversation=conversation):
            response = client.get(f"/api/conversations/{conversation.pk}/messages/")
            assert response.status_code == 200, response.content[:200]
            assert len(response.json()["messages"]) == TAIL

        hits: list = []

        def find(conversation=conversation, hits=hits):
            hits[:] = search(query=RARE_WORD, conversation_id=conversation.pk)

        def gauge(conversation=conversation):
            response = client.get(f"/api/conversations/{conversation.pk}/context/")
            assert response.status_code == 200, response.content[:200]

        results[size] = {
            "load": timed(load, runs),
            "page": timed(page, runs),
            "search": timed(find, runs),
            "gauge": timed(gauge, max(3, runs // 3)),
            # What the load returned: the summary, the tail (its newest, the query, left
            # out) and the pins — the same at every size.
            "loaded": len(loaded),
            "hits": len(hits),
        }
    return {"vendor": connection.vendor, "results": results}


def child(args) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    from _django import setup_django

    setup_django(prefix="fimone-bench-scale-")
    print(json.dumps(measure(args.sizes, args.runs)))


def run_child(args, env: dict) -> dict:
    argv = [sys.executable, __file__, "--child", "--runs", str(args.runs)]
    argv += ["--sizes", ",".join(str(s) for s in args.sizes)]
    base = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    done = subprocess.run(
        argv, cwd=ROOT, env={**base, **env}, stdout=subprocess.PIPE, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


WHAT = {
    "load": "DbMemory.get_messages(): summary + 50 newest + 5 pinned",
    "page": "GET messages API, newest page of 50",
    "search": f"search in the conversation, a word {RARE_HITS} messages hold",
    "gauge": "GET context gauge (counts the same history)",
}


def report(found: dict, sizes: list[int]) -> None:
    vendor = found["vendor"]
    results = {int(k): v for k, v in found["results"].items()}
    first, last = sizes[0], sizes[-1]
    print(f"\n{vendor}: median ms per call ({', '.join(f'{s:,}' for s in sizes)} messages)")
    for key, what in WHAT.items():
        figures = "  ".join(f"{results[s][key]:8.2f}" for s in sizes)
        ratio = results[last][key] / results[first][key]
        print(f"  {key:<7}{figures}   {last // 1000}K/{first // 1000}K {ratio:4.2f}x   {what}")
    loaded = sorted({results[s]["loaded"] for s in sizes})
    hits = sorted({results[s]["hits"] for s in sizes})
    print(f"  (messages the load returned: {loaded}; search hits: {hits})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--only", choices=("sqlite", "postgresql"))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    if args.child:
        child(args)
        return
    if args.only != "postgresql":
        report(run_child(args, {}), args.sizes)
    if args.only == "sqlite":
        return
    sys.path.insert(0, str(ROOT))
    from tests.support.services import ServiceUnavailable, start_postgres

    try:
        server = start_postgres()
    except ServiceUnavailable as exc:
        print(f"\npostgresql: skipped — {exc}")
        return
    with server:
        url = server.create_database("bench_scale")
        report(run_child(args, {"DATABASE_URL": url}), args.sizes)


if __name__ == "__main__":
    main()
