"""A small websocket client for tests against real daphne processes (``websockets``).

Every frame a socket receives is kept in ``events``, in order; ``wait_for`` waits until
one matches. Frames are read by a background task, so nothing is missed between waits.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

WAIT_SECONDS = 30.0  # liveness bound for one expected event, not a speed assertion


class Socket:
    def __init__(self, ws: ClientConnection, name: str) -> None:
        self.ws = ws
        self.name = name
        self.events: list[dict[str, Any]] = []
        self._changed = asyncio.Condition()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, server, conversation_id: Any, name: str = "") -> Socket:
        ws = await connect(
            f"{server.ws_url}/ws/chat/{conversation_id}/",
            additional_headers=server.ws_headers(),
            proxy=None,  # loopback: never through an environment proxy
            open_timeout=WAIT_SECONDS,
        )
        return cls(ws, name or f"socket@{server.port}")

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                async with self._changed:
                    self.events.append(json.loads(raw))
                    self._changed.notify_all()
        finally:
            async with self._changed:
                self._changed.notify_all()

    async def send(self, **frame: Any) -> None:
        await self.ws.send(json.dumps(frame))

    def matching(self, predicate: Callable[[dict], bool]) -> list[dict]:
        return [e for e in self.events if predicate(e)]

    async def wait_for(
        self, predicate: Callable[[dict], bool], *, wait_seconds: float = WAIT_SECONDS
    ) -> dict:
        """The first event (already received or coming) that matches."""
        try:
            async with asyncio.timeout(wait_seconds), self._changed:
                while True:
                    found = self.matching(predicate)
                    if found:
                        return found[0]
                    if self._reader.done():
                        raise AssertionError(f"{self.name} closed; events: {self.events}")
                    await self._changed.wait()
        except TimeoutError:
            raise AssertionError(f"{self.name}: no matching event; got {self.events}") from None

    async def wait_type(self, event_type: str, **fields: Any) -> dict:
        return await self.wait_for(
            lambda e: e.get("type") == event_type and all(e.get(k) == v for k, v in fields.items())
        )

    async def close(self) -> None:
        await self.ws.close()
        self._reader.cancel()
        await asyncio.gather(self._reader, return_exceptions=True)


def of_type(event_type: str, **fields: Any) -> Callable[[dict], bool]:
    return lambda e: e.get("type") == event_type and all(e.get(k) == v for k, v in fields.items())
