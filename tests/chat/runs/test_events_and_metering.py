"""Run events (publishing, failures as client errors) and usage metering."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chat.runs.events import EventPublisher, conversation_group, failure_of
from chat.runs.metering import MeteredLLM, usage_totals
from contextmgmt.core.llm import ContextOverflow, LLMError, LLMTimeout, Usage
from contextmgmt.core.messages import ChatMessage
from tests.support.fake_llm import FakeLLM


class RecordingLayer:
    def __init__(self) -> None:
        self.sent: list[tuple[str, dict]] = []

    async def group_send(self, group: str, message: dict) -> None:
        await asyncio.sleep(0)  # a real layer yields here
        self.sent.append((group, message["event"]))


def events(layer: RecordingLayer) -> list[dict]:
    return [event for _, event in layer.sent]


async def test_deltas_are_merged_and_never_overtaken():
    layer = RecordingLayer()
    seen = []
    publish = EventPublisher(
        layer, "c1", flush_seconds=3600, on_event=lambda t, p: seen.append((t, p))
    )
    for piece in ["Hel", "lo", " wor", "ld"]:
        await publish("answer.delta", {"text": piece})
    await publish("step", {"iteration": 2, "kind": "thought"})
    await publish("answer.delta", {"text": "!"})
    await publish("done", {"message_id": 7})
    assert events(layer) == [
        {"type": "answer.delta", "text": "Hello world"},
        {"type": "step", "iteration": 2, "kind": "thought"},
        {"type": "answer.delta", "text": "!"},
        {"type": "done", "message_id": 7},
    ]
    assert {group for group, _ in layer.sent} == {conversation_group("c1")}
    # The run sees every event as emitted (it keeps the partial answer from them).
    assert [t for t, _ in seen] == ["answer.delta"] * 4 + ["step", "answer.delta", "done"]


async def test_buffered_text_is_sent_by_the_timer_without_another_event():
    layer = RecordingLayer()
    publish = EventPublisher(layer, "c1", flush_seconds=0)
    await publish("answer.delta", {"text": "streaming"})
    for _ in range(50):
        if layer.sent:
            break
        await asyncio.sleep(0)
    assert events(layer) == [{"type": "answer.delta", "text": "streaming"}]


async def test_empty_deltas_send_nothing():
    layer = RecordingLayer()
    publish = EventPublisher(layer, "c1", flush_seconds=3600)
    await publish("answer.delta", {"text": ""})
    await publish.flush()
    assert layer.sent == []


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.one_of(st.text(min_size=1, max_size=5), st.sampled_from(["step", "compact"])),
        max_size=30,
    )
)
def test_order_and_text_survive_any_interleaving(script):
    """Property: the concatenated text between other events is exactly what was emitted."""

    async def run():
        layer = RecordingLayer()
        publish = EventPublisher(layer, "c", flush_seconds=3600)
        expected: list = []
        for item in script:
            if item in ("step", "compact"):
                expected.append(item)
                await publish(item, {})
            else:
                if expected and isinstance(expected[-1], list):
                    expected[-1].append(item)
                else:
                    expected.append([item])
                await publish("answer.delta", {"text": item})
        await publish.flush()
        got = [e["text"] if e["type"] == "answer.delta" else e["type"] for e in events(layer)]
        return got, ["".join(x) if isinstance(x, list) else x for x in expected]

    got, want = asyncio.run(run())
    assert got == want


async def test_metered_llm_counts_chat_and_stream_usage():
    fake = FakeLLM(model_name="m1")
    fake.enqueue("one two three", "four five")
    shared = Usage()
    llm = MeteredLLM(fake, shared)
    query = [ChatMessage(role="user", content="x" * 800)]
    result = await llm.chat(query)
    chunks = [c async for c in llm.stream_chat(query)]
    streamed = chunks[-1].usage
    assert shared.input_tokens == result.usage.input_tokens + streamed.input_tokens
    assert shared.output_tokens == result.usage.output_tokens + streamed.output_tokens
    assert llm.model_name == "m1"
    assert llm.calls is fake.calls  # everything else is forwarded
    assert llm.reported_input == result.usage.input_tokens  # chat() calls only
    assert llm.estimated_input > 0


def test_usage_totals_include_compaction():
    assert usage_totals(Usage(100, 20), Usage(30, 5)) == {
        "input_tokens": 130,
        "output_tokens": 25,
        "compaction_input_tokens": 30,
        "compaction_output_tokens": 5,
    }


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (ContextOverflow("maximum context length is 8192"), "context_overflow"),
        (LLMTimeout("after 120s"), "llm_timeout"),
        (LLMError("odd"), "llm_error"),
        (KeyError("internal detail"), "internal_error"),
    ],
)
def test_failures_have_stable_codes_and_say_the_message_is_saved(exc, code):
    failure = failure_of(exc)
    assert failure["code"] == code
    assert "saved" in failure["message"]
    if code == "internal_error":
        assert "internal detail" not in failure["message"]
    else:
        assert str(exc) in failure["message"]
