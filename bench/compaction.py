"""CPU cost of one full LLM compaction, LLM time excluded.

    .venv/bin/python bench/compaction.py [--messages 500] [--calls 30]

A 500-message mixed conversation (requests stating amounts, order ids, URLs, paths, dates,
names and Chinese values; assistant answers; tool rounds returning log excerpts; pasted
logs) is compacted by ``CompactUtils.llm_compact`` to an 8,000-token budget with an
instant fake summariser (it yields to the loop once, as a network call would). Each call
gets a conversation built just before it (no token estimates cached, as after a database
load; the only one alive, as in a server request). The whole compaction is measured:
token counting, units, the transcript split, every summariser call's fit and fact check
(in a worker thread for a source this large; ``process_time`` counts every thread).

Printed per summariser and compactor window: CPU milliseconds per call
(``time.process_time``, median and p95) "cold" (the fact check's per-text caches emptied
before each call: a conversation compacted for the first time, its messages stored without
their facts, as before they were kept), "stored" (the same, each message carrying the facts
found when it was stored, ``factstore.stored_facts`` in ``metadata["facts"]``, and each
user and assistant text the class counts it was stored with, as a database load gives
them: the compaction scans no text and counts only the tool rounds) and "warm" (the same texts
seen before, as when the next request compacts the same conversation again), and the
longest event-loop stall a lag monitor waking every millisecond saw during the cold calls.
Window 60,000 is the fast model's default input budget (one summariser call); window 8,000
forces summarising in rounds. "terse" answers one sentence, so the fact check finds nearly
every fact missing; "faithful" answers with a third of what it is shown (cut to its cap).

Side by side, on the same conversations, the reference design's compaction
(``reference_compact``: FIM One's ``CompactUtils.llm_compact`` as its documentation
describes it: its estimate, system and pinned messages kept, the four newest verbatim, the
rest in one transcript, one summariser call, no fact check), and ``--mix`` picks the
conversation's languages: ``en-zh`` (bench/_mixed.py as it was) or ``fr-es-ja-ru``
(the same shapes with French, Spanish, Japanese and Russian requests), or ``all``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _mixed import MIXES, mixed_conversation  # noqa: E402

from config.loop_monitor import LoopLagMonitor  # noqa: E402
from contextmgmt.core import corrections, factscan, factstore  # noqa: E402
from contextmgmt.core.compact import CompactUtils  # noqa: E402
from contextmgmt.core.llm import LLMResult, Usage  # noqa: E402
from contextmgmt.core.messages import STORED_FACTS, ChatMessage  # noqa: E402
from contextmgmt.core.tokens import (  # noqa: E402
    estimate_messages_tokens,
    stored_counts,
    with_stored_counts,
)
from contextmgmt.core.transcript import fact_source  # noqa: E402

BUDGET = 8_000


def _reference_estimate(text: str) -> int:
    """The reference design's estimate: ASCII 4 characters per token, other 1.5, counted
    character by character in Python (it imports no tokenizer library)."""
    ascii_count = sum(1 for c in text if ord(c) < 128)
    return ascii_count // 4 + int((len(text) - ascii_count) / 1.5)


async def reference_compact(messages: list[ChatMessage], llm, max_tokens: int) -> list:
    """The reference design's LLM compaction: system and pinned messages kept, the four
    newest of the rest verbatim, the older ones summarised in one call, no fact check."""
    before = sum(_reference_estimate(m.text()) + 4 for m in messages)
    if before <= max_tokens:
        return messages
    system = [m for m in messages if m.role == "system"]
    pinned = [m for m in messages if m.pinned and m.role != "system"]
    rest = [m for m in messages if m.role != "system" and not m.pinned]
    old, recent = rest[:-4], rest[-4:]
    transcript = "\n".join(f"{m.role}: {m.text()}" for m in old)
    request = [
        ChatMessage(role="system", content="Summarise the conversation. Keep key facts."),
        ChatMessage(role="user", content=transcript),
    ]
    result = await llm.chat(request, max_tokens=max_tokens // 4)
    summary = ChatMessage(role="system", content="[Conversation summary]\n" + result.message.text())
    out = [*system, summary, *recent, *pinned]
    sum(_reference_estimate(m.text()) + 4 for m in out)  # still too long? (it is not)
    return out


def with_stored_facts(messages: list[ChatMessage]) -> list[ChatMessage]:
    """``messages`` as a database load gives them: each carries the facts found when it
    was stored (what the storing service keeps in its ``facts`` column), and each user
    and assistant text the class counts it was stored with (its ``token_counts`` column,
    ``tokens.with_stored_counts``: not counted again). Tool calls and results are counted
    in the compaction: the database keeps no counts for them."""
    for message in messages:
        message.metadata[STORED_FACTS] = factstore.stored_facts(fact_source(message))
        if message.role in ("user", "assistant") and isinstance(message.content, str):
            with_stored_counts(message, stored_counts(message.content))
    return messages


def storage_cost_ms(count: int, mix: str) -> float:
    """CPU milliseconds per message of finding its facts when it is stored."""
    messages = mixed_conversation(count, languages=mix)
    factstore.stored_facts(fact_source(messages[-1]))  # the tables compiled first
    factscan.clear_cache()
    started = time.process_time()
    for message in messages:
        factstore.stored_facts(fact_source(message))
    return (time.process_time() - started) * 1000 / len(messages)


class InstantSummariser:
    """Answers at once: one sentence ("terse") or a third of its input ("faithful")."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.model_name = f"instant-{kind}"
        self.calls = 0

    async def chat(self, messages, *, tools=None, **opts):
        self.calls += 1
        if self.kind == "terse":
            text = "The user discussed orders, configuration and logs with the assistant."
        else:
            transcript = messages[-1].text()
            text = transcript[: len(transcript) // 3]
        await asyncio.sleep(0)  # a real model answers over the network: the loop runs
        return LLMResult(ChatMessage(role="assistant", content=text), Usage())

    def stream_chat(self, messages, *, tools=None, **opts):
        raise NotImplementedError("compaction only calls chat()")


async def measure_reference(kind: str, count: int, calls: int, mix: str) -> float:
    """Median CPU milliseconds of the reference design's compaction of the same input."""
    llm = InstantSummariser(kind)
    cpu_ms = []
    for _ in range(calls):
        messages = mixed_conversation(count, languages=mix)
        await asyncio.sleep(0.003)
        started = time.process_time()
        await reference_compact(messages, llm, BUDGET)
        cpu_ms.append((time.process_time() - started) * 1000)
    return statistics.median(cpu_ms)


async def measure(kind: str, count: int, calls: int, window: int, mix: str) -> dict[str, float]:
    llm = InstantSummariser(kind)
    monitor = LoopLagMonitor(interval=0.001, threshold=1.0).start()
    figures: dict[str, float] = {}
    result = None
    stall = 0.0
    for phase in ("cold", "stored", "warm"):
        cpu_ms: list[float] = []
        for _ in range(calls):
            # Built just before its call, as a server loads one conversation per request:
            # only its objects are alive for the garbage collector to walk.
            messages = mixed_conversation(count, languages=mix)
            if phase == "stored":
                with_stored_facts(messages)
            if phase != "warm":
                factscan.clear_cache()
                corrections.clear_cache()
            await asyncio.sleep(0.003)  # let the monitor wake between calls
            monitor.reset()  # building the conversation is not the compaction's stall
            started = time.process_time()
            result = await CompactUtils.llm_compact(messages, llm, BUDGET, window_tokens=window)
            cpu_ms.append((time.process_time() - started) * 1000)
            await asyncio.sleep(0.003)
            if phase == "cold":
                stall = max(stall, monitor.max_stall)
        figures["stall"] = stall * 1000
        cpu_ms.sort()
        figures[phase] = statistics.median(cpu_ms)
        figures[f"{phase}_p95"] = cpu_ms[min(len(cpu_ms) - 1, int(len(cpu_ms) * 0.95))]
    await monitor.stop()
    assert result is not None and result.strategy == "llm", result
    figures["llm_calls"] = result.summary_calls
    figures["facts_missing"] = result.facts_missing
    figures["facts_appended"] = result.facts_appended
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=500)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--mix", choices=[*MIXES, "all"], default="all")
    args = parser.parse_args()
    for mix in MIXES if args.mix == "all" else [args.mix]:
        sample = mixed_conversation(args.messages, languages=mix)
        chars = sum(len(m.text()) for m in sample)
        print(
            f"conversation {mix}: {len(sample)} messages, {chars:,} characters, "
            f"~{estimate_messages_tokens(sample):,} tokens; budget {BUDGET:,}; "
            f"{args.calls} calls; facts found at storage "
            f"{storage_cost_ms(args.messages, mix):.3f} ms CPU per message"
        )
        for window in (60_000, 8_000):
            for kind in ("terse", "faithful"):
                r = asyncio.run(measure(kind, args.messages, args.calls, window, mix))
                reference = asyncio.run(measure_reference(kind, args.messages, args.calls, mix))
                print(
                    f"  window {window:,}, {kind}: CPU per call cold median {r['cold']:.1f} ms "
                    f"(p95 {r['cold_p95']:.1f}), stored {r['stored']:.1f} ms "
                    f"(p95 {r['stored_p95']:.1f}), warm {r['warm']:.1f} ms "
                    f"(p95 {r['warm_p95']:.1f}); reference design {reference:.1f} ms; "
                    f"longest loop stall {r['stall']:.1f} ms; summariser calls "
                    f"{r['llm_calls']}; facts missing {r['facts_missing']}, appended "
                    f"{r['facts_appended']}"
                )


if __name__ == "__main__":
    main()
