"""The context gauge against what runs really send (chat/pages.py): real websocket runs
on a scripted LLM, a conversation long enough to be summarised, one whose questions carry
images, or one whose earlier run read long tool results, and the gauge read before each
run."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from chat import services
from chat.runs.deps import make_tools
from contextmgmt.core.masking import MASK_PREFIX
from contextmgmt.core.messages import ChatMessage
from contextmgmt.core.prompts import hint_of
from contextmgmt.core.tokens import estimate_message_tokens, estimate_messages_tokens
from fimone.agent.react import tool_schema_tokens
from tests.chat.images import image_bytes
from tests.chat.test_runs_masking import Script, call
from tests.support.log_tool import log_fact, log_text, with_log_tool
from tests.support.runs import connect, events_until, of_type, send

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs"),
]

BUDGET = 4_000
LONG_ANSWER = "Answer: " + "lorem ipsum dolor " * 300  # about 1,000 tokens


@pytest.fixture
def budget_of_4000(settings) -> int:
    # 12,000 context - 4,000 output - 4,000 reserve (env source), for the runs and the gauge.
    settings.LLM_CONTEXT_SIZE = 12_000
    settings.LLM_MAX_OUTPUT_TOKENS = 4_000
    return BUDGET


def summary_or_long_answer(messages: list[ChatMessage]) -> str:
    if hint_of(messages[0].text()):
        return "[Conversation summary] The user asked questions 0 to 9; numbers 12345."
    return LONG_ANSWER


def sent_tokens(call) -> int:
    """What one model call sent, as the run counts it: its messages and tool schemas."""
    tools = make_tools(None, before_id=0) if call.tools else None
    return estimate_messages_tokens(call.messages) + tool_schema_tokens(tools, BUDGET)


async def test_the_gauge_of_a_summarised_conversation_never_passes_the_budget_it_fits(
    user, conversation, ws_fake_llm, budget_of_4000
):
    """Turns of about 1,300 tokens: from the third run on, every request summarises. The
    gauge shows what the next request sends before its question — the history fitted to
    its room, the system prompt and the tool schemas — so it stays within the budget, and
    each run's first call sends exactly that plus its question."""
    client = Client()
    await sync_to_async(client.force_login)(user)
    url = f"/api/conversations/{conversation.id}/context/"
    ws_fake_llm.default = summary_or_long_answer
    socket = await connect(user, conversation.id)
    gauge = (await sync_to_async(client.get)(url)).json()
    seen = []
    try:
        for i in range(5):
            query = f"Question {i}: " + "why is that so " * 60
            before = len(ws_fake_llm.calls)
            await send(socket, type="message", content=query)
            events = await events_until(socket, "done", "error")
            assert events[-1]["type"] == "done", events[-1]
            first = next(c for c in ws_fake_llm.calls[before:] if not hint_of(c.messages[0].text()))
            question = estimate_message_tokens(ChatMessage(role="user", content=query))
            empty = estimate_message_tokens(ChatMessage(role="user", content=""))
            expected = gauge["used_tokens"] + question - empty
            if gauge["will_compact"]:
                assert of_type(events, "compact"), "the gauge said the history would be fitted"
                assert sent_tokens(first) <= expected
            else:
                assert sent_tokens(first) == expected
            gauge = (await sync_to_async(client.get)(url)).json()
            seen.append(gauge)
    finally:
        await socket.disconnect()

    summarised = [g for g in seen if g["summarised"]]
    assert len(summarised) >= 2
    for g in seen:
        assert g["used_tokens"] <= g["budget"]["effective_input_tokens"] == BUDGET
    # As stored, the summarised history is larger than its room: the next request fits it,
    # and the gauge is full rather than past full.
    assert any(g["history_tokens"] > g["history_room_tokens"] for g in summarised)
    assert all(g["used_tokens"] == BUDGET for g in summarised if g["will_compact"])


IMAGE_SIZES = ((1920, 1080), (32, 24), (800, 600), (1170, 2532))


@sync_to_async
def upload(user, conversation, index: int) -> str:
    image = services.attachment_create(
        owner=user,
        conversation=conversation,
        uploaded_file=SimpleUploadedFile(
            f"shot{index}.png", image_bytes("PNG", IMAGE_SIZES[index]), content_type="image/png"
        ),
    )
    return str(image.pk)


async def runs_with_images_match_the_gauge(user, conversation, llm) -> list[ChatMessage]:
    """Four runs, each question with its own image: before each, the gauge; each run's first
    call must send exactly the gauge's figure plus its question. The first calls, in order."""
    client = Client()
    await sync_to_async(client.force_login)(user)
    url = f"/api/conversations/{conversation.id}/context/"
    llm.default = "Seen."
    empty = estimate_message_tokens(ChatMessage(role="user", content=""))
    socket = await connect(user, conversation.id)
    firsts = []
    try:
        for i in range(len(IMAGE_SIZES)):
            gauge = (await sync_to_async(client.get)(url)).json()
            assert not gauge["will_compact"]
            image = await upload(user, conversation, i)
            before = len(llm.calls)
            await send(socket, type="message", content=f"What is in shot {i}?", attachments=[image])
            events = await events_until(socket, "done", "error")
            assert events[-1]["type"] == "done", events[-1]
            first = llm.calls[before]
            query = first.messages[-1]
            assert query.text().startswith(f"What is in shot {i}?")
            history = sent_tokens(first) - estimate_message_tokens(query) + empty
            assert history == gauge["used_tokens"], f"run {i}"
            firsts.append(first)
    finally:
        await socket.disconnect()
    return firsts


@pytest.fixture
def roomy_budget(settings) -> None:
    # 40,000 context - 4,000 output - 4,000 reserve: four images and their answers fit.
    settings.LLM_CONTEXT_SIZE = 40_000
    settings.LLM_MAX_OUTPUT_TOKENS = 4_000


def images_sent(call) -> list[int]:
    """How many image parts each user message of a call sends."""
    return [len(m.image_parts()) for m in call.messages if m.role == "user"]


async def test_the_gauge_counts_a_vision_models_images_as_the_run_sends_them(
    user, conversation, ws_fake_llm, roomy_budget, settings
):
    """For a model that sees, the newest turns' images go as pixels (counted by their size,
    not also by their description) and older ones as their description: the gauge counts
    each image once, the way the next run's first call sends it."""
    settings.FIMONE_IMAGE_PIXEL_TURNS = 2
    firsts = await runs_with_images_match_the_gauge(user, conversation, ws_fake_llm)
    # The last run: the oldest image as text, the two after it and the question's as pixels.
    assert images_sent(firsts[-1]) == [0, 1, 1, 1]


async def test_the_gauge_counts_no_pixels_for_a_model_that_cannot_see(
    user, conversation, ws_fake_llm, roomy_budget
):
    """A main model without vision is sent every image as its description, the newest too:
    the gauge counts descriptions only."""
    ws_fake_llm.supports_vision = False
    firsts = await runs_with_images_match_the_gauge(user, conversation, ws_fake_llm)
    assert not any(any(images_sent(call)) for call in firsts)
    assert "[image: shot0.png, 1920x1080 — PNG 1920x1080" in firsts[-1].messages[1].text()


async def test_a_dag_planner_reads_earlier_images_as_their_descriptions(
    user, conversation, ws_fake_llm, roomy_budget, run_deps
):
    """The DAG planner gets the history as text: an earlier turn's image reaches it as its
    description (even for a model that sees), and only the question's own image as pixels.
    The run loads that history without pixels, so it is fitted as the text it becomes."""
    histories = []
    real = run_deps.current.engine_for

    def engine_for(mode):
        engine = real(mode)

        async def watched(ctx):
            histories.append(ctx.history)
            return await engine(ctx)

        return watched

    run_deps.use(engine_for=engine_for)
    plan = '{"steps": [{"id": "s1", "task": "Look at the shot", "depends_on": []}]}'
    verdict = '{"achieved": true, "confidence": 0.9, "reason": "ok"}'
    socket = await connect(user, conversation.id)
    planners = []
    try:
        for i in range(2):
            image = await upload(user, conversation, i)
            ws_fake_llm.enqueue(plan, "A screenshot.", verdict, "It is a screenshot.")
            before = len(ws_fake_llm.calls)
            await send(
                socket,
                type="message",
                content=f"What is in shot {i}?",
                attachments=[image],
                mode="dag",
            )
            events = await events_until(socket, "done", "error")
            assert events[-1]["type"] == "done", events[-1]
            planners.append(ws_fake_llm.calls[before])
    finally:
        await socket.disconnect()
    assert not any(m.image_parts() for m in histories[-1])
    assert "[image: shot0.png" in histories[-1][0].text()
    request = planners[-1].messages[-1]
    assert len(request.image_parts()) == 1  # the question's own
    assert "[image: shot0.png, 1920x1080 — PNG 1920x1080" in request.text()
    assert "[1 image]" not in request.text()


async def test_the_gauge_counts_earlier_tool_results_as_the_stubs_that_are_sent(
    user, conversation, ws_fake_llm, run_deps, budget_of_4000
):
    """An earlier run read two long logs: the next run's history carries its calls with each
    result masked (a stub naming its stored id). The gauge counts those stubs, as sent, not
    the whole results: the next run's first call sends exactly its figure plus the question."""
    with_log_tool(run_deps)
    client = Client()
    await sync_to_async(client.force_login)(user)
    url = f"/api/conversations/{conversation.id}/context/"
    ws_fake_llm.default = Script(
        call("read_log", {"n": 1}, "l1"), call("read_log", {"n": 2}, "l2"), "Both are clean."
    )
    socket = await connect(user, conversation.id)
    try:
        await send(socket, type="message", content="Read logs 1 and 2.")
        events = await events_until(socket, "done", "error")
        assert events[-1]["type"] == "done", events[-1]
        gauge = (await sync_to_async(client.get)(url)).json()
        ws_fake_llm.default = "Yes."
        before = len(ws_fake_llm.calls)
        query = "Were both clean?"
        await send(socket, type="message", content=query)
        events = await events_until(socket, "done", "error")
        assert events[-1]["type"] == "done", events[-1]
    finally:
        await socket.disconnect()

    first = ws_fake_llm.calls[before]
    stubs = [m.text() for m in first.messages if m.role == "tool"]
    assert len(stubs) == 2 and all(s.startswith(MASK_PREFIX) for s in stubs)
    assert not any(log_fact(n) in s for n in (1, 2) for s in stubs)
    question = estimate_message_tokens(ChatMessage(role="user", content=query))
    empty = estimate_message_tokens(ChatMessage(role="user", content=""))
    assert not gauge["will_compact"]
    assert sent_tokens(first) == gauge["used_tokens"] + question - empty
    whole = sum(
        estimate_message_tokens(ChatMessage(role="tool", content=log_text(n), tool_call_id="x"))
        for n in (1, 2)
    )
    assert gauge["history_tokens"] < whole
