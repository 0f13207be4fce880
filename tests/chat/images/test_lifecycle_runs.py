"""The image lifecycle on the wire (SPEC RV.4): a websocket run through the real ReAct engine
and the real openai SDK against tests/support/scripted_server.py; each test asserts what the
provider received."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile

from chat import services
from chat.models import Attachment, Message
from chat.runs import ahead
from fimone.llm.providers.openai_client import OpenAIChatLLM
from tests.chat.images import image_bytes
from tests.support.runs import WAIT, events_until, send
from tests.support.scripted_server import http_error, text, tool_calls

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs"),
]

DESCRIBED = "A bar chart of quarterly revenue, titled Q3."


def use_scripted_models(
    run_deps, scripted_server, *, vision: bool | set[str], prefix: str = "scripted"
) -> None:
    """Every role's model on the scripted server; ``vision``: for all, or the roles that see."""

    def get_llm(role: str) -> OpenAIChatLLM:
        return OpenAIChatLLM(
            model=f"{prefix}-{role}",
            base_url=scripted_server.base_url,
            api_key="k",
            max_retries=0,
            supports_vision=role in vision if isinstance(vision, set) else vision,
        )

    run_deps.use(get_llm=get_llm)


@sync_to_async
def earlier_turns(user, conversation, count: int) -> list[Attachment]:
    images = []
    for i in range(count):
        image = services.attachment_create(
            owner=user,
            conversation=conversation,
            uploaded_file=SimpleUploadedFile(
                f"chart{i}.png", image_bytes("PNG"), content_type="image/png"
            ),
        )
        services.user_message_create(
            conversation=conversation, content=f"look at chart {i}", attachments=[image]
        )
        Message.objects.create(conversation=conversation, role="assistant", content=f"seen {i}")
        images.append(image)
    return images


@sync_to_async
def upload(user, conversation) -> str:
    image = services.attachment_create(
        owner=user,
        conversation=conversation,
        uploaded_file=SimpleUploadedFile("now.png", image_bytes("PNG"), content_type="image/png"),
    )
    return str(image.pk)


def images_in(message: dict) -> int:
    content = message["content"]
    if not isinstance(content, list):
        return 0
    return sum(1 for part in content if part.get("type") == "image_url")


def chat_requests(scripted_server) -> list[dict]:
    """The engine's calls (the description calls carry no tools and one message)."""
    return [r for r in scripted_server.requests if len(r["messages"]) > 1]


async def test_a_run_sends_current_and_recent_images_as_pixels_older_as_text_rv_4(
    socket, user, conversation, run_deps, scripted_server
):
    use_scripted_models(run_deps, scripted_server, vision=True)
    images = await earlier_turns(user, conversation, 4)
    now = await upload(user, conversation)
    # The fast model describes the two images that now go as text; then the answer; then,
    # in the background, chart 2, which this question pushed out of the pixel turns.
    scripted_server.enqueue(text(DESCRIBED), text(DESCRIBED), text("Two charts."), text(DESCRIBED))
    await send(socket, type="message", content="compare", attachments=[now])
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    async with asyncio.timeout(WAIT):
        await ahead.wait_idle()

    describe_calls = [r for r in scripted_server.requests if len(r["messages"]) == 1]
    assert len(describe_calls) == 3
    assert all(images_in(r["messages"][0]) == 1 for r in describe_calls)
    [request] = chat_requests(scripted_server)
    users = [m for m in request["messages"] if m["role"] == "user"]
    assert [images_in(m) for m in users] == [0, 0, 1, 1, 1]  # chart 0, 1 as text; 2, 3, now
    assert users[0]["content"] == f"look at chart 0\n[image: chart0.png, 32x24 — {DESCRIBED}]"
    stored = await Attachment.objects.aget(pk=images[0].pk)
    assert (stored.description, stored.description_source) == (DESCRIBED, "model")

    # The next request reuses the stored descriptions: no model is asked before its call
    # (chart 2 was described after the first answer).
    scripted_server.reset()
    scripted_server.enqueue(text("Still two charts."), text(DESCRIBED))
    await send(socket, type="message", content="and now?")
    await events_until(socket, "done", "error")
    assert len(scripted_server.requests[0]["messages"]) > 1
    [request] = chat_requests(scripted_server)
    users = [m for m in request["messages"] if m["role"] == "user"]
    assert [images_in(m) for m in users] == [0, 0, 0, 1, 1, 0]


async def test_without_vision_the_provider_gets_no_pixels_and_no_model_is_asked_rv_4(
    socket, user, conversation, run_deps, scripted_server
):
    use_scripted_models(run_deps, scripted_server, vision=False)
    await earlier_turns(user, conversation, 3)
    now = await upload(user, conversation)
    scripted_server.enqueue(text("Text only."))
    await send(socket, type="message", content="compare", attachments=[now])
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    [request] = scripted_server.requests
    assert not any(images_in(m) for m in request["messages"])
    assert request["messages"][-1]["content"].startswith(
        "compare\n[image: now.png, 32x24 — PNG 32x24; mostly red"
    )


async def test_recall_brings_an_old_image_back_as_pixels_for_the_next_call_rv_4(
    socket, user, conversation, run_deps, scripted_server, settings
):
    settings.FIMONE_IMAGE_PIXEL_TURNS = 0
    use_scripted_models(run_deps, scripted_server, vision=True)
    [old] = await earlier_turns(user, conversation, 1)
    await Attachment.objects.filter(pk=old.pk).aupdate(
        description="A receipt from the hardware store", description_source="model"
    )
    scripted_server.enqueue(
        tool_calls(("recall", {"query": "receipt"})), text("It says 12.50 EUR.")
    )
    await send(socket, type="message", content="what did the receipt say?")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]

    first, second = scripted_server.requests
    assert not any(images_in(m) for m in first["messages"])  # the old image went as text
    tool_at = next(i for i, m in enumerate(second["messages"]) if m["role"] == "tool")
    assert "chart0.png" in second["messages"][tool_at]["content"]
    brought = second["messages"][tool_at + 1]
    assert brought["role"] == "user" and images_in(brought) == 1
    assert brought["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert json.dumps(second).count('"type": "image_url"') == 1  # that one only


async def test_a_dag_run_shows_the_image_to_its_planner_steps_and_answer_rv_4(
    socket, user, conversation, run_deps, scripted_server
):
    """The main model sees pixels; the fast model, which cannot, gets each image's
    description with every step's task."""

    use_scripted_models(run_deps, scripted_server, vision={"main"})
    now = await upload(user, conversation)
    plan = {
        "steps": [
            {"id": "s1", "task": "read the chart", "depends_on": []},
            {"id": "s2", "task": "name its colour", "depends_on": ["s1"]},
        ]
    }
    verdict = {"achieved": True, "confidence": 0.9, "reason": "ok"}
    scripted_server.enqueue(
        text(json.dumps(plan)),
        text("A red chart."),
        text("Red."),
        text(json.dumps(verdict)),
        text("The chart is red."),
    )
    await send(socket, type="message", content="What colour?", attachments=[now], mode="dag")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]

    planner, step1, step2, checker, answer = scripted_server.requests
    assert planner["model"] == "scripted-main" and images_in(planner["messages"][-1]) == 1
    for step in (step1, step2):
        assert step["model"] == "scripted-fast"
        assert not any(images_in(m) for m in step["messages"])
        task = step["messages"][-1]["content"]
        assert task.startswith("Your task: ")
        assert "[image: now.png, 32x24 — PNG 32x24; mostly red" in task
    assert not any(images_in(m) for m in checker["messages"])
    assert answer["model"] == "scripted-main" and images_in(answer["messages"][-1]) == 1


async def test_a_model_that_refuses_images_still_answers_from_their_descriptions(
    socket, user, conversation, run_deps, scripted_server
):
    """Configured as able to see, its endpoint refuses image parts: the same call goes again
    with the description, the run answers, and the next run sends text from the start."""

    use_scripted_models(run_deps, scripted_server, vision=True, prefix="refuses-images")
    now = await upload(user, conversation)
    refusal = http_error(
        400, "Invalid content type. image_url is only supported by certain models."
    )
    scripted_server.enqueue(refusal, text("It is red."))
    await send(socket, type="message", content="What colour?", attachments=[now])
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    refused, answered = scripted_server.requests
    assert images_in(refused["messages"][-1]) == 1
    assert answered["messages"][-1]["content"].startswith(
        "What colour?\n[image: now.png, 32x24 — PNG 32x24; mostly red"
    )

    # The fast model, which can see, describes the image that is now text for the next run,
    # right after this answer.
    async with asyncio.timeout(WAIT):
        await ahead.wait_idle()
    [_refused, _answered, described] = scripted_server.requests
    assert described["model"] == "refuses-images-fast" and len(described["messages"]) == 1

    scripted_server.reset()
    scripted_server.enqueue(text("Still red."))
    await send(socket, type="message", content="And now?")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    # No refusal again: the main model is sent text from the start, and nothing before it.
    [request] = scripted_server.requests
    assert request["model"] == "refuses-images-main"
    assert not any(images_in(m) for m in request["messages"])
