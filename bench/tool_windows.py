"""The tool-heavy task at the windows local models have: 8K, 32K and 128K, two ways.

Run from the repo root:  .venv/bin/python bench/tool_windows.py [--steps 6] [--chars 30000]

The task: a conversation with three earlier turns, then a question the agent answers by
reading, per step for six steps, a page with ``fetch_url`` and a document with
``read_document``; each result is ~30,000 characters and carries one fact in its middle
that appears nowhere else. Beside the built-ins the run has an MCP server's 300 tools (the
test server, tests/support/mcp_server.py, over stdio, listed through fimone's pool, as
bench/tool_tier.py). Before every model call the real ContextGuard fits the context (ReAct
hint) and what it returns is what the next call starts from, as in fimone's ReAct loop;
the summariser is the offline model. Two ways, each the product's own parts:

  summarise-only — the guard without masking (no stubs, no cut results) and no tool tier:
                   every request sends all definitions, and the messages get the budget
                   less them (never below 1 token), as before the tier;
  fimone         — the tool tier (``ToolOffer``: built-ins, ``find_tools`` and what it
                   finds; the model calls ``find_tools`` once in its first step) and the
                   guard as a run builds it (masking that adapts to the window).

Per window and way: input tokens over the run (every call's messages and definitions,
plus the summariser's input), the definitions' tokens (over the run, and the largest
request's share of the input budget), summariser calls, prefix stability as
bench/tool_heavy.py measures it (the share of calls after the first that send the previous
call's prefix up to its last stub or summary byte for byte), the tool results the
summariser was given whole, whether every request still holds the earlier turns, and the
facts reachable at the end: in the final context, or found by ``recall`` 100 turns later.
For recall the run is stored as a finished run stores it (whole results, indexed; helpers
of bench/tool_results.py), in a fresh database (bench/_django.py), followed by 100 turns of
chat; ``recall_passages`` (limit 5) is asked for each fact by its key words.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _django import setup_django  # noqa: E402 — beside this script
from tool_results import FILLER, answer_with, fact_of  # noqa: E402
from tool_tier import WINDOWS, registry, server_tools  # noqa: E402

from contextmgmt.core.budget import usable_input_tokens  # noqa: E402
from contextmgmt.core.guard import ContextGuard  # noqa: E402
from contextmgmt.core.masking import is_masked  # noqa: E402
from contextmgmt.core.messages import ChatMessage, ToolCall  # noqa: E402
from contextmgmt.core.tiers import TOOL_DEFINITIONS_SHARE  # noqa: E402
from contextmgmt.core.tokens import estimate_messages_tokens  # noqa: E402
from fimone.agent.prompts import REACT_SYSTEM  # noqa: E402
from fimone.agent.tools.finder import FINDER_NAME, ToolOffer, definition_tokens  # noqa: E402
from fimone.llm.offline.model import OfflineLLM  # noqa: E402

WAYS = ("summarise-only", "fimone")
WORDS = (
    "the service request returned value table migration deploy region cluster owner "
    "report quarter budget latency error retry cache index shard replica queue worker"
).split()
EARLIER = (
    ("Which regions does the ingest cluster run in?", "Three: eu-west, us-east and ap-south."),
    ("Who owns the nightly migration job?", "The storage team owns it; Priya is on call."),
    ("Is the retry queue drained?", "Yes, it emptied at 04:10 after the cache was warmed."),
)
FIND_QUERY = '{"query": "archive a support ticket"}'


def make_results(count: int, chars: int, rng: random.Random) -> list[tuple[str, str, str]]:
    """(tool, arguments, text) of each result: pages (``fetch_url``) and documents
    (``read_document``) in turn, ~``chars`` characters, fact ``n`` in the middle of ``n``."""
    results = []
    for n in range(count):
        sentence = fact_of(n)[0]
        lines = [f"# Part {n}"]
        while sum(len(line) + 1 for line in lines) < chars:
            lines.append(" ".join(rng.choices(WORDS, k=rng.randint(8, 16))) + ".")
        lines.insert(rng.randint(len(lines) // 3, 2 * len(lines) // 3), sentence)
        text = "\n".join(lines)[: chars + len(sentence)]
        if n % 2 == 0:
            results.append(("fetch_url", json.dumps({"url": f"https://ops.example/{n}"}), text))
        else:
            args = json.dumps({"file": f"report-{n}.pdf", "pages": "1-10"})
            results.append(("read_document", args, text))
    return results


class ListeningSummariser(OfflineLLM):
    """The offline model, keeping the text of every input it is given (``inputs``)."""

    def __init__(self) -> None:
        super().__init__()
        self.inputs: list[tuple[int, str]] = []  # (the fit it served, its input's text)
        self.fit = 0

    async def chat(self, messages, *, tools=None, **opts):
        self.inputs.append((self.fit, "\n".join(m.text() for m in messages)))
        return await super().chat(messages, tools=tools, **opts)


@dataclass(frozen=True)
class WayRun:
    budget: int  # the messages' budget (the input budget less the definitions' tier)
    input_tokens: int
    definition_tokens: int  # over the run
    largest_definitions_share: float  # of the input budget, the largest request's
    summariser_calls: int
    stability: float
    read_summarised: int  # results of answered rounds the summariser was given whole
    unread_summarised: int
    earlier_in_every_request: bool
    strategies: tuple[str, ...]  # what the guard did at each call
    in_context: frozenset[int]  # facts in the final context
    calls: tuple[tuple[str, str, str], ...]  # what the run called, for the store


def serial(message: ChatMessage) -> str:
    return json.dumps(message.to_openai(), sort_keys=True, ensure_ascii=False)


def compaction_point(messages: list[ChatMessage]) -> int:
    return max((i + 1 for i, m in enumerate(messages) if is_masked(m) or m.is_summary), default=0)


async def run(way: str, tools, results, steps: int, window: int, output: int) -> WayRun:
    main_budget = usable_input_tokens(window, output)
    summariser = ListeningSummariser()
    if way == "fimone":
        offer = ToolOffer(tools, main_budget)
        budget = max(1, main_budget - offer.split.tools)
        guard = ContextGuard(compact_llm=summariser, budget=budget)

        def definitions() -> int:
            return offer.tokens()
    else:
        everything = definition_tokens(tools.openai_tools())
        budget = max(1, main_budget - everything)
        guard = ContextGuard(compact_llm=summariser, budget=budget, mask_keep_rounds=None)

        def definitions() -> int:
            return everything

    earlier = [
        ChatMessage(role=role, content=text)
        for question, answer in EARLIER
        for role, text in (("user", question), ("assistant", answer))
    ]
    task = f"Read parts 0 to {2 * steps - 1} and list every value they give."
    messages = [
        ChatMessage(role="system", content=REACT_SYSTEM),
        *earlier,
        ChatMessage(role="user", content=task, pinned=True),
    ]
    previous: list[ChatMessage] | None = None
    total_input = total_definitions = settled = 0
    largest = 0.0
    earlier_kept = True
    made: list[tuple[str, str, str]] = []
    strategies: list[str] = []
    for step in range(steps + 1):
        summariser.fit = step
        messages = list(await guard.check_and_compact(messages, hint="react_iteration"))
        strategies.append(guard.last.strategy if guard.last is not None else "none")
        sent = definitions()
        total_definitions += sent
        largest = max(largest, sent / main_budget)
        total_input += sent + estimate_messages_tokens(messages)
        here = {serial(m) for m in messages}
        earlier_kept = earlier_kept and all(serial(m) in here for m in earlier)
        if previous is not None:
            point = compaction_point(previous)
            settled += len(messages) >= point and all(
                a is b or serial(a) == serial(b)
                for a, b in zip(previous[:point], messages[:point], strict=True)
            )
        previous = list(messages)
        if step == steps:
            break
        round_calls = [
            (f"s{step}_{k}", *results[2 * step + k][:2], results[2 * step + k][2]) for k in (0, 1)
        ]
        if way == "fimone" and step == 0:
            found = await offer.registry.run(FINDER_NAME, FIND_QUERY)
            round_calls.append((f"s{step}_find", FINDER_NAME, FIND_QUERY, found))
        messages.append(
            ChatMessage(
                role="assistant",
                content=None,
                tool_calls=[ToolCall(cid, name, args) for cid, name, args, _ in round_calls],
            )
        )
        for cid, name, args, text in round_calls:
            messages.append(ChatMessage(role="tool", content=text, tool_call_id=cid))
            made.append((name, args, text))
    in_context = "\n".join(m.text() for m in messages if not is_masked(m))
    read = unread = 0
    for fit, text in summariser.inputs:
        for n in range(2 * steps):
            if fact_of(n)[0] in text:
                # Fit ``fit`` runs after step ``fit − 1``'s results: those are not read yet.
                read += n // 2 < fit - 1
                unread += n // 2 == fit - 1
    return WayRun(
        budget=budget,
        input_tokens=total_input + guard.usage.input_tokens,
        definition_tokens=total_definitions,
        largest_definitions_share=largest,
        summariser_calls=guard.summariser_calls,
        stability=settled / steps,
        read_summarised=read,
        unread_summarised=unread,
        earlier_in_every_request=earlier_kept,
        strategies=tuple(strategies),
        in_context=frozenset(n for n in range(2 * steps) if fact_of(n)[0] in in_context),
        calls=tuple(made),
    )


def recalled(owner, way_run: WayRun, facts: int, later_turns: int) -> frozenset[int]:
    """Facts ``recall`` finds after the run is stored as a finished run stores it and
    ``later_turns`` turns of chat follow."""
    from chat import services
    from chat.recall.lookup import recall_passages

    conversation = services.conversation_create(owner=owner, title="ops")
    for question, answer in EARLIER:
        services.user_message_create(conversation=conversation, content=question)
        message = services.assistant_message_start(
            conversation=conversation, run_id=f"e{len(question)}", mode="react"
        )
        services.assistant_message_finish(message=message, content=answer, status="done")
    answer_with(conversation, "Read the parts and list every value.", way_run.calls)
    for turn in range(later_turns):
        services.user_message_create(conversation=conversation, content=f"Turn {turn}: ok?")
        message = services.assistant_message_start(
            conversation=conversation, run_id=f"t{turn}", mode="react"
        )
        services.assistant_message_finish(
            message=message, content=f"{FILLER[turn % 4]} Nothing else.", status="done"
        )
    return frozenset(
        n
        for n in range(facts)
        if any(
            fact_of(n)[2] in p
            for p in recall_passages(conversation_id=conversation.pk, query=fact_of(n)[1])
            if isinstance(p, str)
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--chars", type=int, default=30_000)
    parser.add_argument("--tools", type=int, default=300)
    parser.add_argument("--later-turns", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    facts = 2 * args.steps
    results = make_results(facts, args.chars, random.Random(args.seed))
    served = asyncio.run(server_tools(args.tools))
    tools = registry(served)
    setup_django()
    from django.contrib.auth import get_user_model

    owner = get_user_model().objects.create_user(username="bench", password="x")
    everything = definition_tokens(tools.openai_tools())
    print(
        f"{args.steps} steps of a page (fetch_url) and a document (read_document) of "
        f"~{args.chars:,} characters each, then the answer ({args.steps + 1} model calls); "
        f"{len(served)} server tools + {len(tools) - len(served)} built-in "
        f"({everything:,} tokens of definitions); summariser: the offline model; recall "
        f"{args.later_turns} turns later"
    )
    print(
        f"{'window':>6} {'budget':>7} {'way':<14} {'input tok':>9} {'defs tok':>8} "
        f"{'defs max':>8} {'summ.':>5} {'stable':>6} {'read→summ':>9} {'earlier':>7} "
        f"{'in ctx':>6} {'recall':>6} {'reach':>6}"
    )
    rows = {}
    for window, output in WINDOWS:
        for way in WAYS:
            row = asyncio.run(run(way, tools, results, args.steps, window, output))
            found = recalled(owner, row, facts, args.later_turns)
            rows[window, way] = (row, found)
            print(
                f"{window // 1024:>5}K {row.budget:>7,} {way:<14} {row.input_tokens:>9,} "
                f"{row.definition_tokens:>8,} {row.largest_definitions_share:>8.1%} "
                f"{row.summariser_calls:>5} {row.stability:>6.0%} {row.read_summarised:>9} "
                f"{'yes' if row.earlier_in_every_request else 'no':>7} "
                f"{len(row.in_context):>3}/{facts:<2} {len(found):>3}/{facts:<2} "
                f"{len(row.in_context | found):>3}/{facts:<2}"
            )
    for (window, way), (row, _found) in rows.items():
        print(
            f"  {window // 1024}K {way}: the guard's strategy per call: {' '.join(row.strategies)}"
        )
    print("Goals (fimone):")
    windows = {window // 1024: window for window, _ in WINDOWS}
    at32, _ = rows[windows[32], "fimone"]

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT MET"

    print(
        f"  32K: ≤ 1 summariser call: {at32.summariser_calls} — "
        f"{verdict(at32.summariser_calls <= 1)}"
    )
    print(f"  32K: prefix stability ≥ 0.9: {at32.stability:.2f} — {verdict(at32.stability >= 0.9)}")
    print(
        f"  32K: read results stubbed before any summary: {at32.read_summarised} read results "
        f"given to the summariser whole — {verdict(at32.read_summarised == 0)}"
    )
    for k in (8, 32):
        found = rows[windows[k], "fimone"][1]
        print(
            f"  {k}K: facts only in tool results found by recall {args.later_turns} turns "
            f"later: {len(found)}/{facts} — {verdict(len(found) == facts)}"
        )
    print(
        f"  32K, {len(served)} tools listed: definitions ≤ {TOOL_DEFINITIONS_SHARE:.0%} of the "
        f"budget in every request: largest {at32.largest_definitions_share:.1%} — "
        f"{verdict(at32.largest_definitions_share <= TOOL_DEFINITIONS_SHARE)}"
    )
    print(
        f"  32K, {len(served)} tools listed: the earlier turns' messages in every request — "
        f"{verdict(at32.earlier_in_every_request)}"
    )


if __name__ == "__main__":
    main()
