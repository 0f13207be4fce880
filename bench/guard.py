"""ContextGuard fast path (target: repeated check <= 200 µs).

Run from the repo root:  .venv/bin/python bench/guard.py [--python] [--code DIR]

``--python`` counts characters with the pure-Python counter in a checkout (``--code``) of a
version that still had a compiled one. ``--code DIR`` times the ``contextmgmt`` package
found in DIR instead of this checkout's, to measure another version beside this one
(alternate the runs); e.g. the seeds' 4-characters rule, the estimator before the character classes:

    mkdir -p /tmp/seeds && git archive 0033229^ contextmgmt | tar -x -C /tmp/seeds
    .venv/bin/python bench/guard.py --code /tmp/seeds

An in-budget 500-message conversation (system prompt, multilingual turns, tool rounds, a
few image messages, a pinned query) is checked the way a ReAct loop does it: the first
call estimates every message; repeated calls over the unchanged conversation reuse the
per-message estimates. A third figure appends one tool round per call, as an iteration does.
The budget leaves the conversation under the masking mark (half the budget), where the
guard changes nothing: the common case. A last figure checks it over the mark once every
old tool result is masked: each call then looks for results that have just aged.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from pathlib import Path

_parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
_parser.add_argument("--code", help="directory holding the contextmgmt package to time")
_parser.add_argument(
    "--python",
    action="store_true",
    help="in an older checkout, count in Python, not with its C counter",
)
ARGS = _parser.parse_args()
sys.path.insert(0, ARGS.code or str(Path(__file__).resolve().parents[1]))
if ARGS.python:
    sys.modules["contextmgmt.core._charclass"] = None  # type: ignore[assignment]

from contextmgmt.core import tokens as tokens_module  # noqa: E402
from contextmgmt.core.guard import ContextGuard  # noqa: E402
from contextmgmt.core.messages import ChatMessage, ToolCall  # noqa: E402
from contextmgmt.core.tokens import estimate_messages_tokens  # noqa: E402

CODE = Path(tokens_module.__file__).resolve().parents[2]

# 34K tokens of conversation stay under the masking mark of half of this.
BUDGET = 80_000
# Over the mark: the conversation is more than half of this.
TIGHT_BUDGET = 60_000
WORDS = {
    "en": "the budget plan review migration server request result table value ".split(),
    "de": "der Haushalt Prüfung Übergröße Straße Aufwand Ergebnis Wert ".split(),
    "zh": list("上下文窗口有限系统提示工具描述历史记录预算关键信息"),
    "ru": "контекст окно бюджет история токен результат ".split(),
}
IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}


def text(rng: random.Random, lo: int, hi: int) -> str:
    words = WORDS[rng.choice(list(WORDS))]
    out = []
    size = rng.randint(lo, hi)
    while sum(map(len, out)) < size:
        out.append(rng.choice(words))
    return " ".join(out)


def conversation(rng: random.Random, count: int = 500) -> list[ChatMessage]:
    msgs = [ChatMessage(role="system", content=text(rng, 800, 1200))]
    call = 0
    while len(msgs) < count - 1:
        if rng.random() < 0.02:
            parts = [{"type": "text", "text": text(rng, 20, 80)}, IMAGE]
            msgs.append(ChatMessage(role="user", content=parts))
        else:
            msgs.append(ChatMessage(role="user", content=text(rng, 20, 200)))
        if rng.random() < 0.3:
            call += 1
            cid = f"call_{call}"
            msgs.append(
                ChatMessage(
                    role="assistant",
                    tool_calls=[ToolCall(cid, "search", json.dumps({"q": text(rng, 5, 20)}))],
                )
            )
            msgs.append(ChatMessage(role="tool", content=text(rng, 50, 300), tool_call_id=cid))
        msgs.append(ChatMessage(role="assistant", content=text(rng, 40, 300)))
    msgs = msgs[: count - 1]
    while msgs[-1].role != "assistant" or msgs[-1].tool_calls:
        msgs.pop()
    msgs.append(ChatMessage(role="user", content="What did we decide?", pinned=True))
    return msgs


async def timed(guard: ContextGuard, msgs: list[ChatMessage]) -> float:
    t0 = time.perf_counter()
    out = await guard.check_and_compact(msgs)
    elapsed = time.perf_counter() - t0
    assert out is msgs, "the benchmark conversation must be within budget"
    return elapsed * 1e6


async def main() -> None:
    rng = random.Random(7)
    guard = ContextGuard(budget=BUDGET)

    firsts = []
    for _ in range(20):  # fresh, never-estimated conversations
        firsts.append(await timed(guard, conversation(random.Random(rng.random()))))

    msgs = conversation(rng)
    await timed(guard, msgs)
    repeated = [await timed(guard, msgs) for _ in range(2_000)]

    growing = list(msgs)
    appended = []
    for i in range(100):
        cid = f"bench_{i}"
        growing.append(ChatMessage(role="assistant", tool_calls=[ToolCall(cid, "f", "{}")]))
        growing.append(ChatMessage(role="tool", content="ok " * 20, tool_call_id=cid))
        appended.append(await timed(guard, growing))

    tight = ContextGuard(budget=TIGHT_BUDGET)
    masked = await tight.check_and_compact(msgs)
    over_mark = []
    for _ in range(2_000):
        t0 = time.perf_counter()
        out = await tight.check_and_compact(masked)
        over_mark.append((time.perf_counter() - t0) * 1e6)
        assert out is masked, "nothing is left to mask"

    compiled = getattr(sys.modules.get("contextmgmt.core.charclass"), "COMPILED", False)
    counter = "compiled (C)" if compiled else "pure Python"
    if "contextmgmt.core.charclass" not in sys.modules:
        counter = "no character classes"
    print(f"code: {CODE}; counter: {counter}")
    print(
        f"conversation: {len(msgs)} messages, {estimate_messages_tokens(msgs):,} tokens "
        f"(budget {BUDGET:,})"
    )
    print(
        f"first check (cold):    median {statistics.median(firsts):7.1f} µs, "
        f"best {min(firsts):.1f} µs (of {len(firsts)} conversations)"
    )
    print(
        f"repeated (unchanged):  median {statistics.median(repeated):7.1f} µs, "
        f"p95 {statistics.quantiles(repeated, n=20)[-1]:.1f} µs  (target <= 200 µs)"
    )
    print(f"after appending a tool round: median {statistics.median(appended):7.1f} µs")
    print(
        f"over the masking mark (budget {TIGHT_BUDGET:,}), all old results masked: "
        f"median {statistics.median(over_mark):7.1f} µs, "
        f"p95 {statistics.quantiles(over_mark, n=20)[-1]:.1f} µs"
    )


if __name__ == "__main__":
    asyncio.run(main())
