"""The queue of follow-ups a run reads: a follow-up announced and still loading is waited
for by ``drain_settled``, for at most the given time."""

from __future__ import annotations

import asyncio

from contextmgmt.core.messages import ChatMessage
from fimone.agent.context import InjectionQueue


def _message(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text, metadata={"id": 1})


async def test_nothing_announced_drains_at_once():
    queue = InjectionQueue()
    queue.put_nowait(_message("now"))
    drained = await asyncio.wait_for(queue.drain_settled(5.0), 1.0)
    assert [m.text() for m in drained] == ["now"]
    assert drained[0].pinned and drained[0].injected


async def test_an_announced_follow_up_is_waited_for():
    queue = InjectionQueue()
    queue.expect()

    async def loaded():
        await asyncio.sleep(0.05)
        queue.put_nowait(_message("late"))
        queue.expected_done()

    task = asyncio.create_task(loaded())
    assert [m.text() for m in await queue.drain_settled(5.0)] == ["late"]
    await task


async def test_a_follow_up_that_never_loads_is_waited_for_only_so_long():
    queue = InjectionQueue()
    queue.expect()
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert await queue.drain_settled(0.1) == []
    assert loop.time() - started < 2.0
    queue.expected_done()  # given up: the next drain does not wait
    assert await asyncio.wait_for(queue.drain_settled(5.0), 1.0) == []


async def test_done_without_expect_never_goes_below_zero():
    queue = InjectionQueue()
    queue.expected_done()
    queue.expect()
    queue.expected_done()
    assert await asyncio.wait_for(queue.drain_settled(5.0), 1.0) == []
