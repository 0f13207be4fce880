"""Run events (publishing, failures as client errors) and usage metering."""

from __future__ import annotations

import asyncio
import itertools
import weakref

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


async def next_turns_of_the_loop(layer: RecordingLayer, count: int) -> None:
    sent = len(layer.sent)
    for _ in range(50):
        if len(layer.sent) >= sent + count:
            return
        await asyncio.sleep(0)


async def test_deltas_are_merged_and_never_overtaken():
    layer = RecordingLayer()
    publish = EventPublisher(layer, "c1", flush_seconds=3600)
    for piece in ["Hel", "lo"]:  # one read of the model's stream
        await publish("answer.delta", {"text": piece})
    await next_turns_of_the_loop(layer, 1)
    for piece in [" wor", "ld"]:
        await publish("answer.delta", {"text": piece})
    await publish("step", {"iteration": 2, "kind": "thought"})
    await publish("answer.delta", {"text": "!"})
    await publish("done", {"message_id": 7})
    assert events(layer) == [
        # After a quiet spell, the text goes out at the loop's next turn (time to first
        # token) with what arrived with it; the rest waits to be merged.
        {"type": "answer.delta", "text": "Hello"},
        {"type": "answer.delta", "text": " world"},
        {"type": "step", "iteration": 2, "kind": "thought"},
        {"type": "answer.delta", "text": "!"},
        {"type": "done", "message_id": 7},
    ]
    assert {group for group, _ in layer.sent} == {conversation_group("c1")}


async def test_a_fast_models_whole_answer_read_at_once_is_one_event():
    layer = RecordingLayer()
    publish = EventPublisher(layer, "c1", flush_seconds=0.025)
    for piece in ["The ", "answer ", "is ", "42."]:
        await publish("answer.delta", {"text": piece})
    await publish("done", {"message_id": 7})
    assert events(layer) == [
        {"type": "answer.delta", "text": "The answer is 42."},
        {"type": "done", "message_id": 7},
    ]


async def test_buffered_text_is_sent_by_the_timer_without_another_event():
    layer = RecordingLayer()
    publish = EventPublisher(layer, "c1", flush_seconds=0)
    await publish("answer.delta", {"text": "streaming"})
    for _ in range(50):
        if layer.sent:
            break
        await asyncio.sleep(0)
    assert events(layer) == [{"type": "answer.delta", "text": "streaming"}]


async def test_a_retract_follows_the_text_it_takes_back_and_trims_the_published_text():
    layer = RecordingLayer()
    recorded = []
    publish = EventPublisher(
        layer, "c1", flush_seconds=3600, on_sent=lambda t, p: recorded.append(t)
    )
    await publish("answer.delta", {"text": "Let me "})
    await next_turns_of_the_loop(layer, 1)
    await publish("answer.delta", {"text": "check. "})
    await publish("answer.retract", {"iteration": 1, "chars": 14, "text": "Let me check."})
    await publish("answer.delta", {"text": "It is 42."})
    await publish.flush()
    assert [e["type"] for e in events(layer)] == [
        "answer.delta",
        "answer.delta",
        "answer.retract",
        "answer.delta",
    ]
    assert "".join(publish.published_text) == "It is 42."  # what a joining socket gets
    assert recorded == ["answer.retract"]  # the record sees it (as the step's thought)


async def test_dag_step_progress_is_merged_per_step():
    layer = RecordingLayer()
    publish = EventPublisher(layer, "c1", flush_seconds=3600)
    await publish("answer.delta", {"text": "x"})  # the first text goes out at once
    for step, piece in [("s1", "a"), ("s1", "b"), ("s2", "c"), ("s1", "d")]:
        await publish("dag.step.delta", {"id": step, "round": 0, "text": piece})
    await publish.flush()
    assert events(layer)[1:] == [
        {"type": "dag.step.delta", "id": "s1", "round": 0, "text": "ab"},
        {"type": "dag.step.delta", "id": "s2", "round": 0, "text": "c"},
        {"type": "dag.step.delta", "id": "s1", "round": 0, "text": "d"},
    ]
    assert publish.published_text == ["x"]  # step progress is not the answer


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
        got: list = []
        for e in events(layer):  # text events in a row read as one text
            if e["type"] != "answer.delta":
                got.append(e["type"])
            elif got and isinstance(got[-1], list):
                got[-1].append(e["text"])
            else:
                got.append([e["text"]])
        joined = ["".join(x) if isinstance(x, list) else x for x in got]
        return joined, ["".join(x) if isinstance(x, list) else x for x in expected]

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
    # Every call the provider reported usage for is a calibration sample, streams included.
    assert llm.reported_input == result.usage.input_tokens + streamed.input_tokens
    assert llm.estimated_input > 0


async def test_estimated_usage_is_counted_but_never_a_calibration_sample():
    class EstimatingLLM(FakeLLM):
        async def chat(self, messages, *, tools=None, **opts):
            result = await super().chat(messages, tools=tools, **opts)
            result.usage.estimated = True
            return result

    llm = MeteredLLM(EstimatingLLM().enqueue("one"))
    await llm.chat([ChatMessage(role="user", content="x" * 800)])
    assert llm.usage.input_tokens > 0 and llm.usage.estimated
    assert (llm.estimated_input, llm.reported_input) == (0, 0)
    totals = usage_totals(llm.usage, Usage())
    assert totals["estimated"] is True


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


class TimedLayer(RecordingLayer):
    """Records when each event went out (loop time)."""

    def __init__(self) -> None:
        super().__init__()
        self.at: list[float] = []

    async def group_send(self, group: str, message: dict) -> None:
        self.at.append(asyncio.get_running_loop().time())
        await super().group_send(group, message)


@pytest.fixture
def no_other_streams_in_this_process(monkeypatch):
    """The process's count of streams starts from none: publishers other tests of this
    worker left streaming must not share the budget of the test's own."""
    from chat.runs import events as events_module

    monkeypatch.setattr(events_module, "_streaming", weakref.WeakKeyDictionary())
    monkeypatch.setattr(events_module, "_pruning", events_module._Pruning())
    return events_module


async def test_many_streams_at_once_share_one_budget_of_delta_events(
    no_other_streams_in_this_process,
):
    """A busy process: pieces arrive further apart than the flush time. Each stream's deltas
    then go out at most once per its share of the process's budget, not one per piece."""
    events_module = no_other_streams_in_this_process

    streams = 40
    wait = streams / events_module.DELTA_EVENTS_PER_SECOND  # 0.1 s for 40 streams
    layers = [TimedLayer() for _ in range(streams)]
    publishers = [
        EventPublisher(layer, f"c{i}", flush_seconds=0.001) for i, layer in enumerate(layers)
    ]

    async def stream(publish):
        for _ in range(15):
            await publish("answer.delta", {"text": "ab"})
            await asyncio.sleep(0.01)  # ten times the flush time between pieces

    await asyncio.gather(*(stream(p) for p in publishers))
    assert events_module.streams_now() == streams
    for publish in publishers:
        await publish("done", {})
    assert events_module.streams_now() == 0  # a stream that ended no longer counts

    for layer in layers:
        sent = events(layer)
        assert "".join(e["text"] for e in sent if e["type"] == "answer.delta") == "ab" * 15
        delta_times = [
            t for t, e in zip(layer.at, sent, strict=True) if e["type"] == "answer.delta"
        ]
        # From the second event on (by then all 40 stream) up to the one ``done`` flushed,
        # every gap respects the shared wait.
        gaps = [b - a for a, b in itertools.pairwise(delta_times[1:-1])]
        assert all(gap >= wait * 0.9 for gap in gaps), gaps
        assert len(delta_times) < 15  # far fewer events than pieces


async def test_a_lone_stream_keeps_the_flush_time(no_other_streams_in_this_process):
    layer = TimedLayer()
    publish = EventPublisher(layer, "c1", flush_seconds=0.001)
    for _ in range(10):
        await publish("answer.delta", {"text": "x"})
        await asyncio.sleep(0.01)
    await publish("done", {})
    # Pieces 10 ms apart, flush time 1 ms: alone, every piece goes out as it comes.
    assert [e["type"] for e in events(layer)].count("answer.delta") == 10


async def test_a_stream_whose_run_never_ended_stops_counting_once_idle(
    no_other_streams_in_this_process, monkeypatch
):
    """A run that died mid-answer never sends the event that ends its stream; it must not
    slow the process's other streams for good (RX.4)."""
    events_module = no_other_streams_in_this_process
    monkeypatch.setattr(events_module, "STREAM_IDLE_SECONDS", 0.05)
    abandoned = EventPublisher(TimedLayer(), "dead", flush_seconds=0.001)
    await abandoned("answer.delta", {"text": "half an ans"})
    assert events_module.streams_now() == 1

    await asyncio.sleep(0.1)
    assert events_module.streams_now() == 0  # still alive, no longer streaming

    await abandoned("answer.delta", {"text": "wer"})  # it streams again: it counts again
    assert events_module.streams_now() == 1
    await abandoned("done", {})
    assert events_module.streams_now() == 0
