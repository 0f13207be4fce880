"""The user's images in a DAG run (SPEC RV.4): the planner, every step and the synthesis see
them — as pixels where the model can see, else as their descriptions."""

from __future__ import annotations

import json

from contextmgmt.core.messages import ChatMessage
from contextmgmt.core.tokens import estimate_tokens
from fimone.agent import run_dag
from fimone.agent.dag_context import history_budget
from tests.support.fake_llm import FakeLLM

PIXELS = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
NOTE = "[image: error.png, 1280x720 — a dialog reading 'Disk quota exceeded']"
PLAN = json.dumps(
    {
        "steps": [
            {"id": "s1", "task": "read the error in the screenshot", "depends_on": []},
            {"id": "s2", "task": "suggest a fix", "depends_on": ["s1"]},
        ]
    }
)
VERDICT = json.dumps({"achieved": True, "confidence": 0.9, "reason": "ok"})


def query_with_image(*, pixels: bool) -> ChatMessage:
    """A query as the run builds it: pixels for a main model that sees, the description in
    the text otherwise; the description always in metadata."""
    text = "What does this error mean?"
    content = [{"type": "text", "text": text}, PIXELS] if pixels else f"{text}\n{NOTE}"
    return ChatMessage(
        role="user", content=content, pinned=True, metadata={"id": 7, "image_notes": [NOTE]}
    )


def images_in(message: ChatMessage) -> list[dict]:
    if isinstance(message.content, str):
        return []
    return [p for p in message.content if p.get("type") == "image_url"]


async def test_a_seeing_model_gets_the_pixels_in_plan_steps_and_answer(build_context):
    llm = FakeLLM().enqueue(PLAN, VERDICT, "Your disk quota is full.")
    fast = FakeLLM(default="done")
    ctx = build_context(llm, fast_llm=fast, fast_vision=True, query=query_with_image(pixels=True))
    await run_dag(ctx)

    planner, analyser, final = llm.calls
    assert images_in(planner.messages[-1]) == [PIXELS]
    assert planner.messages[-1].text().startswith("What does this error mean?")
    assert images_in(final.messages[-1]) == [PIXELS]
    assert analyser.messages[-1].content.count("data:image") == 0  # the checker reads text
    assert len(fast.calls) == 2
    for call in fast.calls:
        task = call.messages[-1]
        assert task.text().startswith("Your task: ")
        assert images_in(task) == [PIXELS]


async def test_a_text_only_fast_model_gets_the_descriptions_in_each_step(build_context):
    llm = FakeLLM().enqueue(PLAN, VERDICT, "Your disk quota is full.")
    fast = FakeLLM(default="done")
    ctx = build_context(llm, fast_llm=fast, fast_vision=False, query=query_with_image(pixels=True))
    await run_dag(ctx)

    assert images_in(llm.calls[0].messages[-1]) == [PIXELS]  # the main model still sees
    for call in fast.calls:
        task = call.messages[-1]
        assert images_in(task) == []
        assert task.text().startswith("Your task: ")
        assert NOTE in task.text()
        assert task.pinned


async def test_a_text_only_main_model_plans_from_the_description(build_context):
    llm = FakeLLM().enqueue(PLAN, VERDICT, "Your disk quota is full.")
    fast = FakeLLM(default="done")
    ctx = build_context(llm, fast_llm=fast, query=query_with_image(pixels=False))
    await run_dag(ctx)

    planner = llm.calls[0].messages[-1]
    assert images_in(planner) == [] and NOTE in planner.text()
    assert all(NOTE in call.messages[-1].text() for call in fast.calls)


async def test_a_query_without_images_is_sent_as_before(build_context):
    llm = FakeLLM().enqueue(PLAN, VERDICT, "Fine.")
    fast = FakeLLM(default="done")
    await run_dag(build_context(llm, fast_llm=fast, fast_vision=True, query="Plan a trip."))

    assert llm.calls[0].messages[-1].content == "Plan a trip."
    assert [c.messages[-1].content for c in fast.calls] == [
        "Your task: read the error in the screenshot",
        "Your task: suggest a fix",
    ]


def test_the_history_budget_leaves_room_for_the_query_images():
    plain = ChatMessage(role="user", content="What does this error mean?")
    with_image = query_with_image(pixels=True)
    without = history_budget(60_000, query=plain)
    assert history_budget(60_000, query=with_image) < without - 50
    assert estimate_tokens("What does this error mean?") < 20


async def test_the_planner_reads_an_earlier_turns_images_by_their_description(build_context):
    """A recent turn of the history keeps its images as pixels; the planner gets the history
    as text, and there each image is what it shows, not a bare count."""
    earlier = ChatMessage(
        role="user",
        content=[{"type": "text", "text": "My backup failed with this."}, PIXELS],
        metadata={"id": 5, "image_notes": [NOTE]},
    )
    answer = ChatMessage(role="assistant", content="Let me look into it.")
    llm = FakeLLM().enqueue(PLAN, VERDICT, "Free some space.")
    ctx = build_context(
        llm, fast_llm=FakeLLM(default="done"), history=[earlier, answer], query="How to fix it?"
    )
    await run_dag(ctx)

    planner_input = llm.calls[0].messages[-1].text()
    assert f"User: My backup failed with this.\n{NOTE}" in planner_input
    assert "[1 image]" not in planner_input
