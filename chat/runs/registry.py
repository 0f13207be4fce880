"""The runs this process owns, by conversation.

The registry answers "is a run active?" for this process only; ``control`` answers it for
the runs of other processes, from the database. Inject and cancel travel through the
channel layer (``events.control_group``), so they reach a run's owner wherever it lives.

A per-conversation lock makes "check for an active run, then start one or inject into it"
atomic against a second tab sending at the same moment.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any


class RunRegistry:
    def __init__(self) -> None:
        self._runs: dict[str, Any] = {}
        # conversation id -> (lock, number of holders and waiters); dropped when unused, so
        # the map does not grow with every conversation ever opened, and no lock outlives
        # the event loop it was used on (tests run one loop each).
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}
        # The tasks of runs that left the registry but still close (they announce their end,
        # then may start a follow-up run), by conversation: ``wait_idle`` waits for them.
        self._closing: dict[asyncio.Task, str] = {}

    @staticmethod
    def _key(conversation_id: Any) -> str:
        return str(conversation_id)

    def get(self, conversation_id: Any):
        return self._runs.get(self._key(conversation_id))

    def add(self, run) -> None:
        key = self._key(run.conversation_id)
        if key in self._runs:
            raise RuntimeError(f"conversation {key} already has an active run")
        self._runs[key] = run

    def remove(self, run) -> None:
        key = self._key(run.conversation_id)
        if key not in self._runs or self._runs[key] is not run:
            return
        del self._runs[key]
        task = run.task
        if task is not None and not task.done():
            self._closing[task] = key
            task.add_done_callback(self._closed)

    def _closed(self, task: asyncio.Task) -> None:
        self._closing.pop(task, None)

    def active(self) -> list:
        return list(self._runs.values())

    @contextlib.asynccontextmanager
    async def lock(self, conversation_id: Any) -> AsyncIterator[None]:
        key = self._key(conversation_id)
        lock, users = self._locks.get(key, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users <= 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    async def wait_idle(self, conversation_id: Any = None) -> None:
        """Wait until the conversation (or every conversation) has no active run.

        For tests and graceful shutdown (wrap it in ``asyncio.timeout``); runs that left
        but still close, and follow-up runs started on the way, are waited for too.
        """
        while True:
            runs = [self.get(conversation_id)] if conversation_id else self.active()
            tasks = [r.task for r in runs if r is not None and r.task is not None]
            key = self._key(conversation_id) if conversation_id else None
            tasks += [t for t, k in self._closing.items() if key is None or k == key]
            if not tasks:
                return
            await asyncio.gather(*tasks, return_exceptions=True)
            await asyncio.sleep(0)


registry = RunRegistry()
