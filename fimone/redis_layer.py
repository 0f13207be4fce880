"""channels-redis without one way of losing messages.

All channels of one process share a single Redis list in channels-redis; whichever of the
process's pending ``receive()`` calls holds the layer's receive lock pops messages for all
of them. If that holder is cancelled — channels cancels a consumer's ``receive()`` when its
websocket closes — while a message for *another* socket is in flight (popped by Redis,
not yet handed over), that message is lost (channels_redis issue 366): another tab misses
a ``done``, a stream misses a delta.

Here a cancelled ``receive()`` on a process-local channel does not cancel the Redis round
trip: the caller gets its ``CancelledError`` at once, the inner receive runs on, hands any
message for other channels over as usual, and is ended by a marker message sent to the
abandoned channel (messages for that channel are dropped: nobody listens any more).
"""

from __future__ import annotations

import asyncio
import logging

from channels_redis.core import RedisChannelLayer as _RedisChannelLayer

logger = logging.getLogger(__name__)

ABANDONED = "fimone.receive.abandoned"
# Bound on draining an abandoned channel; reached only if the marker itself was dropped
# (expired in a backlog older than the layer's expiry).
DRAIN_SECONDS = 120.0


class RedisChannelLayer(_RedisChannelLayer):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._draining: set[asyncio.Task] = set()

    async def receive(self, channel):
        if "!" not in channel:  # not process-local: no shared receive lock involved
            return await super().receive(channel)
        inner = asyncio.ensure_future(super().receive(channel))
        try:
            return await asyncio.shield(inner)
        except asyncio.CancelledError:
            if not inner.done():
                task = asyncio.ensure_future(self._drain_abandoned(channel, inner))
                self._draining.add(task)
                task.add_done_callback(self._draining.discard)
            raise

    async def _drain_abandoned(self, channel: str, inner: asyncio.Future) -> None:
        try:
            await self.send(channel, {"type": ABANDONED})
        except Exception:  # full or unreachable: fall back to what channels-redis does
            inner.cancel()
            return
        try:
            async with asyncio.timeout(DRAIN_SECONDS):
                message = await inner
                while message.get("type") != ABANDONED:
                    message = await super().receive(channel)
        except Exception:
            logger.debug("draining abandoned channel %s failed", channel, exc_info=True)
