"""The engine's own sentences follow the user's language (``AgentContext.language``)."""

from __future__ import annotations

import pytest

from contextmgmt.core.llm import LLMUnavailable
from fimone.agent import run_dag, run_react
from fimone.agent.wording import language_of, say
from tests.fimone.agent.test_dag import main_llm, plan, task_of, verdict, worker
from tests.fimone.agent.test_react import calc
from tests.support.fake_llm import FakeLLM


@pytest.mark.parametrize(
    ("code", "short"),
    [("zh-hans", "zh"), ("de", "de"), ("en-us", "en"), ("fr", "en"), (None, "en")],
)
def test_language_codes(code, short):
    assert language_of(code) == short


@pytest.mark.parametrize(
    ("language", "opening"),
    [
        ("zh-hans", "我在 2 步之后停了下来，任务尚未完成。"),
        ("de", "Ich habe nach 2 Schritten aufgehört, ohne die Aufgabe abzuschließen. "),
        ("en", "I stopped after 2 steps without finishing the task. "),
    ],
)
async def test_an_answer_cut_short_opens_in_the_users_language(
    build_context, events, language, opening
):
    llm = FakeLLM().enqueue(calc(FakeLLM(), "1+1", "a"), calc(FakeLLM(), "2+2", "b"), "2, 4")
    outcome = await run_react(build_context(llm, max_iterations=2, language=language))
    assert outcome.status == "limit"
    assert outcome.answer == opening + "2, 4"
    assert events.answer_text() == outcome.answer


async def test_a_skipped_dag_step_says_why_in_the_users_language(build_context, events):
    def flaky(messages):
        if task_of(messages) == "fetch":
            raise LLMUnavailable("down")
        return worker(messages)

    llm = main_llm(
        plan(("s1", "fetch", []), ("s2", "use it", ["s1"])), verdict(True, 0.9), "teilweise"
    )
    await run_dag(build_context(llm, fast_llm=FakeLLM(default=flaky), language="de"))
    finals = {p["id"]: p for p in events.of("dag.step") if p["status"] != "running"}
    assert finals["s2"]["error"] == say("skipped", "de", steps="s1")
    assert finals["s2"]["error"] == "übersprungen: Schritt s1 ist fehlgeschlagen"
