"""Token-estimation throughput (SPEC RT.1; issue 3 targets: >= 100 MB/s, <= 2 µs per message).

Run from the repo root:  .venv/bin/python bench/tokens.py

The corpus is generated here (deterministic): English, German, Chinese, Japanese, Russian,
Python code, JSON, numbers and base64. Throughput is measured over whole documents (MB of
UTF-8 per second); latency over 60-character messages (µs each, uncached estimate_tokens
on distinct strings, so no per-message cache helps).
"""

from __future__ import annotations

import base64
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contextmgmt.core.tokens import estimate_tokens  # noqa: E402

SAMPLES = {
    "english": "The quick brown fox jumps over the lazy dog while the committee reviews "
    "the quarterly budget and approves the migration plan. ",
    "german": "Die Übergrößenprüfung läuft täglich; Müller schätzt den Aufwand auf "
    "drei Wochen, falls die Straße gesperrt bleibt. ",
    "chinese": "上下文窗口是有限的。系统提示、工具描述和累积的历史记录都会占用预算，"
    "因此需要优雅地降级并保留关键信息。",
    "japanese": "コンテキストウィンドウには限りがあります。要約は数値を失うことがあるので、"
    "重要な事実を保持する必要があります。",
    "russian": "Контекстное окно конечно: системный промпт, описания инструментов и "
    "история разговора занимают бюджет токенов. ",
    "code": "def estimate(messages: list[dict]) -> int:\n    total = 0\n    for m in messages:"
    "\n        total += 4 + len(m['content']) // 4\n    return total\n",
}


def _json_sample(rng: random.Random) -> str:
    rows = [
        {"id": rng.randrange(10**6), "name": f"item-{i}", "price": round(rng.random() * 99, 2)}
        for i in range(20)
    ]
    return json.dumps({"rows": rows, "total": len(rows)})


def _numbers_sample(rng: random.Random) -> str:
    return " ".join(f"{rng.uniform(-1e6, 1e6):,.2f}" for _ in range(60))


def _base64_sample(rng: random.Random) -> str:
    return base64.b64encode(rng.randbytes(3000)).decode()


def build_corpus(rng: random.Random, size_chars: int = 8_000_000) -> list[str]:
    """Documents of about 4-8K characters, cycling through every kind of text."""
    makers = [
        *(lambda s=s: s * rng.randint(30, 60) for s in SAMPLES.values()),
        lambda: _json_sample(rng) * 4,
        lambda: _numbers_sample(rng) * 4,
        lambda: _base64_sample(rng),
    ]
    docs: list[str] = []
    total = 0
    i = 0
    while total < size_chars:
        doc = makers[i % len(makers)]()
        docs.append(doc)
        total += len(doc)
        i += 1
    return docs


def build_messages(rng: random.Random, count: int = 200_000) -> list[str]:
    """Distinct 60-character messages drawn from every kind of text."""
    pool = [s * 4 for s in SAMPLES.values()]
    pool += [_json_sample(rng), _numbers_sample(rng), _base64_sample(rng)]
    out = []
    for i in range(count):
        src = pool[i % len(pool)]
        start = rng.randrange(0, len(src) - 60)
        # A unique suffix so that no two strings are the same object or value.
        out.append(src[start : start + 54] + f"{i:06d}")
    return out


def best_of(runs: int, fn) -> float:
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    rng = random.Random(20260101)
    docs = build_corpus(rng)
    megabytes = sum(len(d.encode("utf-8")) for d in docs) / 1e6
    chars = sum(len(d) for d in docs)
    seconds = best_of(5, lambda: [estimate_tokens(d) for d in docs])
    print(f"corpus: {len(docs)} documents, {chars:,} chars, {megabytes:.1f} MB UTF-8")
    print(f"throughput: {megabytes / seconds:,.0f} MB/s  (target >= 100 MB/s)")

    per_kind = {}
    for name, sample in SAMPLES.items():
        text = sample * 200
        mb = len(text.encode("utf-8")) / 1e6
        per_kind[name] = (
            50 * mb / best_of(5, lambda text=text: [estimate_tokens(text) for _ in range(50)])
        )
    print("  by kind: " + ", ".join(f"{k} {v:,.0f} MB/s" for k, v in per_kind.items()))
    print("  (ASCII text is O(1): CPython records isascii() when the string is created)")

    messages = build_messages(rng)
    seconds = best_of(5, lambda: [estimate_tokens(m) for m in messages])
    print(
        f"60-char messages: {seconds / len(messages) * 1e6:.2f} µs each over "
        f"{len(messages):,} distinct messages  (target <= 2 µs)"
    )


if __name__ == "__main__":
    main()
