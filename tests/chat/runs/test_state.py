"""A run's follow-ups (``TrackedInjections``): which the engine took, and, with several
server processes, those stored for the run that were not handed to it yet (RP.1)."""

from __future__ import annotations

import asyncio

import pytest

from chat import services
from chat.models import Conversation
from chat.runs.deps import RunDeps
from chat.runs.preparation import stored_follow_ups
from chat.runs.state import Run, RunState, TrackedInjections
from chat.runs.storage import OpenedRun
from contextmgmt.core.messages import ChatMessage


def follow_up(message_id: int, text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text, metadata={"id": message_id})


class StoredFollowUps:
    """The database as ``look_up`` sees it: follow-ups stored for the run, by id."""

    def __init__(self, *messages: ChatMessage) -> None:
        self.messages = list(messages)
        self.asked_without: list[frozenset[int]] = []

    async def __call__(self, taken_ids: frozenset[int]) -> list[ChatMessage]:
        self.asked_without.append(taken_ids)
        return [m for m in self.messages if m.metadata["id"] not in taken_ids]


async def test_an_engine_about_to_end_takes_a_follow_up_stored_but_not_handed_over():
    stored = StoredFollowUps(follow_up(7, "Answer in one word, please."))
    injections = TrackedInjections(look_up=stored)

    late = await injections.drain_settled(0.01)

    assert [m.content for m in late] == ["Answer in one word, please."]
    assert all(m.pinned and m.injected for m in late)  # as any follow-up the engine drains
    assert injections.taken_ids == {7}


async def test_a_follow_up_taken_from_the_database_is_not_taken_again_when_handed_over():
    stored = StoredFollowUps(follow_up(7, "late"))
    injections = TrackedInjections(look_up=stored)
    assert len(await injections.drain_settled(0.01)) == 1

    injections.put_nowait(follow_up(7, "late"))  # the other process's message arrives now
    assert injections.drain() == []
    injections.put_nowait(follow_up(8, "later still"))
    assert [m.content for m in injections.drain()] == ["later still"]


def test_a_follow_up_without_an_id_does_not_hide_the_next_one_without_an_id():
    """RP.1: only stored ids count as taken; a message that has none is never dropped."""
    injections = TrackedInjections()
    injections.put_nowait(ChatMessage(role="user", content="first"))
    assert [m.content for m in injections.drain()] == ["first"]

    injections.put_nowait(ChatMessage(role="user", content="second"))
    assert [m.content for m in injections.drain()] == ["second"]
    assert injections.taken_ids == set()


async def test_the_database_is_read_only_when_no_follow_up_was_handed_over():
    stored = StoredFollowUps(follow_up(9, "stored"))
    injections = TrackedInjections(look_up=stored)
    injections.put_nowait(follow_up(8, "handed over"))

    assert [m.content for m in await injections.drain_settled(0.01)] == ["handed over"]
    assert stored.asked_without == []
    # The next time the engine would end, the one only stored is read, the taken one left.
    assert [m.content for m in await injections.drain_settled(0.01)] == ["stored"]
    assert stored.asked_without == [frozenset({8})]


async def test_one_process_never_reads_the_database():
    injections = TrackedInjections()
    assert await injections.drain_settled(0.01) == []


@pytest.mark.django_db
def test_stored_follow_ups_are_the_runs_own_not_taken_oldest_first(user):
    conversation = Conversation.objects.create(owner=user)
    services.user_message_create(conversation=conversation, content="the question")
    first = services.user_message_create(
        conversation=conversation, content="first", injected=True, run_id="run-a"
    )
    services.user_message_create(
        conversation=conversation, content="another run's", injected=True, run_id="run-b"
    )
    second = services.user_message_create(
        conversation=conversation, content="second", injected=True, run_id="run-a"
    )

    def contents(taken: frozenset[int]) -> list[str]:
        found = stored_follow_ups(
            conversation_id=conversation.pk, run_id="run-a", taken_ids=taken, vision=False
        )
        return [m.content for m in found]

    assert contents(frozenset()) == ["first", "second"]
    assert contents(frozenset({first.pk})) == ["second"]
    assert contents(frozenset({first.pk, second.pk})) == []


def a_run() -> Run:
    opened = OpenedRun(run_id="r1", query=None, answer_id=2, mode="react")  # type: ignore[arg-type]
    return Run(
        opened=opened,
        conversation_id="c1",
        deps=RunDeps(),
        started=0.0,
        publisher=None,  # type: ignore[arg-type]
        control_channel="ch",
    )


async def ended(run: Run, *, fail: bool = False) -> RunState:
    async def work():
        if fail:
            raise RuntimeError("broken")
        await asyncio.Event().wait()

    run.work = asyncio.create_task(work())
    await asyncio.sleep(0)
    return run.state


async def test_rd1_a_stop_asked_for_is_the_state_and_its_ending_one_value():
    """RD.1: one enum for a run's state and ending, in place of five booleans."""
    run = a_run()
    assert await ended(run) is RunState.WORKING and not run.finishing
    assert run.request_interrupt() and run.state is RunState.INTERRUPTING
    assert run.request_cancel() and run.state is RunState.INTERRUPTING  # the first reason
    with pytest.raises(asyncio.CancelledError):
        await run.work
    assert run.end(run.work) is RunState.INTERRUPTED and run.state.stopped and run.finishing
    assert not run.request_cancel()

    run = a_run()
    await ended(run)
    assert run.request_cancel() and run.state is RunState.CANCELLING
    with pytest.raises(asyncio.CancelledError):
        await run.work
    assert run.end(run.work) is RunState.CANCELLED and run.state.value == "cancelled"

    run = a_run()
    await ended(run, fail=True)
    assert run.end(run.work) is RunState.FAILED and run.state.value == "error"
    assert not run.state.stopped
