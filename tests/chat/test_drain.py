"""The drain's timing rules on a fake run count (the real thing: tests/e2e/test_drain.py)."""

from __future__ import annotations

import asyncio

import pytest

from chat import drain


@pytest.fixture(autouse=True)
def serving():
    drain.reset()
    yield
    drain.reset()


async def test_runs_that_finish_within_the_grace_period_are_not_interrupted():
    left = [2]
    interrupted = []
    asked = asyncio.Event()

    def running() -> int:
        asked.set()  # the drain is counting the runs: it has begun its wait
        return left[0]

    async def finish_them():
        await asked.wait()
        left[0] = 0

    async def interrupt_rest():
        interrupted.append(left[0])
        return left[0]

    finisher = asyncio.create_task(finish_them())
    count = await drain.drain(running=running, interrupt_rest=interrupt_rest, grace=5)
    await finisher
    assert count == 0 and interrupted == [] and drain.is_draining()


async def test_runs_still_running_after_the_grace_period_are_interrupted():
    async def interrupt_rest():
        return 3

    loop = asyncio.get_running_loop()
    started = loop.time()
    count = await drain.drain(running=lambda: 3, interrupt_rest=interrupt_rest, grace=0.3)
    assert count == 3 and 0.3 <= loop.time() - started < 2


async def test_hurrying_skips_the_rest_of_the_wait():
    async def interrupt_rest():
        return 1

    asked = asyncio.Event()

    def running() -> int:
        asked.set()  # the drain is counting the runs: it has begun its wait
        return 1

    task = asyncio.create_task(
        drain.drain(running=running, interrupt_rest=interrupt_rest, grace=60)
    )
    await asked.wait()
    drain.hurry()
    assert await asyncio.wait_for(task, 2) == 1
