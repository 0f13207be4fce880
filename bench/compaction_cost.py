"""Compaction cost with and without persisted summaries.

A scripted conversation (default 200 turns) in which each user turn dictates one fact
("code-N = V") overflows a small history budget. Each turn is one request: the user
message is stored, DbMemory loads the history (compacting with the summariser when it
does not fit), the answer is stored. Mode "every request" never persists summaries, so
the whole overflow is summarised again on each request (FIM One's behaviour); mode
"persisted" stores DbMemory's new summary and starts the next load from it.

Prints, per summariser, the compaction calls and their input tokens in both modes, the
ratio (target <= 20%), and how many of the dictated facts the final context still holds.

    .venv/bin/python bench/compaction_cost.py [--turns 200] [--budget 6000]
"""

from __future__ import annotations

import argparse
import re
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from _django import setup_django  # noqa: E402 — beside this script

FACT = re.compile(r"code-(\d+) = (\d+)")
STATED = re.compile(r"code-(\d+) (?:=|is) (\d+)")


def fact_value(turn: int) -> int:
    return (turn * 7919) % 100_000


class CountingExtractor:
    """A compaction LLM that keeps every fact it is shown (an ideal summariser)."""

    model_name = "counting-extractor"

    async def chat(self, messages, *, tools=None, **opts):
        from contextmgmt.core.compact import CompactUtils
        from contextmgmt.core.llm import LLMResult, Usage
        from contextmgmt.core.messages import ChatMessage

        facts = dict(FACT.findall("\n".join(m.text() for m in messages)))
        listed = "; ".join(f"code-{k} = {v}" for k, v in sorted(facts.items(), key=_num))
        reply = ChatMessage(role="assistant", content=f"The user dictated codes: {listed}.")
        usage = Usage(
            CompactUtils.estimate_messages_tokens(messages),
            CompactUtils.estimate_messages_tokens([reply]),
        )
        return LLMResult(message=reply, usage=usage)

    def stream_chat(self, messages, *, tools=None, **opts):
        raise NotImplementedError("compaction only calls chat()")


def _num(item: tuple[str, str]) -> int:
    return int(item[0])


@dataclass
class Outcome:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    facts_kept: int = 0
    seconds: float = 0.0


def run(owner, llm, *, persist: bool, turns: int, budget: int) -> Outcome:
    from asgiref.sync import async_to_sync

    from chat.compaction.summaries import summary_save
    from chat.models import Conversation, Message
    from contextmgmt.db_memory import DbMemory

    conversation = Conversation.objects.create(owner=owner, title=f"bench persist={persist}")
    outcome = Outcome()
    messages = []
    started = time.perf_counter()
    for turn in range(turns):
        query = Message.objects.create(
            conversation=conversation,
            role="user",
            kind="query",
            status="pending",
            content=f"Turn {turn}: please remember code-{turn} = {fact_value(turn)}. "
            + "Some context about the project and what we discussed so far. " * 3,
        )
        memory = DbMemory(conversation.id, budget, compact_llm=llm, use_summaries=persist)
        messages = async_to_sync(memory.get_messages)()
        result = memory.last.result
        # A summary call that fell back to truncation still cost its tokens.
        if result is not None and (result.strategy == "llm" or result.usage.input_tokens):
            outcome.calls += 1
            outcome.input_tokens += result.usage.input_tokens
            outcome.output_tokens += result.usage.output_tokens
        if persist and memory.last.new_summary is not None:
            summary_save(conversation_id=conversation.id, **asdict(memory.last.new_summary))
        Message.objects.filter(pk=query.pk).update(status="done")
        Message.objects.create(
            conversation=conversation,
            role="assistant",
            kind="answer",
            content=f"Noted: code-{turn} is {fact_value(turn)}. Anything else about the project?",
        )
    outcome.seconds = time.perf_counter() - started
    final_text = "\n".join(m.text() for m in messages)
    outcome.facts_kept = len(
        {int(k) for k, v in STATED.findall(final_text) if int(v) == fact_value(int(k))}
    )
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--budget", type=int, default=6_000, help="history budget (tokens)")
    args = parser.parse_args()
    data_dir = setup_django()
    try:
        from django.contrib.auth import get_user_model

        from fimone.llm.offline.model import OfflineLLM

        owner = get_user_model().objects.create_user(username="bench")
        print(
            f"{args.turns} turns, history budget {args.budget:,} tokens; "
            f"facts the final context could hold: {args.turns - 1}"
        )
        for label, llm in (
            ("ideal extractor", CountingExtractor()),
            ("offline model", OfflineLLM()),
        ):
            every = run(owner, llm, persist=False, turns=args.turns, budget=args.budget)
            kept = run(owner, llm, persist=True, turns=args.turns, budget=args.budget)
            ratio = kept.input_tokens / every.input_tokens if every.input_tokens else float("nan")
            print(f"\nsummariser: {label}")
            print(
                f"  {'mode':<22}{'calls':>7}{'input tok':>12}{'output tok':>12}"
                f"{'facts kept':>12}{'wall s':>8}"
            )
            for name, o in (("re-summarise each req", every), ("persisted summaries", kept)):
                print(
                    f"  {name:<22}{o.calls:>7}{o.input_tokens:>12,}{o.output_tokens:>12,}"
                    f"{o.facts_kept:>12}{o.seconds:>8.2f}"
                )
            verdict = "meets" if ratio <= 0.20 else "MISSES"
            print(
                f"  input-token ratio persisted / every request: {ratio:.1%} "
                f"({verdict} the <= 20% target)"
            )
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
