"""Full-text search: rebuild throughput, recall and search-box latency, indexing cost.

Builds, in a fresh database (temporary FIMONE_DATA_DIR; SQLite unless DATABASE_URL names
an empty PostgreSQL database), one long conversation with facts planted once each among
log-like filler, plus many other conversations of the same owner, then:

- rebuilds the index (``search_index.rebuild``) and prints texts per second;
- asks ``recall`` for every planted fact by one of its key words and prints how many come
  back first / among its passages (limit 5: five full passages' worth), with the median
  and p95 time per query;
- runs two-word search-box queries over all the owner's conversations (median, p95);
- times storing a user message with the index (``services.user_message_create``) against
  the same row without it (``Message.objects.create``);
- measures recall quality with crowded keys (``bench/_recall_quality.py``: five languages,
  20 filler mentions per key, values stated plainly, in reply to a question, or at the end
  of a long message): the place of the passage quoting the value. ``--quality`` runs only
  this part.

    .venv/bin/python bench/search.py [--conversations 100] [--messages 200] [--long 2000]
        [--quality]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from _django import setup_django  # noqa: E402 — beside this script

WORDS = (
    "request worker status latency cache deploy build queue retry timeout region shard "
    "backup replica index token budget summary answer question museum hotel invoice "
    "release schedule meeting report draft review plan office network storage"
).split()
ZH = ["预算", "交付", "仓库", "会议", "报告", "发布", "合同", "客户"]


def filler(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(12, 60))]
    if rng.random() < 0.2:
        words.insert(rng.randrange(len(words)), rng.choice(ZH) + rng.choice(ZH))
    if rng.random() < 0.3:
        ip = f"10.0.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
        words.append(f"{ip} took {rng.randint(1, 900)}ms")
    return " ".join(words)


def facts(count: int) -> list[tuple[str, str]]:
    """(sentence, key word) pairs, each stated once."""
    kinds = [
        lambda i: (f"The order id for the Lisbon client is ORD{70000 + i}.", f"ORD{70000 + i}"),
        lambda i: (f"Our contact at Nordwind is Ilse Kowalczyk{i}.", f"Kowalczyk{i}"),
        lambda i: (f"Backups live at /srv/vault{i}/nightly.", f"vault{i}"),
        lambda i: (f"The staging URL is https://stage{i}.example.net/login.", f"stage{i}"),
        lambda i: (f"项目代号是青龙{i}号，预算八千元。", f"青龙{i}号"),
    ]
    return [kinds[i % len(kinds)](i) for i in range(count)]


def build(args, rng):
    from django.contrib.auth import get_user_model

    from chat.models import Conversation, Message

    owner = get_user_model().objects.create_user(username="bench")
    long = Conversation.objects.create(owner=owner, title="Long project thread")
    planted = facts(args.facts)
    slots = set(rng.sample(range(args.long), len(planted)))
    rows, fact_iter = [], iter(planted)
    for i in range(args.long):
        text = next(fact_iter)[0] if i in slots else filler(rng)
        role = "user" if i % 2 == 0 else "assistant"
        rows.append(Message(conversation=long, role=role, content=text, status="done"))
    for c in range(args.conversations):
        other = Conversation.objects.create(owner=owner, title=f"{rng.choice(WORDS)} notes {c}")
        rows += [
            Message(conversation=other, role="user" if i % 2 == 0 else "assistant",
                    content=filler(rng), status="done")
            for i in range(args.messages)
        ]  # fmt: skip
    Message.objects.bulk_create(rows, batch_size=1000)
    return owner, long, planted, len(rows)


def ms(values: list[float]) -> str:
    values = sorted(values)
    p95 = values[min(len(values) - 1, int(len(values) * 0.95))]
    return f"median {statistics.median(values) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--long", type=int, default=2000)
    parser.add_argument("--facts", type=int, default=50)
    parser.add_argument("--quality", action="store_true", help="only the recall quality")
    args = parser.parse_args()
    data_dir = setup_django()
    try:
        import _recall_quality
        from django.contrib.auth import get_user_model

        if args.quality:
            _recall_quality.report(get_user_model().objects.create_user(username="quality"))
            return
        from django.db import connection

        from chat import services
        from chat.api.search import typed_terms
        from chat.models import Conversation, Message, SearchDocument
        from chat.recall.lookup import recall_passages
        from chat.search import index as search_index
        from chat.search.conversations import search

        rng = random.Random(7)
        owner, long, planted, total = build(args, rng)
        print(f"database: {connection.vendor}; {total:,} messages in "
              f"{args.conversations + 1} conversations")  # fmt: skip

        started = time.perf_counter()
        texts = search_index.rebuild()
        took = time.perf_counter() - started
        print(f"rebuild: {texts:,} texts in {took:.1f} s ({texts / took:,.0f} texts/s)")
        print(f"documents: {SearchDocument.objects.count():,}")

        first = top5 = 0
        times = []
        for sentence, key in planted:
            started = time.perf_counter()
            found = recall_passages(conversation_id=long.id, query=key, limit=5)
            times.append(time.perf_counter() - started)
            first += bool(found) and sentence in found[0]
            top5 += any(sentence in p for p in found)
        print(f"recall by one key word: {first}/{len(planted)} first, {top5}/{len(planted)} "
              f"among the passages; {ms(times)} per query over {args.long:,} messages")  # fmt: skip

        times, counts = [], []
        for _ in range(50):
            terms = typed_terms(f"{rng.choice(WORDS)} {rng.choice(WORDS)[:4]}")
            started = time.perf_counter()
            counts.append(len(search(query=terms, owner_id=owner.pk, match_all=True, limit=60)))
            times.append(time.perf_counter() - started)
        print(f"search box, two common words (last as prefix) over all {total:,} messages: "
              f"{ms(times)}; {statistics.mean(counts):.0f} of 60 results on average")  # fmt: skip
        times = []
        for _sentence, key in planted:
            started = time.perf_counter()
            search(query=typed_terms(key), owner_id=owner.pk, match_all=True, limit=60)
            times.append(time.perf_counter() - started)
        print(f"search box, one rare word: {ms(times)}")

        target = Conversation.objects.create(owner=owner, title="writes")
        with_index, without = [], []
        for _ in range(100):
            text = filler(rng)
            started = time.perf_counter()
            services.user_message_create(conversation=target, content=text)
            with_index.append(time.perf_counter() - started)
            started = time.perf_counter()
            Message.objects.create(conversation=target, role="user", content=text)
            without.append(time.perf_counter() - started)
        print(f"store a user message: with index {ms(with_index)}; the bare row {ms(without)}")
        _recall_quality.report(owner)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
