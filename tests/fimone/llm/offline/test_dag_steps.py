"""The offline planner and analyser with a chain of calculations, in English, German and
Chinese: "first …, then double the result" plans a step that depends on the first, that
step computes on the first one's value, and the analyser calls the plan achieved only when
the answer states every step's value."""

from __future__ import annotations

import json

import pytest

from contextmgmt.core.messages import ChatMessage
from fimone.llm.offline.model import OfflineLLM
from fimone.llm.offline.phrases import PHRASES

PLANNER = "You are the planner. Reply with a JSON plan only."
ANALYSER = "Reply with a JSON verdict only."
TOOLS = [
    {"type": "function", "function": {"name": "calculator", "parameters": {"type": "object"}}},
]

# (request, the first step's expression, its value, the second step's expression)
CHAINS = [
    ("Berechne zuerst 2+3, dann verdopple das Ergebnis", "2+3", "5", "5 * 2"),
    ("Erst 2+3 berechnen, danach das Ergebnis halbieren", "2+3", "5", "5 / 2"),
    ("Rechne 6*7 und dann addiere 8", "6*7", "42", "42 + 8"),
    ("Berechne 20-4, anschließend ziehe 6 davon ab", "20-4", "16", "16 - 6"),
    ("Berechne 2+3 und dann multipliziere das Ergebnis mit 10", "2+3", "5", "5 * 10"),
    ("Berechne 10+5, dann teile es durch 3", "10+5", "15", "15 / 3"),
    ("先计算2+3，然后把结果翻倍", "2+3", "5", "5 * 2"),
    ("先计算2+3，再乘以10", "2+3", "5", "5 * 10"),
    ("先算 9*9，然后减去1", "9*9", "81", "81 - 1"),
    ("先计算 8*8，最后加上6", "8*8", "64", "64 + 6"),
    ("First compute 2+3, then double the result", "2+3", "5", "5 * 2"),
    ("Compute 12/4, after that multiply it by 5", "12/4", "3", "3 * 5"),
    ("First compute 2+3, then halve it", "2+3", "5", "5 / 2"),
]


async def plan(llm: OfflineLLM, request: str) -> list[dict]:
    messages = [
        ChatMessage(role="system", content=PLANNER),
        ChatMessage(role="user", content=request),
    ]
    return json.loads((await llm.chat(messages)).message.content)["steps"]


async def step_call(llm: OfflineLLM, task: str, dependency: str) -> str:
    """The calculator expression a step with ``task`` calls, given its dependency's result."""
    messages = [
        ChatMessage(role="system", content="You are one worker in a multi-step plan."),
        ChatMessage(
            role="user",
            content=f"Results of the steps your task depends on:\n\n"
            f"Result of step s1:\n{dependency}",
        ),
        ChatMessage(role="user", content=f"Your task: {task}", pinned=True),
    ]
    result = await llm.chat(messages, tools=TOOLS)
    assert result.message.tool_calls, result.message.content
    (call,) = result.message.tool_calls
    return json.loads(call.arguments)["expression"]


@pytest.mark.parametrize(("request_text", "first", "value", "second"), CHAINS)
async def test_the_second_step_depends_on_the_first_and_computes_on_its_value(
    offline_llm, request_text, first, value, second
):
    steps = await plan(offline_llm, request_text)
    assert [s["depends_on"] for s in steps] == [[], ["s1"], ["s1", "s2"]]
    assert await step_call(offline_llm, steps[0]["task"], "") == first
    assert await step_call(offline_llm, steps[1]["task"], f"`{first}` = {value}") == second


async def test_a_german_request_gets_german_steps_and_a_german_combining_step(offline_llm):
    steps = await plan(offline_llm, "Berechne zuerst 2+3, dann verdopple das Ergebnis")
    assert steps[0]["task"] == "Berechne 2+3"
    assert steps[2]["task"] == PHRASES["plan_combine"]["de"]


@pytest.mark.parametrize(
    ("request_text", "tasks"),
    [
        (
            "Berechne zuerst 2+3, dann verdopple das Ergebnis und dann addiere 1",
            [("5", "5 * 2"), ("10", "10 + 1")],
        ),
        ("先计算2+3，再乘以10，最后减去4", [("5", "5 * 10"), ("50", "50 - 4")]),
        ("First compute 2+3, then double it, then add 1", [("5", "5 * 2"), ("10", "10 + 1")]),
    ],
)
async def test_a_chain_of_three_gets_a_step_per_link(offline_llm, request_text, tasks):
    steps = await plan(offline_llm, request_text)
    assert [s["depends_on"] for s in steps] == [[], ["s1"], ["s2"], ["s1", "s2", "s3"]]
    assert await step_call(offline_llm, steps[0]["task"], "") == "2+3"
    for step, (value, expression) in zip(steps[1:3], tasks, strict=True):
        assert await step_call(offline_llm, step["task"], f"= {value}") == expression


async def test_independent_parts_still_make_at_most_three_steps(offline_llm):
    steps = await plan(offline_llm, "Compute 2+3, then tell me the time, then who wrote Faust")
    assert len(steps) == 3


def analysis(request: str, results: dict[str, str]) -> list[ChatMessage]:
    blocks = [f"### Step {sid}: task {sid}\n{text}" for sid, text in results.items()]
    text = f"User request:\n{request}\n\nStep results:\n\n" + "\n\n".join(blocks)
    return [ChatMessage(role="system", content=ANALYSER), ChatMessage(role="user", content=text)]


async def verdict(llm: OfflineLLM, request: str, results: dict[str, str]) -> dict:
    return json.loads((await llm.chat(analysis(request, results))).message.content)


GERMAN = "Berechne zuerst 2+3, dann verdopple das Ergebnis"
CHINESE = "先计算2+3，然后把结果翻倍"


@pytest.mark.parametrize("request_text", [GERMAN, CHINESE, "First compute 2+3, then double it"])
async def test_a_step_that_only_repeated_its_input_is_not_achieved(offline_llm, request_text):
    """The second step gave back the first one's line instead of doubling: 10 is missing."""
    got = await verdict(
        offline_llm, request_text, {"s1": "`2+3` = 5", "s2": "`2+3` = 5", "s3": "`2+3` = 5"}
    )
    assert got["achieved"] is False and got["confidence"] < 0.8
    assert "10" in got["reason"]
    done = await verdict(
        offline_llm,
        request_text,
        {"s1": "`2+3` = 5", "s2": "`5 * 2` = 10", "s3": "`2+3` = 5\n\n`5 * 2` = 10"},
    )
    assert done["achieved"] is True and done["confidence"] >= 0.8


async def test_german_reasons_are_german(offline_llm):
    got = await verdict(offline_llm, GERMAN, {"s1": "`2+3` = 5", "s2": "`2+3` = 5"})
    assert got["reason"].startswith("die Antwort nennt nicht")


async def test_an_answer_that_drops_an_earlier_steps_value_is_not_achieved(offline_llm):
    """Whatever the request: the last step (the answer) must hold each step's value."""
    request = "Look up the two prices and add them"
    got = await verdict(
        offline_llm, request, {"s1": "price = 19", "s2": "price = 23", "s3": "The total is 42."}
    )
    assert got["achieved"] is False
    assert "s1 = 19" in got["reason"] and "s2 = 23" in got["reason"]
    whole = await verdict(
        offline_llm,
        request,
        {"s1": "price = 19", "s2": "price = 23", "s3": "19 + 23 = 42"},
    )
    assert whole["achieved"] is True


async def test_a_skipped_step_is_a_surer_failure_than_a_missing_figure(offline_llm):
    skipped = "(step failed: übersprungen: Schritt s1 ist fehlgeschlagen)"
    failed = await verdict(
        offline_llm, GERMAN, {"s1": "(step failed: boom)", "s2": skipped, "s3": skipped}
    )
    missing = await verdict(offline_llm, GERMAN, {"s1": "`2+3` = 5", "s2": "`2+3` = 5"})
    assert failed["achieved"] is False and missing["achieved"] is False
    assert failed["confidence"] < missing["confidence"] < 0.8
    assert "s1, s2, s3" in failed["reason"]


async def test_a_dependent_part_depends_on_the_step_before(offline_llm):
    messages = [
        ChatMessage(role="system", content=PLANNER),
        ChatMessage(role="user", content="First compute 3+4, then multiply that result by 10."),
    ]
    steps = json.loads((await offline_llm.chat(messages)).message.content)["steps"]
    assert [s["depends_on"] for s in steps] == [[], ["s1"], ["s1", "s2"]]
    assert steps[0]["task"] == "compute 3+4"


async def test_a_step_reads_the_result_it_depends_on(offline_llm):
    messages = [
        ChatMessage(role="system", content="You are one worker in a multi-step plan."),
        ChatMessage(
            role="user",
            content="Results of the steps your task depends on:\n\n"
            "Result of step s1 (compute 3+4):\n`3+4` = 7",
        ),
        ChatMessage(role="user", content="Your task: multiply that result by 10", pinned=True),
    ]
    result = await offline_llm.chat(messages, tools=TOOLS)
    (call,) = result.message.tool_calls
    assert json.loads(call.arguments) == {"expression": "7 * 10"}


def demo_analysis(results: dict[str, str]) -> str:
    blocks = [f"### Step {sid}: task {sid}\n{text}" for sid, text in results.items()]
    return (
        "User request:\nFirst compute 3+4, then multiply that result by 10, and report both."
        "\n\nStep results:\n\n" + "\n\n".join(blocks)
    )


async def test_the_analyser_rejects_results_that_lack_a_requested_figure(offline_llm):
    async def judge(results):
        messages = [
            ChatMessage(role="system", content=ANALYSER),
            ChatMessage(role="user", content=demo_analysis(results)),
        ]
        return json.loads((await offline_llm.chat(messages)).message.content)

    lacking = await judge({"s1": "`3+4` = 7", "s2": "You asked: “multiply that result”."})
    assert lacking["achieved"] is False and lacking["confidence"] < 0.8
    assert "70" in lacking["reason"]
    complete = await judge({"s1": "`3+4` = 7", "s2": "`7 * 10` = 70"})
    assert complete["achieved"] is True
