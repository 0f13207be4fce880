"""The in-memory channel layer (one process, no Redis), without a sweep per message.

channels' ``InMemoryChannelLayer`` looks through every channel and every group for expired
messages and memberships on each ``receive()`` and ``group_send()``: with N sockets open,
each streamed event cost O(N), so a run's cost grew with the number of sockets the process
holds (150 sockets: a fifth of the process's time went to these sweeps). This layer is
built on channels' public ``BaseChannelLayer`` (the interface a layer implements) and
sweeps at most once per ``sweep_seconds``; expiry is measured in tens of seconds, so a
sweep a second is as good. Otherwise it behaves as channels' own: messages are copied on
send, a full channel raises ``ChannelFull``, an expired message takes its channel out of
every group. See docs/operations.md, "Throughput".
"""

from __future__ import annotations

import asyncio
import random
import string
import time
from collections import deque
from copy import deepcopy
from dataclasses import dataclass, field

from channels.exceptions import ChannelFull
from channels.layers import BaseChannelLayer


@dataclass
class _Channel:
    """A channel's messages (expiry time, message), oldest first, and its receivers."""

    messages: deque[tuple[float, dict]] = field(default_factory=deque)
    waiting: deque[asyncio.Future] = field(default_factory=deque)

    def wake_one(self) -> None:
        while self.waiting:
            waiter = self.waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return


class InMemoryChannelLayer(BaseChannelLayer):
    extensions = ["groups", "flush"]

    def __init__(
        self,
        expiry: float = 60,
        group_expiry: int = 86400,
        capacity: int = 100,
        channel_capacity=None,
        sweep_seconds: float = 1.0,
        **kwargs,
    ) -> None:
        # The stub says int; channels takes any number of seconds (the tests use 0.01).
        super().__init__(
            expiry=expiry,  # type: ignore[arg-type]
            capacity=capacity,
            channel_capacity=channel_capacity,
            **kwargs,
        )
        self.group_expiry = group_expiry
        self.sweep_seconds = sweep_seconds
        self.channels: dict[str, _Channel] = {}
        self.groups: dict[str, dict[str, float]] = {}
        self.sweeps = 0
        self._next_sweep = 0.0

    async def send(self, channel: str, message: dict) -> None:
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_channel_name(channel)
        assert "__asgi_channel__" not in message
        queue = self.channels.setdefault(channel, _Channel())
        if len(queue.messages) >= self.get_capacity(channel):
            raise ChannelFull(channel)
        queue.messages.append((time.time() + self.expiry, deepcopy(message)))
        queue.wake_one()

    async def receive(self, channel: str) -> dict:
        self.require_valid_channel_name(channel)
        self.sweep_if_due()
        queue = self.channels.setdefault(channel, _Channel())
        try:
            while not queue.messages:
                waiter = asyncio.get_running_loop().create_future()
                queue.waiting.append(waiter)
                try:
                    await waiter
                except asyncio.CancelledError:
                    if waiter.done() and not waiter.cancelled():
                        queue.wake_one()  # woken and cancelled: the next receiver's turn
                    raise
                finally:
                    if waiter in queue.waiting:
                        queue.waiting.remove(waiter)
            return queue.messages.popleft()[1]
        finally:
            if not queue.messages and not queue.waiting:
                self.channels.pop(channel, None)

    async def new_channel(self, prefix: str = "specific.") -> str:
        name = "".join(random.choice(string.ascii_letters) for _ in range(12))
        return f"{prefix}.inmemory!{name}"

    def sweep_if_due(self) -> None:
        now = time.monotonic()
        if now < self._next_sweep:
            return
        self._next_sweep = now + self.sweep_seconds
        self.sweep()

    def sweep(self) -> None:
        """Drop expired messages (their channels leave every group) and memberships older
        than ``group_expiry``."""
        self.sweeps += 1
        now = time.time()
        for name, queue in list(self.channels.items()):
            expired = False
            while queue.messages and queue.messages[0][0] < now:
                queue.messages.popleft()
                expired = True
            if expired:
                for members in self.groups.values():
                    members.pop(name, None)
                if not queue.messages and not queue.waiting:
                    self.channels.pop(name, None)
        joined_before = int(now) - self.group_expiry
        for members in self.groups.values():
            for name, joined in list(members.items()):
                if joined and joined < joined_before:
                    members.pop(name, None)

    async def flush(self) -> None:
        self.channels = {}
        self.groups = {}

    async def close(self) -> None:
        pass

    async def group_add(self, group: str, channel: str) -> None:
        self.require_valid_group_name(group)
        self.require_valid_channel_name(channel)
        self.groups.setdefault(group, {})[channel] = time.time()

    async def group_discard(self, group: str, channel: str) -> None:
        self.require_valid_channel_name(channel)
        self.require_valid_group_name(group)
        members = self.groups.get(group)
        if members:
            members.pop(channel, None)
            if not members:
                self.groups.pop(group, None)

    async def group_send(self, group: str, message: dict) -> None:
        assert isinstance(message, dict), "Message is not a dict"
        self.require_valid_group_name(group)
        self.sweep_if_due()
        for channel in list(self.groups.get(group, ())):
            try:
                await self.send(channel, message)
            except ChannelFull:
                pass  # as channels' layer: a full member misses this message
