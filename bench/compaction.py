"""CPU cost of one full LLM compaction, LLM time excluded.

    .venv/bin/python bench/compaction.py [--messages 500] [--calls 30]

A 500-message mixed conversation (requests stating amounts, order ids, URLs, paths, dates,
names and Chinese values; assistant answers; tool rounds returning log excerpts; pasted
logs) is compacted by ``CompactUtils.llm_compact`` to an 8,000-token budget with an
instant fake summariser. Each call gets a freshly built conversation (no token estimates
cached, as after a database load). Printed per summariser: CPU milliseconds per call
(``time.process_time``: median, min, p95) and the longest event-loop stall seen by a lag
monitor waking every millisecond during the calls. "terse" answers one sentence, so the fact
check finds nearly every fact missing; "faithful" answers with a third of what it is shown,
so the fact check has a long summary to search.
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
        return LLMResult(ChatMessage(role="assistant", content=text), Usage())

    def stream_chat(self, messages, *, tools=None, **opts):
        raise NotImplementedError("compaction only calls chat()")


async def measure(kind: str, count: int, calls: int) -> dict[str, float]:
    llm = InstantSummariser(kind)
    conversations = [mixed_conversation(count) for _ in range(calls)]
    monitor = LoopLagMonitor(interval=0.001, threshold=1.0).start()
    await asyncio.sleep(0.01)
    monitor.reset()
    cpu_ms: list[float] = []
    result = None
    for messages in conversations:
        await asyncio.sleep(0.003)  # let the monitor wake between calls
        started = time.process_time()
        result = await CompactUtils.llm_compact(messages, llm, BUDGET)
        cpu_ms.append((time.process_time() - started) * 1000)
    await asyncio.sleep(0.003)
    await monitor.stop()
    assert result is not None and result.strategy == "llm", result
    cpu_ms.sort()
    return {
        "median": statistics.median(cpu_ms),
        "min": cpu_ms[0],
        "p95": cpu_ms[min(len(cpu_ms) - 1, int(len(cpu_ms) * 0.95))],
        "stall": monitor.max_stall * 1000,
        "llm_calls": llm.calls / calls,
        "facts_missing": result.facts_missing,
        "facts_appended": result.facts_appended,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=500)
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    sample = mixed_conversation(args.messages)
    chars = sum(len(m.text()) for m in sample)
    print(
        f"conversation: {len(sample)} messages, {chars:,} characters, "
        f"~{estimate_messages_tokens(sample):,} tokens; budget {BUDGET:,}; {args.calls} calls"
    )
    for kind in ("terse", "faithful"):
        r = asyncio.run(measure(kind, args.messages, args.calls))
        print(
            f"full compaction ({kind} summariser): CPU per call median {r['median']:.1f} ms, "
            f"min {r['min']:.1f} ms, p95 {r['p95']:.1f} ms; longest loop stall "
            f"{r['stall']:.1f} ms; summariser calls per compaction {r['llm_calls']:.0f}; "
            f"facts missing {r['facts_missing']}, appended {r['facts_appended']}"
        )


if __name__ == "__main__":
    main()
