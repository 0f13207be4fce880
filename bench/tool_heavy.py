"""A tool-heavy agent task through the real ContextGuard, three ways.

Run from the repo root:  .venv/bin/python bench/tool_heavy.py [--budget 60000] [--seed 7]

One task of 40 model calls: 39 tool calls (fetched pages, file reads, logs) whose results
are 5,000-40,000 characters, each carrying one fact the final answer needs somewhere in
its middle, then the answer. Before every call the guard fits the context (ReAct hint,
the default 60,000-token budget), and the context it returns is what the next call starts
from, as in fimone's ReAct loop. The summariser is the offline model (extractive, keeps
numbers and ids). Three ways:

  (a) summarise only — the guard without its masking tier (the seeds' two tiers);
  (b) mask only — masking, and truncation when masking is not enough (no summariser);
  (c) mask, then summarise — fimone's guard as it ships.

For each it prints: total input tokens over the run (the 40 calls, tool schemas included,
plus the summariser's own input), summariser calls, prefix stability two ways — "to the
compaction point": the share of calls after the first whose prefix up to the previous
call's last compaction point (its last stub or summary) is byte-identical to the previous
call's, i.e. what compaction already settled was not rewritten; "whole": the stricter share
that send the previous call's whole request unchanged as their prefix (no compaction at
all on that call) — the
cached input tokens that implies under OpenAI's published rule (a request of at least
1,024 tokens reuses the longest prefix it shares with an earlier request, counted in
128-token steps from 1,024), and how many of the 39 facts are still reachable at the end:
in the final context (verbatim, or in a summary) or through ``recall`` with the id a
stub in the final context names. "uncached" is the total less the cached tokens: what the
provider reads afresh.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contextmgmt.core.guard import ContextGuard  # noqa: E402
from contextmgmt.core.masking import (  # noqa: E402
    KEEP_TOOL_ROUNDS,
    MASK_MARK_SHARE,
    is_masked,
)
from contextmgmt.core.messages import ChatMessage, ToolCall  # noqa: E402
from contextmgmt.core.tokens import estimate_messages_tokens, estimate_tokens  # noqa: E402
from fimone.llm.offline.model import OfflineLLM  # noqa: E402

CALLS = 40
CACHE_MIN = 1_024
CACHE_STEP = 128
SYSTEM = (
    "You are a careful analyst. Use the tools to read every source the user names, then "
    "answer with every figure the sources give, exactly."
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {arg: {"type": "string"}},
                "required": [arg],
            },
        },
    }
    for name, arg, description in (
        ("fetch_url", "url", "Fetch a web page as Markdown."),
        ("read_file", "path", "Read a file of the project."),
        ("read_log", "name", "Read a service log."),
    )
]
TOOL_TOKENS = estimate_tokens(json.dumps(TOOLS))
WORDS = (
    "the service request returned value table migration deploy region cluster owner "
    "report quarter budget latency error retry cache index shard replica queue worker"
).split()


@dataclass
class Source:
    call: ToolCall
    text: str
    fact: str


def make_sources(rng: random.Random) -> list[Source]:
    kinds = [("fetch_url", "url"), ("read_file", "path"), ("read_log", "name")]
    out = []
    for i in range(CALLS - 1):
        name, arg = kinds[i % 3]
        value = {
            "fetch_url": f"https://docs.example.org/page-{i}",
            "read_file": f"src/module_{i}.py",
            "read_log": f"worker-{i}.log",
        }[name]
        fact = f"FACT-{i:02d}: the threshold for unit {i} is {rng.randint(1000, 9999)}.{i:02d} ms"
        size = rng.randint(5_000, 40_000)
        lines = [f"# {name} {value}"]
        while sum(len(line) + 1 for line in lines) < size:
            if name == "read_log":
                line = f"2026-05-{rng.randint(1, 28):02d} INFO {' '.join(rng.choices(WORDS, k=8))}"
            else:
                line = " ".join(rng.choices(WORDS, k=rng.randint(8, 16))) + "."
            lines.append(line)
        lines.insert(rng.randint(len(lines) // 4, 3 * len(lines) // 4), fact)
        call = ToolCall(f"call_{i:02d}", name, json.dumps({arg: value}))
        out.append(Source(call, "\n".join(lines)[: max(size, len(fact) + 200)], fact))
    return out


def serial(message: ChatMessage) -> str:
    return json.dumps(message.to_openai(), sort_keys=True, ensure_ascii=False)


def common_prefix_tokens(previous: list[ChatMessage], current: list[ChatMessage]) -> int:
    """Tokens of the longest run of leading messages two requests share byte for byte (the
    tool schemas always lead)."""
    shared = 0
    for a, b in zip(previous, current, strict=False):
        if a is not b and serial(a) != serial(b):
            break
        shared += 1
    return TOOL_TOKENS + estimate_messages_tokens(current[:shared])


def compaction_point(messages: list[ChatMessage]) -> int:
    """How many leading messages compaction has settled: up to the last stub or summary."""
    return max((i + 1 for i, m in enumerate(messages) if is_masked(m) or m.is_summary), default=0)


def cached_tokens(prompt: int, prefix: int) -> int:
    """OpenAI's rule: at least 1,024 tokens, the shared prefix in 128-token steps."""
    if prompt < CACHE_MIN or prefix < CACHE_MIN:
        return 0
    return CACHE_MIN + (prefix - CACHE_MIN) // CACHE_STEP * CACHE_STEP


async def run(way: str, sources: list[Source], budget: int, keep_rounds: int) -> dict:
    guard = ContextGuard(
        compact_llm=None if way == "mask" else OfflineLLM(),
        budget=budget - TOOL_TOKENS,
        mask_keep_rounds=None if way == "summarise" else keep_rounds,
    )
    messages = [
        ChatMessage(role="system", content=SYSTEM),
        ChatMessage(
            role="user",
            content="Read all 39 sources and list every unit's threshold.",
            pinned=True,
        ),
    ]
    previous: list[ChatMessage] | None = None
    total_input = stable = settled = cached = 0
    for k in range(CALLS):
        messages = list(await guard.check_and_compact(messages, hint="react_iteration"))
        prompt = TOOL_TOKENS + estimate_messages_tokens(messages)
        total_input += prompt
        if previous is not None:
            shared = common_prefix_tokens(previous, messages)
            cached += cached_tokens(prompt, shared)
            unchanged = len(messages) >= len(previous) and all(
                a is b or serial(a) == serial(b) for a, b in zip(previous, messages, strict=False)
            )
            stable += unchanged
            point = compaction_point(previous)
            settled += len(messages) >= point and all(
                a is b or serial(a) == serial(b)
                for a, b in zip(previous[:point], messages[:point], strict=True)
            )
        previous = list(messages)
        if k < len(sources):
            source = sources[k]
            messages.append(ChatMessage(role="assistant", content=None, tool_calls=[source.call]))
            messages.append(
                ChatMessage(role="tool", content=source.text, tool_call_id=source.call.id)
            )
    whole = {s.call.id: s for s in sources}
    in_context = "\n".join(m.text() for m in messages if not is_masked(m))
    recallable = {m.tool_call_id for m in messages if is_masked(m)}
    reachable = sum(
        1
        for s in sources
        if s.fact in in_context or (s.call.id in recallable and s.call.id in whole)
    )
    return {
        "way": way,
        "input": total_input,
        "summariser_input": guard.usage.input_tokens,
        "summariser_calls": guard.summariser_calls,
        "stability": stable / (CALLS - 1),
        "settled": settled / (CALLS - 1),
        "cached": cached,
        "reachable": reachable,
        "facts": len(sources),
        "compactions": guard.compactions,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=60_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--keep-rounds", type=int, default=KEEP_TOOL_ROUNDS, help="newest rounds never masked"
    )
    args = parser.parse_args()
    sources = make_sources(random.Random(args.seed))
    chars = [len(s.text) for s in sources]
    print(
        f"{CALLS} model calls, {len(sources)} tool results of {min(chars):,}-{max(chars):,} "
        f"characters ({sum(chars):,} in all), budget {args.budget:,} tokens, masking from "
        f"{MASK_MARK_SHARE:.0%} of it keeps the newest {args.keep_rounds} rounds"
    )
    rows = [
        asyncio.run(run(way, sources, args.budget, args.keep_rounds))
        for way in ("summarise", "mask", "both")
    ]
    label = {
        "summarise": "(a) summarise only",
        "mask": "(b) mask only",
        "both": "(c) mask, then summarise",
    }
    print(
        f"{'':26} {'input tokens':>13} {'summariser in':>13} {'total':>11} {'summ. calls':>11} "
        f"{'compactions':>11} {'stable to point':>15} {'whole':>6} {'cached (OpenAI)':>15} "
        f"{'uncached':>11} {'facts':>7}"
    )
    for row in rows:
        total = row["input"] + row["summariser_input"]
        print(
            f"{label[row['way']]:26} {row['input']:>13,} {row['summariser_input']:>13,} "
            f"{total:>11,} {row['summariser_calls']:>11} {row['compactions']:>11} "
            f"{row['settled']:>15.1%} {row['stability']:>6.1%} {row['cached']:>15,} "
            f"{total - row['cached']:>11,} "
            f"{row['reachable']:>3}/{row['facts']}"
        )
    a, c = rows[0], rows[2]
    total_a = a["input"] + a["summariser_input"]
    total_c = c["input"] + c["summariser_input"]
    print(
        f"(c) against (a): total input tokens {total_c / total_a:.0%}, uncached input tokens "
        f"{(total_c - c['cached']) / (total_a - a['cached']):.0%}, summariser calls "
        f"{c['summariser_calls']}/{a['summariser_calls']}, prefix stable to the compaction "
        f"point {c['settled']:.1%} (whole {c['stability']:.1%})"
    )


if __name__ == "__main__":
    main()
