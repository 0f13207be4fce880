"""Describing ahead: once an answer is stored and announced, the image it pushed out of the
pixel turns is described in the background by the fast model, so the next run asks no
model before its first call; a failure there changes nothing the user sees, and neither a
next run, a stop nor a shutdown waits on such a description for long."""

from __future__ import annotations

import asyncio

import pytest

from chat import drain, image_describer, runs
from chat.models import Attachment, Message
from chat.runs import ahead
from chat.runs.registry import registry
from tests.chat.images import note_waits_for_descriptions
from tests.chat.images.test_lifecycle_runs import (
    DESCRIBED,
    earlier_turns,
    images_in,
    use_scripted_models,
)
from tests.support.fake_llm import FakeLLM
from tests.support.runs import WAIT, events_until, next_event, send
from tests.support.scripted_server import server_error, text

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs"),
]


@pytest.fixture(autouse=True)
def two_pixel_turns(settings):
    settings.FIMONE_IMAGE_PIXEL_TURNS = 2


async def described_ahead() -> None:
    async with asyncio.timeout(WAIT):
        await ahead.wait_idle()


async def answered(socket, content: str) -> list[dict]:
    await send(socket, type="message", content=content)
    events = await events_until(socket, "done", "error", "run.cancelled")
    assert events[-1]["type"] == "done", events[-1]
    return events


def describe_calls(scripted_server) -> list[dict]:
    """The describer's requests: one message, no tools (the engine's carry more)."""
    return [r for r in scripted_server.requests if len(r["messages"]) == 1]


async def source_of(image: Attachment) -> tuple[str, str]:
    stored = await Attachment.objects.aget(pk=image.pk)
    return stored.description_source, stored.description


async def test_the_image_that_left_the_pixel_turns_is_described_after_the_answer(
    socket, user, conversation, run_deps, scripted_server
):
    use_scripted_models(run_deps, scripted_server, vision=True)
    chart0, chart1 = await earlier_turns(user, conversation, 2)
    scripted_server.enqueue(text("Two charts."), text(DESCRIBED))
    events = await answered(socket, "compare")

    # Both charts were pixel turns of this run: no description before its answer.
    first = scripted_server.requests[0]
    assert len(first["messages"]) > 1
    await described_ahead()
    # This run's question is now the newest turn: chart 0 goes as text next time, and
    # has the fast model's words without a new message.
    [describe] = describe_calls(scripted_server)
    assert images_in(describe["messages"][0]) == 1
    assert await source_of(chart0) == ("model", DESCRIBED)
    assert (await source_of(chart1))[0] == "offline"
    assert await Message.objects.filter(conversation=conversation).acount() == 6

    # The calls count as upkeep on the answer that pushed the image out: the done event
    # (sent before) has none of it, the stored usage has it, the answer's own part unchanged.
    done = events[-1]["usage"]
    assert "described_after" not in done
    answer = await Message.objects.aget(pk=events[-1]["message_id"])
    stored = answer.metadata["usage"]
    extra = stored["described_after"]
    assert extra["images"] == 1 and extra["input_tokens"] > 0
    assert stored["input_tokens"] == done["input_tokens"] + extra["input_tokens"]
    assert (
        stored["compaction_input_tokens"]
        == done["compaction_input_tokens"] + (extra["input_tokens"])
    )
    assert stored["output_tokens"] - stored["compaction_output_tokens"] == (
        done["output_tokens"] - done["compaction_output_tokens"]
    )
    # The page is told, with the new usage (its card, the gauge read again).
    told = await next_event(socket)
    assert told == {
        "type": "images.described",
        "message_id": answer.pk,
        "usage": stored,
        "elapsed_ms": answer.metadata["elapsed_ms"],
    }

    # The next run asks no model before its first call, and sends the model's words.
    scripted_server.reset()
    scripted_server.enqueue(text("Still two."), text(DESCRIBED))
    await answered(socket, "and now?")
    request = scripted_server.requests[0]
    assert len(request["messages"]) > 1
    users = [m for m in request["messages"] if m["role"] == "user"]
    assert users[0]["content"] == f"look at chart 0\n[image: chart0.png, 32x24 — {DESCRIBED}]"
    assert [images_in(m) for m in users] == [0, 1, 0, 0]
    await described_ahead()  # chart 1 left the pixel turns in its turn
    assert await source_of(chart1) == ("model", DESCRIBED)


async def test_a_failed_description_ahead_changes_nothing_and_the_next_run_asks_once_more(
    socket, user, conversation, run_deps, scripted_server
):
    use_scripted_models(run_deps, scripted_server, vision=True)
    chart0, _chart1 = await earlier_turns(user, conversation, 2)
    scripted_server.enqueue(text("Two charts."), server_error(500))
    events = await answered(socket, "compare")
    await described_ahead()
    assert len(describe_calls(scripted_server)) == 1
    assert (await source_of(chart0))[0] == "offline"  # not marked failed: asked again
    answer = await Message.objects.aget(pk=events[-1]["message_id"])
    assert answer.metadata["usage"] == events[-1]["usage"]
    await socket.receive_nothing()  # no error shown

    # The next run's preparation falls back: it asks before its first call.
    scripted_server.reset()
    scripted_server.enqueue(text(DESCRIBED), text("Still two."), text(DESCRIBED))
    await answered(socket, "and now?")
    ask, request = scripted_server.requests[:2]
    assert len(ask["messages"]) == 1 and len(request["messages"]) > 1
    users = [m for m in request["messages"] if m["role"] == "user"]
    assert users[0]["content"] == f"look at chart 0\n[image: chart0.png, 32x24 — {DESCRIBED}]"
    assert await source_of(chart0) == ("model", DESCRIBED)


# --- a description still under way ------------------------------------------------------------


class GatedFast(FakeLLM):
    """A fast model that sees images and answers once ``gate`` is set."""

    supports_vision = True

    def __init__(self) -> None:
        super().__init__(model_name="fast", default=DESCRIBED)
        self.gate = asyncio.Event()
        self.asked = asyncio.Event()

    async def chat(self, messages, *, tools=None, **opts):
        self.asked.set()
        await self.gate.wait()
        return await super().chat(messages, tools=tools, **opts)


@pytest.fixture
def gated(run_deps, monkeypatch):
    """Main and fast models in process; ``waiting`` is set when a run's preparation starts
    waiting for a description another caller is making."""
    main, fast = FakeLLM(model_name="main", default="Answered."), GatedFast()
    run_deps.use(get_llm=lambda role: main if role == "main" else fast)
    return main, fast, note_waits_for_descriptions(monkeypatch)


async def test_the_next_run_waits_for_a_description_under_way_instead_of_asking_again(
    socket, user, conversation, gated
):
    main, fast, waiting = gated
    chart0, _chart1 = await earlier_turns(user, conversation, 2)
    await answered(socket, "compare")
    async with asyncio.timeout(WAIT):
        await registry.wait_idle(conversation.id)
    assert ahead.count() == 1 and runs.local_run_count() == 1  # the drain waits for it

    await send(socket, type="message", content="and now?")
    async with asyncio.timeout(WAIT):
        await waiting.wait()
    assert len(main.calls) == 1  # the next run has not called its model yet
    fast.gate.set()
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    assert len(fast.calls) == 1  # one description of chart 0, not two
    users = [m for m in main.calls[1].messages if m.role == "user"]
    assert users[0].text() == f"look at chart 0\n[image: chart0.png, 32x24 — {DESCRIBED}]"
    assert await source_of(chart0) == ("model", DESCRIBED)


async def test_stopping_the_next_run_while_it_waits_leaves_the_description_to_finish(
    socket, user, conversation, gated
):
    _main, fast, waiting = gated
    chart0, _chart1 = await earlier_turns(user, conversation, 2)
    await answered(socket, "compare")
    await send(socket, type="message", content="and now?")
    async with asyncio.timeout(WAIT):
        await waiting.wait()
    await send(socket, type="cancel")
    events = await events_until(socket, "done", "error", "run.cancelled")
    assert events[-1]["type"] == "run.cancelled"
    assert ahead.count() == 1  # not cancelled with the run
    fast.gate.set()
    await described_ahead()
    assert await source_of(chart0) == ("model", DESCRIBED)


async def test_a_shutdown_cancels_a_description_under_way_and_stores_nothing(
    socket, user, conversation, gated
):
    _main, fast, _waiting = gated
    chart0, _chart1 = await earlier_turns(user, conversation, 2)
    await answered(socket, "compare")
    async with asyncio.timeout(WAIT):
        await fast.asked.wait()  # the call is under way (its gate stays shut)
    drain.reset()
    try:
        interrupted = await drain.drain(
            running=runs.local_run_count, interrupt_rest=runs.interrupt_local_runs, grace=0
        )
        assert interrupted == 0 and runs.local_run_count() == 0
    finally:
        drain.reset()
    assert (await source_of(chart0))[0] == "offline"  # the next run asks for it
    assert image_describer._in_flight == {}
