"""RunRecord keeps the model's reasoning text (bounded) for the thinking part on reload."""

from __future__ import annotations

from chat.runs.record import RECORD_MAX_REASONING_CHARS, RunRecord


def test_reasoning_deltas_are_kept_in_order_and_apart_from_the_steps():
    record = RunRecord()
    record("reasoning.delta", {"text": "First I "})
    record("step", {"iteration": 1, "kind": "tool_call", "name": "calculator"})
    record("reasoning.delta", {"text": "check the sum."})
    stored = record.as_metadata()
    assert stored["reasoning"] == "First I check the sum."
    assert [s["kind"] for s in stored["steps"]] == ["tool_call"]


def test_a_run_without_reasoning_stores_none():
    record = RunRecord()
    record("reasoning.delta", {"text": ""})
    assert "reasoning" not in record.as_metadata()


def test_the_reasoning_kept_is_bounded():
    record = RunRecord()
    for _ in range(3):
        record("reasoning.delta", {"text": "x" * (RECORD_MAX_REASONING_CHARS // 2 + 1)})
    assert len(record.as_metadata()["reasoning"]) == RECORD_MAX_REASONING_CHARS
