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
(``time.process_time``, median and p95) "cold" (the fact check's per-text cache emptied
before each call: a conversation compacted for the first time) and "warm" (the same texts
seen before, as when the next request compacts the same conversation again), and the
longest event-loop stall a lag monitor waking every millisecond saw during the cold calls.
Window 60,000 is the fast model's default input budget (one summariser call); window 8,000
forces summarising in rounds. "terse" answers one sentence, so the fact check finds nearly
every fact missing; "faithful" answers with a third of what it is shown (cut to its cap).
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

from _mixed import mixed_conversation  # noqa: E402

from contextmgmt.core import factscan  # noqa: E402
from contextmgmt.core.compact import CompactUtils  # noqa: E402
from contextmgmt.core.llm import LLMResult, Usage  # noqa: E402
from contextmgmt.core.messages import ChatMessage  # noqa: E402
from contextmgmt.core.tokens import estimate_messages_tokens  # noqa: E402
from fimone.loop_monitor import LoopLagMonitor  # noqa: E402

BUDGET = 8_000


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


async def measure(kind: str, count: int, calls: int, window: int) -> dict[str, float]:
    llm = InstantSummariser(kind)
    monitor = LoopLagMonitor(interval=0.001, threshold=1.0).start()
    figures: dict[str, float] = {}
    result = None
    stall = 0.0
    for phase in ("cold", "warm"):
        cpu_ms: list[float] = []
        for _ in range(calls):
            # Built just before its call, as a server loads one conversation per request:
            # only its objects are alive for the garbage collector to walk.
            messages = mixed_conversation(count)
            if phase == "cold":
                factscan.clear_cache()
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
    args = parser.parse_args()
    sample = mixed_conversation(args.messages)
    chars = sum(len(m.text()) for m in sample)
    print(
        f"conversation: {len(sample)} messages, {chars:,} characters, "
        f"~{estimate_messages_tokens(sample):,} tokens; budget {BUDGET:,}; {args.calls} calls"
    )
    for window in (60_000, 8_000):
        for kind in ("terse", "faithful"):
            r = asyncio.run(measure(kind, args.messages, args.calls, window))
            print(
                f"full compaction, window {window:,}, {kind} summariser: CPU per call cold "
                f"median {r['cold']:.1f} ms (p95 {r['cold_p95']:.1f}), warm median "
                f"{r['warm']:.1f} ms (p95 {r['warm_p95']:.1f}); longest loop stall "
                f"{r['stall']:.1f} ms; summariser calls {r['llm_calls']}; facts missing "
                f"{r['facts_missing']}, appended {r['facts_appended']}"
            )


if __name__ == "__main__":
    main()
