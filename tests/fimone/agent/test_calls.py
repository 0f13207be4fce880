"""Per-call time limits of the engines' LLM calls (issue 9): fimone.agent.calls.

``ctx.llm_timeout`` bounds a ``chat()`` call, the wait for each chunk of a stream, and (×5
unless ``llm_stream_timeout`` says otherwise) a whole stream; compaction calls get at most
as long. No timing assertions: the limits are short and the tests check what ended the call.
"""

from __future__ import annotations

import asyncio
import itertools

import pytest

from contextmgmt.core.guard import DEFAULT_COMPACT_TIMEOUT
from contextmgmt.core.llm import LLMResult, LLMTimeout, StreamChunk, Usage
from contextmgmt.core.messages import ChatMessage
from fimone.agent import run_dag, run_react
from fimone.agent.calls import (
    STREAM_LIMIT_FACTOR,
    chat_once,
    compact_limit,
    stream_limit_for,
    stream_reply,
)
from tests.support.fake_llm import FakeLLM, Hang

QUESTION = [ChatMessage(role="user", content="Tell me a story.")]


class TricklingLLM:
    """Streams a word every ``gap`` seconds, forever (a provider that never finishes)."""

    model_name = "trickle"

    def __init__(self, gap: float, stall_after: int | None = None) -> None:
        self.gap = gap
        self.stall_after = stall_after

    async def chat(self, messages, *, tools=None, **opts):
        raise AssertionError("not used")

    async def stream_chat(self, messages, *, tools=None, **opts):
        for n in itertools.count():
            if self.stall_after is not None and n == self.stall_after:
                await asyncio.sleep(3600)
            await asyncio.sleep(self.gap)
            yield StreamChunk(text="word ")


async def collect_stream(llm, **limits) -> tuple[list[str], BaseException | None]:
    received: list[str] = []

    async def on_text(text: str) -> None:
        received.append(text)

    try:
        await stream_reply(llm, QUESTION, on_text=on_text, **limits)
    except LLMTimeout as exc:
        return received, exc
    return received, None


async def test_a_trickling_stream_is_ended_by_the_whole_stream_limit():
    """Each chunk comes well within the per-chunk limit; the whole-stream bound ends it."""
    received, error = await collect_stream(TricklingLLM(gap=0.01), time_limit=1.0, stream_limit=0.2)
    assert isinstance(error, LLMTimeout) and "still streaming after 0.2 seconds" in str(error)
    assert received  # what was streamed reached the user before the limit


async def test_a_stalled_stream_is_ended_by_the_per_chunk_limit():
    # The limit is far above the 1 ms between words: a loaded machine's scheduling delay
    # must not end the stream before it stalls.
    received, error = await collect_stream(
        TricklingLLM(gap=0.001, stall_after=3), time_limit=1.0, stream_limit=30.0
    )
    assert isinstance(error, LLMTimeout) and "stopped streaming for 1 seconds" in str(error)
    assert received == ["word "] * 3


async def test_a_stream_within_its_limits_returns_text_and_usage():
    llm = FakeLLM().enqueue("Once upon a time.")
    received, error = await collect_stream(llm, time_limit=5.0)
    assert error is None and "".join(received) == "Once upon a time."


@pytest.mark.parametrize(
    "time_limit, stream_limit, expected",
    [
        (None, None, None),
        (10.0, None, 10.0 * STREAM_LIMIT_FACTOR),
        (10.0, 25.0, 25.0),
        (None, 25.0, 25.0),
    ],
)
def test_stream_limit_defaults_to_a_multiple_of_the_call_limit(time_limit, stream_limit, expected):
    assert stream_limit_for(time_limit, stream_limit) == expected


@pytest.mark.parametrize(
    "time_limit, expected",
    [
        (None, DEFAULT_COMPACT_TIMEOUT),
        (5.0, 5.0),
        (DEFAULT_COMPACT_TIMEOUT * 2, DEFAULT_COMPACT_TIMEOUT),
    ],
)
def test_compaction_gets_at_most_the_call_limit(time_limit, expected):
    assert compact_limit(time_limit) == expected


async def test_chat_once_bounds_the_whole_call():
    with pytest.raises(LLMTimeout, match="no reply within 0.05 seconds"):
        await chat_once(FakeLLM().enqueue(Hang()), QUESTION, time_limit=0.05)


async def test_react_answer_stream_honours_the_run_stream_limit(build_context, events):
    """An empty tool-free reply makes the loop stream the answer (RR.2) — from a provider
    that trickles forever: ctx.llm_stream_timeout ends it, the partial text was streamed."""

    class EmptyThenTrickle(TricklingLLM):
        async def chat(self, messages, *, tools=None, **opts):
            return LLMResult(ChatMessage(role="assistant", content=""), Usage(1, 0))

    llm = EmptyThenTrickle(gap=0.01)
    ctx = build_context(llm, llm_timeout=1.0, llm_stream_timeout=0.2)
    with pytest.raises(LLMTimeout, match="still streaming"):
        await run_react(ctx)
    assert events.answer_text().startswith("word ")


def long_history() -> list[ChatMessage]:
    history = []
    for i in range(12):
        history.append(ChatMessage(role="user", content=f"Question {i}: " + "detail " * 300))
        history.append(ChatMessage(role="assistant", content=f"Answer {i}: " + "fact " * 300))
    return history


async def test_a_hung_compaction_meets_the_run_limit_and_falls_back(
    build_context, events, spy_guards
):
    """The guard's compaction call honours llm_timeout too; a hung one falls back to
    truncation (R3.7) and the run answers."""
    ctx = build_context(
        FakeLLM().enqueue("Forty-two."),
        compact_llm=FakeLLM().enqueue(Hang()),
        history=long_history(),
        main_budget=4_000,
        llm_timeout=0.05,
    )
    outcome = await run_react(ctx)
    assert [g.compact_timeout for g in spy_guards] == [0.05]
    assert events.of("compact")[0]["strategy"] == "truncate"
    assert outcome.answer == "Forty-two."


async def test_every_guard_of_a_dag_run_gets_the_run_limit(build_context, spy_guards):
    plan = '{"steps": [{"id": "s1", "task": "t", "depends_on": []}]}'
    verdict = '{"achieved": true, "confidence": 0.9, "reason": "ok"}'
    llm = FakeLLM().enqueue(plan, verdict, "Answer.")
    await run_dag(build_context(llm, fast_llm=FakeLLM(default="r"), llm_timeout=7.0))
    assert len(spy_guards) == 2  # the step's and the final answer's
    assert {g.compact_timeout for g in spy_guards} == {7.0}
