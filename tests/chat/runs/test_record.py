"""RunRecord: the bounded record of a run's steps and DAG plan kept for a reload.
Pure Python: no database, no channel layer."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from chat.runs.events import EventPublisher
from chat.runs.record import (
    RECORD_MAX_ROUNDS,
    RECORD_MAX_STEPS,
    RECORD_TEXT_CHARS,
    RunRecord,
)
from fimone.agent.loop import PREVIEW_CHARS, preview


def dag_run(record: RunRecord) -> None:
    """Two rounds: the first not achieved (a re-plan), the second achieved."""
    record("dag.plan", {"steps": [{"id": "s1", "task": "Look", "depends_on": []}], "round": 0})
    record("dag.step", {"id": "s1", "status": "running", "round": 0})
    record("step", {"iteration": 1, "kind": "tool_call", "name": "calc", "step_id": "s1"})
    record("dag.step", {"id": "s1", "status": "error", "round": 0, "error": "no data"})
    record("dag.analysis", {"achieved": False, "confidence": 0.2, "reason": "prices missing"})
    record("dag.replan", {"round": 1})
    record(
        "dag.plan",
        {
            "steps": [
                {"id": "a", "task": "Find apples", "depends_on": []},
                {"id": "b", "task": "Compare", "depends_on": ["a"]},
            ],
            "round": 1,
            "fallback": False,
        },
    )
    record("dag.step", {"id": "a", "status": "done", "round": 1, "result": "2 EUR"})
    record("dag.analysis", {"achieved": True, "confidence": 0.9, "reason": "done"})


def test_empty_run_stores_nothing():
    assert RunRecord().as_metadata() == {}


def test_react_steps_and_compaction_notes_in_order_answer_deltas_ignored():
    record = RunRecord()
    record("step", {"iteration": 1, "kind": "thought", "text": "Let me compute."})
    record("answer.delta", {"text": "ignored"})
    record("step", {"iteration": 1, "kind": "tool_call", "name": "calc", "arguments": '{"x": 1}'})
    record("compact", {"scope": "history", "strategy": "llm", "original_count": 9})
    record(
        "compact",
        {"scope": "iteration", "strategy": "truncate", "original_count": 7, "compacted_count": 3},
    )
    record("step", {"iteration": 1, "kind": "tool_result", "name": "calc", "result": "42"})

    steps = record.as_metadata()["steps"]
    assert [s["kind"] for s in steps] == ["thought", "tool_call", "compact", "tool_result"]
    assert steps[1]["arguments"] == '{"x": 1}' and steps[3]["result"] == "42"
    # The history compaction has its own place (the RU.1 divider), not a step note.
    assert steps[2]["scope"] == "iteration" and steps[2]["compacted_count"] == 3
    seqs = [s["seq"] for s in steps]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert "dag" not in record.as_metadata()


def test_dag_rounds_keep_final_statuses_verdicts_and_replans():
    record = RunRecord()
    dag_run(record)
    dag = record.as_metadata()["dag"]

    first, second = dag["rounds"]
    assert first["steps"][0]["status"] == "error" and first["steps"][0]["error"] == "no data"
    assert first["analysis"]["achieved"] is False
    assert first["analysis"]["reason"] == "prices missing"
    assert [(s["id"], s["status"]) for s in second["steps"]] == [("a", "done"), ("b", "pending")]
    assert second["steps"][0]["result"] == "2 EUR" and "error" not in second["steps"][0]
    assert second["steps"][1]["depends_on"] == ["a"]
    assert second["analysis"]["achieved"] is True
    assert [r["round"] for r in dag["replans"]] == [1]
    # The order a client replays in: plan 0 < its step's tool call < its final status <
    # verdict < re-plan < plan 1.
    tool_call = record.as_metadata()["steps"][0]
    assert tool_call["step_id"] == "s1"
    order = [
        first["seq"],
        tool_call["seq"],
        first["steps"][0]["seq"],
        first["analysis"]["seq"],
        dag["replans"][0]["seq"],
        second["seq"],
    ]
    assert order == sorted(order)


def test_a_later_status_replaces_the_earlier_result():
    record = RunRecord()
    record("dag.plan", {"steps": [{"id": "s1", "task": "t", "depends_on": []}]})
    record("dag.step", {"id": "s1", "status": "error", "error": "boom"})
    record("dag.step", {"id": "s1", "status": "done", "result": "fine"})
    step = record.as_metadata()["dag"]["rounds"][0]["steps"][0]
    assert (step["status"], step["result"]) == ("done", "fine") and "error" not in step


def test_texts_are_cut_at_the_bound():
    record = RunRecord()
    record("step", {"iteration": 1, "kind": "tool_result", "name": "n", "result": "x" * 10_000})
    record("dag.plan", {"steps": [{"id": "s1", "task": "t" * 5_000, "depends_on": []}]})
    record("dag.analysis", {"achieved": None, "confidence": None, "reason": "r" * 5_000})
    meta = record.as_metadata()
    result = meta["steps"][0]["result"]
    assert result.startswith("x" * RECORD_TEXT_CHARS) and "8,000 more chars" in result
    assert len(meta["dag"]["rounds"][0]["steps"][0]["task"]) < RECORD_TEXT_CHARS + 40
    assert len(meta["dag"]["rounds"][0]["analysis"]["reason"]) < RECORD_TEXT_CHARS + 40


def test_a_text_the_engine_already_cut_keeps_its_count_of_what_is_missing():
    """A thought cut by the engine's preview is not cut again: its marker said "20 more
    chars" where thousands were missing."""
    whole = "essay " * 1_100  # 6,600 characters
    record = RunRecord()
    record("answer.retract", {"iteration": 1, "chars": len(whole), "text": preview(whole)})
    cut_twice = "y" * (RECORD_TEXT_CHARS + 1_000) + "… [500 more chars]"
    record("step", {"iteration": 1, "kind": "tool_result", "result": cut_twice})
    thought, result = record.as_metadata()["steps"]
    assert thought["text"] == preview(whole)
    assert thought["text"].endswith(f"… [{len(whole) - PREVIEW_CHARS:,} more chars]")
    # Longer than the bound before its marker: cut, and the count covers both cuts.
    assert result["result"] == "y" * RECORD_TEXT_CHARS + "… [1,500 more chars]"


def test_long_runs_keep_the_first_and_newest_steps_and_count_the_rest():
    record = RunRecord()
    total = RECORD_MAX_STEPS + 37
    for i in range(total):
        record("step", {"iteration": i, "kind": "thought", "text": f"t{i}"})
    meta = record.as_metadata()
    kept = [s for s in meta["steps"] if s["kind"] != "omitted"]
    marker = [s for s in meta["steps"] if s["kind"] == "omitted"]
    assert len(kept) == RECORD_MAX_STEPS
    assert meta["steps_omitted"] == 37 == marker[0]["count"]
    assert kept[0]["text"] == "t0" and kept[-1]["text"] == f"t{total - 1}"
    # The marker sits in the gap, in seq order.
    seqs = [s["seq"] for s in meta["steps"]]
    assert seqs == sorted(seqs)


def test_rounds_are_bounded():
    record = RunRecord()
    for n in range(RECORD_MAX_ROUNDS + 4):
        record("dag.plan", {"steps": [{"id": "s", "task": "t", "depends_on": []}], "round": n})
        record("dag.replan", {"round": n + 1})
    dag = record.as_metadata()["dag"]
    assert len(dag["rounds"]) == RECORD_MAX_ROUNDS
    assert dag["rounds"][-1]["round"] == RECORD_MAX_ROUNDS + 3
    assert len(dag["replans"]) == RECORD_MAX_ROUNDS


def test_malformed_events_never_raise():
    record = RunRecord()
    record("dag.step", {"id": "s1", "status": "done"})  # before any plan
    record("dag.analysis", {"achieved": True})  # before any plan
    record("dag.plan", {"steps": None})
    record("dag.plan", {"steps": ["not a dict", {"id": 3, "task": None, "depends_on": None}]})
    record("step", {"kind": "tool_call", "arguments": {"a": [1, 2]}})
    meta = record.as_metadata()
    assert meta["steps"][0]["arguments"] == '{"a": [1, 2]}'
    assert meta["dag"]["rounds"][-1]["steps"] == [
        {"id": "3", "task": "", "depends_on": [], "status": "pending"}
    ]


def test_version_moves_only_on_recorded_events():
    record = RunRecord()
    record("answer.delta", {"text": "x"})
    record("compact", {"scope": "history"})
    assert record.version == 0
    record("step", {"kind": "thought", "text": "t"})
    assert record.version == 1


events = st.one_of(
    st.tuples(
        st.just("step"),
        st.fixed_dictionaries(
            {"kind": st.sampled_from(["tool_call", "tool_result", "thought"]), "text": st.text()}
        ),
    ),
    st.tuples(
        st.just("dag.plan"),
        st.fixed_dictionaries(
            {
                "steps": st.lists(
                    st.fixed_dictionaries(
                        {"id": st.sampled_from("abc"), "task": st.text(), "depends_on": st.just([])}
                    ),
                    max_size=4,
                )
            }
        ),
    ),
    st.tuples(
        st.just("dag.step"),
        st.fixed_dictionaries(
            {"id": st.sampled_from("abc"), "status": st.sampled_from(["running", "done"])}
        ),
    ),
    st.tuples(
        st.just("dag.step.delta"),
        st.fixed_dictionaries({"id": st.sampled_from("abc"), "text": st.text(max_size=900)}),
    ),
    st.tuples(st.just("dag.analysis"), st.fixed_dictionaries({"achieved": st.booleans()})),
    st.tuples(st.just("dag.replan"), st.fixed_dictionaries({"round": st.integers(1, 5)})),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(events, max_size=120))
def test_any_event_sequence_gives_bounded_json_with_unique_ordered_seqs(sequence):
    record = RunRecord()
    for event_type, payload in sequence:
        record(event_type, payload)
    meta = record.as_metadata()
    json.dumps(meta)  # storable as JSON metadata
    steps = meta.get("steps", [])
    assert len([s for s in steps if s["kind"] != "omitted"]) <= RECORD_MAX_STEPS
    assert [s["seq"] for s in steps] == sorted(s["seq"] for s in steps)
    seqs = [s["seq"] for s in steps]
    for round_ in (meta.get("dag") or {}).get("rounds", []):
        seqs.append(round_["seq"])
        seqs += [s["seq"] for s in round_["steps"] if "seq" in s]
        if round_["analysis"]:
            seqs.append(round_["analysis"]["seq"])
    assert len(seqs) == len(set(seqs))
    for round_ in (meta.get("dag") or {}).get("rounds", []):
        for step in round_["steps"]:
            assert len(step.get("progress", "")) <= RECORD_TEXT_CHARS
            assert "progress" not in step or step["status"] == "running"


class RecordingLayer:
    def __init__(self) -> None:
        self.sent: list[dict] = []

    async def group_send(self, group, message):
        self.sent.append(message["event"])


async def test_publisher_records_what_it_sends_and_no_deltas():
    record = RunRecord()
    layer = RecordingLayer()
    publisher = EventPublisher(layer, "c1", flush_seconds=60, on_sent=record)
    await publisher("answer.delta", {"text": "Hi"})
    await publisher("step", {"iteration": 1, "kind": "thought", "text": "hm"})
    assert [e["type"] for e in layer.sent] == ["answer.delta", "step"]
    assert [s["text"] for s in record.as_metadata()["steps"]] == ["hm"]


async def test_snapshot_for_another_process_carries_the_record_sent_so_far():
    """run.active to a socket of another process: steps as of the snapshot."""
    record = RunRecord()
    layer = RecordingLayer()
    direct: list[dict] = []

    async def send(channel, message):
        direct.append(message["event"])

    layer.send = send
    publisher = EventPublisher(
        layer, "c1", flush_seconds=60, on_sent=record, snapshot=record.as_metadata
    )
    await publisher("step", {"iteration": 1, "kind": "thought", "text": "before"})
    await publisher.send_snapshot("other-process-socket", {"run_id": "r1", "steps": []})
    await publisher("step", {"iteration": 2, "kind": "thought", "text": "after"})
    (snapshot,) = direct
    assert snapshot["type"] == "run.active" and snapshot["run_id"] == "r1"
    assert [s["text"] for s in snapshot["steps"]] == ["before"]


def test_a_step_result_is_rendered_as_sanitised_markdown():
    from chat.runs.record import dag_with_html, step_result_html

    step = step_result_html({"id": "s1", "result": "**7** <script>alert(1)</script>"})
    assert step["result_html"].startswith("<p><strong>7</strong>")
    assert "<script" not in step["result_html"]
    assert step_result_html({"id": "s2", "status": "running"}) == {"id": "s2", "status": "running"}
    dag = {"rounds": [{"steps": [{"id": "s1", "result": "`x`"}]}], "replans": []}
    assert dag_with_html(dag)["rounds"][0]["steps"][0]["result_html"] == "<p><code>x</code></p>\n"
    assert "result_html" not in dag["rounds"][0]["steps"][0]  # the stored record is untouched
    assert dag_with_html(None) is None


def test_text_taken_back_from_the_answer_is_kept_as_the_steps_thought():
    """RS.1: after a reload the pre-tool text shows in its step, not in the answer."""
    record = RunRecord()
    record("answer.delta", {"text": "Let me check."})
    record("answer.retract", {"iteration": 1, "chars": 13, "text": "Let me check."})
    record("step", {"iteration": 1, "kind": "tool_call", "name": "calculator"})
    record("dag.step.delta", {"id": "s1", "round": 0, "text": "progress"})
    steps = record.as_metadata()["steps"]
    assert [(s["kind"], s["iteration"], s.get("text")) for s in steps] == [
        ("thought", 1, "Let me check."),
        ("tool_call", 1, None),
    ]


def test_a_running_steps_streamed_text_is_kept_until_its_result_replaces_it():
    """A socket joining mid-step sees the step's text so far (run.active carries the record)."""
    record = RunRecord()
    plan = [{"id": "s1", "task": "Add", "depends_on": []}, {"id": "s2", "task": "Sum up"}]
    record("dag.plan", {"steps": plan, "round": 0})
    record("dag.step.delta", {"id": "s1", "round": 0, "text": "not running yet"})
    record("dag.step", {"id": "s1", "status": "running", "round": 0})
    version = record.version
    for piece in ("Adding ", "2 and 2", " gives 4."):
        record("dag.step.delta", {"id": "s1", "round": 0, "text": piece})
    record("dag.step.delta", {"id": "s9", "round": 0, "text": "no such step"})
    assert record.version == version + 3  # a checkpoint stores the progress too
    steps = record.as_metadata()["dag"]["rounds"][0]["steps"]
    assert steps[0]["progress"] == "Adding 2 and 2 gives 4."
    assert "progress" not in steps[1]
    record("dag.step.delta", {"id": "s1", "round": 0, "text": "x" * (2 * RECORD_TEXT_CHARS)})
    progress = record.as_metadata()["dag"]["rounds"][0]["steps"][0]["progress"]
    assert len(progress) == RECORD_TEXT_CHARS and progress.startswith("…x")
    record("dag.step", {"id": "s1", "status": "done", "round": 0, "result": "4"})
    done = record.as_metadata()["dag"]["rounds"][0]["steps"][0]
    assert done["result"] == "4" and "progress" not in done
