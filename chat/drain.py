"""Draining: how a server process shuts down without losing a run (docs/operations.md).

On SIGTERM the process stops starting runs (``is_draining``; a client is told
``server_draining`` and sends again after reconnecting, to another process), lets running
runs finish for up to ``FIMONE_DRAIN_SECONDS``, interrupts the rest and stops. A second
SIGTERM cuts the wait short.

Per process on purpose: a deploy stops one process at a time while the others keep serving,
and ``/healthz`` answers 503 while draining so that load balancers send new sockets elsewhere.
The server-specific part (which signal, how to stop the server) is wired in ``config.asgi``.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable

from django.conf import settings

logger = logging.getLogger(__name__)

_state: dict = {"draining": False, "hurry": None, "task": None}


def is_draining() -> bool:
    return _state["draining"]


def begin() -> None:
    _state["draining"] = True


def hurry() -> None:
    """Stop waiting for running runs (a second SIGTERM)."""
    if _state["hurry"] is not None:
        _state["hurry"].set()


def reset() -> None:
    """Back to serving (tests)."""
    _state.update(draining=False, hurry=None, task=None)


async def drain(
    *,
    running: Callable[[], int],
    interrupt_rest: Callable[[], Awaitable[int]],
    grace: float,
    poll: float = 0.1,
) -> int:
    """Refuse new runs, wait up to ``grace`` seconds for ``running()`` to reach 0, then
    interrupt what is left. Returns how many runs were interrupted."""
    begin()
    hurry = _state["hurry"] = _state["hurry"] or asyncio.Event()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    logger.warning("draining: %d run(s) running, waiting up to %gs", running(), grace)
    while running() and not hurry.is_set():
        left = deadline - loop.time()
        if left <= 0:
            break
        try:
            await asyncio.wait_for(hurry.wait(), min(poll, left))
        except TimeoutError:
            pass
    interrupted = await interrupt_rest() if running() else 0
    logger.warning("drained: %d run(s) interrupted", interrupted)
    return interrupted


def install_sigterm_drain(
    *,
    loop: asyncio.AbstractEventLoop,
    running: Callable[[], int],
    interrupt_rest: Callable[[], Awaitable[int]],
    stop: Callable[[], None],
) -> None:
    """SIGTERM drains then calls ``stop``; a second SIGTERM interrupts at once. Call it in
    the main thread once the server's own handlers are installed (it replaces theirs)."""

    def on_sigterm() -> None:
        if _state["task"] is not None:
            hurry()
            return

        async def drain_then_stop() -> None:
            try:
                await drain(
                    running=running,
                    interrupt_rest=interrupt_rest,
                    grace=settings.FIMONE_DRAIN_SECONDS,
                )
            except Exception:
                logger.exception("draining failed; stopping anyway")
            finally:
                stop()

        _state["task"] = loop.create_task(drain_then_stop())

    signal.signal(signal.SIGTERM, lambda signum, frame: loop.call_soon_threadsafe(on_sigterm))
