"""Long tool results at the windows local models have: 8K, 32K and 128K, two ways.

Run from the repo root:  .venv/bin/python bench/tool_windows.py [--steps 6] [--chars 30000]

The scenario of the issue "Tools in the context at every window": an agent calls a tool
(an MCP server's pages) twice per step for six steps; each result is ~30,000 characters
and carries one fact somewhere in its middle; then the model answers. Before every call
the real ContextGuard fits the context (ReAct hint) and the context it returns is what the
next call starts from, as in fimone's ReAct loop. The summariser is the offline model.
The message budget is the window less the output reserve, fimone's 4,000-token system
reserve (never below the 4,000-token floor) and the tool schemas. Two ways:

  summarise only — the guard without its masking tier;
  fimone         — masking that adapts to the window, stubs of every answered round, the
                   unread round cut with a read-on line, then a summary only if still over.

For each window and way it prints: input tokens over the run (the model's calls, tool
schemas included, plus the summariser's own input), summariser calls, prefix stability
as bench/tool_heavy.py measures it (the share of calls after the first that send the
previous call's prefix up to its last stub or summary byte for byte), and facts reachable
at the end: in the final context (verbatim or in a summary), or through ``recall`` with the
id a stub or a cut result's read-on line names.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contextmgmt.core.budget import usable_input_tokens  # noqa: E402
from contextmgmt.core.guard import ContextGuard  # noqa: E402
from contextmgmt.core.masking import CUT_KEY, is_masked  # noqa: E402
from contextmgmt.core.messages import ChatMessage, ToolCall  # noqa: E402
from contextmgmt.core.tokens import estimate_messages_tokens, estimate_tokens  # noqa: E402
from fimone.llm.offline import OfflineLLM  # noqa: E402

# (window, output reserve): what an operator of such a local model typically sets.
WINDOWS = ((8_000, 2_000), (32_000, 4_096), (128_000, 8_192))
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "docs__page",
            "description": "A page of the report, by number.",
            "parameters": {
                "type": "object",
                "properties": {"number": {"type": "integer"}},
                "required": ["number"],
            },
        },
    }
]
TOOL_TOKENS = estimate_tokens(json.dumps(TOOLS))
WORDS = (
    "the service request returned value table migration deploy region cluster owner "
    "report quarter budget latency error retry cache index shard replica queue worker"
).split()


def make_pages(count: int, chars: int, rng: random.Random) -> list[tuple[str, str]]:
    """(text, fact) of each page: ~``chars`` characters, the fact in its middle."""
    pages = []
    for n in range(count):
        fact = f"FACT-{n:02d}: the threshold for unit {n} is {rng.randint(1000, 9999)}.{n:02d} ms"
        lines = [f"# Page {n}"]
        while sum(len(line) + 1 for line in lines) < chars:
            lines.append(" ".join(rng.choices(WORDS, k=rng.randint(8, 16))) + ".")
        lines.insert(rng.randint(len(lines) // 3, 2 * len(lines) // 3), fact)
        pages.append(("\n".join(lines)[: chars + len(fact)], fact))
    return pages


def serial(message: ChatMessage) -> str:
    return json.dumps(message.to_openai(), sort_keys=True, ensure_ascii=False)


def compaction_point(messages: list[ChatMessage]) -> int:
    return max((i + 1 for i, m in enumerate(messages) if is_masked(m) or m.is_summary), default=0)


async def run(way: str, pages, steps: int, window: int, output: int) -> dict:
    budget = usable_input_tokens(window, output) - TOOL_TOKENS
    summariser = OfflineLLM()
    guard = ContextGuard(
        compact_llm=summariser,
        budget=budget,
        mask_keep_rounds=None if way == "summarise" else 2,
    )
    messages = [
        ChatMessage(role="system", content="Read the pages the user names, then answer."),
        ChatMessage(
            role="user", content=f"Read pages 0 to {2 * steps - 1} and list every threshold."
        ),
    ]
    messages[1] = ChatMessage(role="user", content=messages[1].content, pinned=True)
    previous: list[ChatMessage] | None = None
    total_input = settled = 0
    for step in range(steps + 1):
        messages = list(await guard.check_and_compact(messages, hint="react_iteration"))
        total_input += TOOL_TOKENS + estimate_messages_tokens(messages)
        if previous is not None:
            point = compaction_point(previous)
            settled += len(messages) >= point and all(
                a is b or serial(a) == serial(b)
                for a, b in zip(previous[:point], messages[:point], strict=True)
            )
        previous = list(messages)
        if step == steps:
            break
        calls = [
            ToolCall(f"s{step}_{k}", "docs__page", json.dumps({"number": 2 * step + k}))
            for k in (0, 1)
        ]
        messages.append(ChatMessage(role="assistant", content=None, tool_calls=calls))
        for k, call in enumerate(calls):
            text, _fact = pages[2 * step + k]
            messages.append(ChatMessage(role="tool", content=text, tool_call_id=call.id))
    in_context = "\n".join(m.text() for m in messages if not is_masked(m))
    pointed = {
        m.tool_call_id
        for m in messages
        if m.role == "tool" and (is_masked(m) or CUT_KEY in m.metadata)
    }
    reachable = sum(
        1
        for n, (_text, fact) in enumerate(pages[: 2 * steps])
        if fact in in_context or f"s{n // 2}_{n % 2}" in pointed
    )
    return {
        "input": total_input + guard.usage.input_tokens,
        "calls": guard.summariser_calls,
        "stability": settled / steps,
        "reachable": reachable,
        "facts": 2 * steps,
        "budget": budget,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--chars", type=int, default=30_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    pages = make_pages(2 * args.steps, args.chars, random.Random(args.seed))
    print(
        f"{args.steps} steps of two results of ~{args.chars:,} characters, then the answer "
        f"({args.steps + 1} model calls); summariser: the offline model"
    )
    print(
        f"{'window':>8} {'budget':>8} {'way':<15} {'input tokens':>13} {'summ. calls':>11} "
        f"{'prefix stable':>13} {'facts':>7}"
    )
    for window, output in WINDOWS:
        for way in ("summarise", "fimone"):
            row = asyncio.run(run(way, pages, args.steps, window, output))
            print(
                f"{window:>8,} {row['budget']:>8,} {way:<15} {row['input']:>13,} "
                f"{row['calls']:>11} {row['stability']:>13.0%} "
                f"{row['reachable']:>3}/{row['facts']}"
            )


if __name__ == "__main__":
    main()
