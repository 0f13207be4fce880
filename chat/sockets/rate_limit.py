"""How many frames one user may send over all their sockets: a sliding window per user.

Counted where every process of a deployment sees the same numbers: in Redis when the
channel layer runs on Redis (several processes), in this process when the in-memory layer
makes it the only one. A window per socket would be reset by simply reconnecting.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import uuid
from collections import deque

from django.conf import settings

logger = logging.getLogger(__name__)

KEY_PREFIX = "fimone:ws-rate:"


class MemoryWindow:
    """One process's count: right when this process is the whole deployment."""

    def __init__(self) -> None:
        self._hits: dict[str, deque[float]] = {}

    async def hit(self, key: str, *, now: float, window: float) -> int:
        """Record a frame at ``now``; how many frames ``key`` sent in the last ``window``."""
        hits = self._hits.setdefault(key, deque())
        while hits and now - hits[0] >= window:
            hits.popleft()
        hits.append(now)
        return len(hits)


class RedisWindow:
    """The deployment's count: a sorted set of frame times per user, in one Redis round
    trip (MULTI): drop the expired, add this frame, count, let an idle key expire."""

    def __init__(self, client) -> None:
        self._client = client

    async def hit(self, key: str, *, now: float, window: float) -> int:
        name = KEY_PREFIX + key
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.zremrangebyscore(name, "-inf", now - window)
            pipe.zadd(name, {f"{now:.6f}:{uuid.uuid4().hex[:8]}": now})
            pipe.zcard(name)
            pipe.expire(name, max(1, int(window) + 1))
            _, _, count, _ = await pipe.execute()
        return int(count)


_windows: dict[int, MemoryWindow | RedisWindow] = {}


def _window() -> MemoryWindow | RedisWindow:
    """One counter per event loop (a Redis client belongs to the loop that made it)."""
    loop_id = id(asyncio.get_running_loop())
    window = _windows.get(loop_id)
    if window is None:
        url = getattr(settings, "REDIS_URL", "")
        if url:
            from redis.asyncio import BlockingConnectionPool, Redis

            pool = BlockingConnectionPool.from_url(url, max_connections=50, timeout=5)
            window = RedisWindow(Redis(connection_pool=pool))
        else:
            window = MemoryWindow()
        _windows[loop_id] = window
    return window


def clock() -> float:
    """Wall time, the same on every machine of a deployment (a seam for tests)."""
    return time.time()


def _deployment() -> str:
    """User ids are per database: two deployments sharing one Redis count apart."""
    db = settings.DATABASES["default"]
    where = f"{db.get('HOST', '')}:{db.get('PORT', '')}:{db.get('NAME', '')}"
    return hashlib.sha256(where.encode()).hexdigest()[:12]


async def frame_allowed(user_id: int) -> bool:
    """Count one frame of ``user_id``; False once they exceed the limit (refused frames
    count too, so hammering does not pay)."""
    window = settings.FIMONE_WS_RATE_WINDOW_SECONDS
    key = f"{_deployment()}:{user_id}"
    try:
        count = await _window().hit(key, now=clock(), window=window)
    except Exception:
        # Redis unreachable: the channel layer is failing too, and refusing every frame
        # would add nothing; let the frame through and say so.
        logger.warning("rate limit not counted for user %s", user_id, exc_info=True)
        return True
    return count <= settings.FIMONE_WS_RATE_LIMIT


def reset() -> None:
    """Forget every count of this process (tests)."""
    _windows.clear()
