"""Plan and verdict parsing and validation (SPEC RD.3, RD.5): pydantic and graphlib."""

import json
from itertools import pairwise

import pytest

from fimone.agent.plan import (
    MAX_STEPS,
    PlanError,
    Step,
    Verdict,
    extract_json,
    fallback_plan,
    parse_plan,
    parse_verdict,
)


def plan_text(*steps) -> str:
    return json.dumps(
        {"steps": [{"id": i, "task": f"task {i}", "depends_on": list(d)} for i, d in steps]}
    )


def test_valid_plan_is_returned_in_dependency_order():
    text = plan_text(("c", ["a", "b"]), ("a", []), ("b", ["a"]))
    assert [s.id for s in parse_plan(text)] == ["a", "b", "c"]
    assert parse_plan(text)[2] == Step("c", "task c", ("a", "b"))


def test_independent_steps_keep_plan_order():
    assert [s.id for s in parse_plan(plan_text(("x", []), ("y", []), ("z", [])))] == ["x", "y", "z"]


def test_plan_in_a_code_fence_with_prose_around_it():
    text = "Here is the plan:\n```json\n" + plan_text(("s1", [])) + "\n```\nGood luck."
    assert parse_plan(text) == [Step("s1", "task s1", ())]


def test_integer_ids_are_accepted_as_text():
    text = json.dumps(
        {"steps": [{"id": 1, "task": "a"}, {"id": 2, "task": "b", "depends_on": [1]}]}
    )
    assert parse_plan(text) == [Step("1", "a", ()), Step("2", "b", ("1",))]


def test_missing_depends_on_means_none():
    assert parse_plan('{"steps": [{"id": "s1", "task": "t"}]}') == [Step("s1", "t", ())]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("not json at all", "malformed JSON"),
        ('{"steps": [', "malformed JSON"),
        ('{"plan": []}', "steps: Field required"),
        ('{"steps": []}', "steps: List should have at least 1 item"),
        ('{"steps": ["s1"]}', "steps[0]: Input should be a valid dictionary"),
        ('{"steps": [{"task": "t"}]}', "steps[0].id: Field required"),
        ('{"steps": [{"id": " ", "task": "t"}]}', "steps[0].id: Value error, must not be empty"),
        ('{"steps": [{"id": true, "task": "t"}]}', "must be a string or an integer"),
        ('{"steps": [{"id": "s1", "task": " "}]}', "steps[0].task: String should have at least"),
        ('{"steps": [{"id": "s1", "task": 7}]}', "steps[0].task: Input should be a valid string"),
        (
            '{"steps": [{"id": "s1", "task": "t", "depends_on": "s0"}]}',
            "steps[0].depends_on: Input should be a valid list",
        ),
        (plan_text(("s1", []), ("s1", [])), "duplicate step id 's1'"),
        (plan_text(("s1", ["s9"])), "unknown step 's9'"),
        (plan_text(("s1", ["s1"])), "cycle: s1 → s1"),
    ],
)
def test_invalid_plans_are_refused_with_a_reason(text, fragment):
    with pytest.raises(PlanError, match=None) as info:
        parse_plan(text)
    assert fragment in str(info.value)


def test_a_cycle_is_named_step_by_step_and_leaves_out_the_steps_outside_it():
    text = plan_text(("a", ["c"]), ("b", ["a"]), ("c", ["b"]), ("d", []))
    with pytest.raises(PlanError) as info:
        parse_plan(text)
    message = str(info.value)
    chain = message.split("cycle: ")[1].split(" (")[0].split(" → ")
    assert chain[0] == chain[-1] and sorted(chain[:-1]) == ["a", "b", "c"]
    depends = {s: set(d) for s, d in [("a", ["c"]), ("b", ["a"]), ("c", ["b"])]}
    assert all(after in depends[before] for before, after in pairwise(chain))


def test_every_error_is_reported_not_only_the_first():
    text = '{"steps": [{"id": "", "task": 1}, {"task": "t"}]}'
    with pytest.raises(PlanError) as info:
        parse_plan(text)
    assert str(info.value) == (
        "steps[0].id: Value error, must not be empty; "
        "steps[0].task: Input should be a valid string; steps[1].id: Field required"
    )


def test_step_count_limit_is_exact():
    steps = [(f"s{i}", []) for i in range(MAX_STEPS)]
    assert len(parse_plan(plan_text(*steps))) == MAX_STEPS
    with pytest.raises(PlanError, match=f"at most {MAX_STEPS}"):
        parse_plan(plan_text(*steps, ("extra", [])))


def test_fallback_plan_is_one_step():
    assert fallback_plan("do it all") == [Step("s1", "do it all", ())]


def test_extract_json_skips_braces_that_are_not_json():
    assert extract_json('Use {curly} braces: {"a": 1}') == {"a": 1}
    with pytest.raises(ValueError):
        extract_json("no object here")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"achieved": true, "confidence": 0.9, "reason": "ok"}', Verdict(True, 0.9, "ok")),
        ('{"achieved": false, "confidence": 0.3}', Verdict(False, 0.3, "")),
        ('```\n{"achieved": false, "confidence": 7, "reason": "x"}\n```', Verdict(False, 1.0, "x")),
        ('{"achieved": false, "confidence": -1, "reason": "x"}', Verdict(False, 0.0, "x")),
        ('{"achieved": true, "confidence": 1, "reason": 42}', Verdict(True, 1.0, "42")),
    ],
)
def test_verdicts(text, expected):
    assert parse_verdict(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "nope",
        '{"achieved": "yes"}',
        '{"achieved": true, "confidence": "high"}',
        '{"achieved": true, "confidence": true}',
        "[1, 2]",
    ],
)
def test_unreadable_verdicts_are_none(text):
    assert parse_verdict(text) is None
