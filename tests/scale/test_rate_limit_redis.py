"""With Redis the websocket rate limit is one count per user for the whole deployment:
two processes (two clients of their own) share it, so another socket on another process
does not reset it."""

from __future__ import annotations

import pytest
from redis.asyncio import Redis

from chat.sockets import rate_limit

pytestmark = pytest.mark.scale


async def test_two_processes_share_one_users_window(redis_server):
    first, second = Redis.from_url(redis_server.url), Redis.from_url(redis_server.url)
    await first.delete(rate_limit.KEY_PREFIX + "42", rate_limit.KEY_PREFIX + "43")
    try:
        a, b = rate_limit.RedisWindow(first), rate_limit.RedisWindow(second)
        counts = [await w.hit("42", now=100.0 + i, window=10.0) for i, w in enumerate([a, b, a, b])]
        assert counts == [1, 2, 3, 4]
        assert await b.hit("43", now=104.0, window=10.0) == 1
        # Frames older than the window no longer count, whichever process saw them.
        assert await a.hit("42", now=112.5, window=10.0) == 2
    finally:
        await first.aclose()
        await second.aclose()


async def test_frame_allowed_counts_in_redis_when_redis_is_the_layer(redis_server, settings):
    settings.REDIS_URL = redis_server.url
    settings.FIMONE_WS_RATE_LIMIT = 2
    settings.FIMONE_WS_RATE_WINDOW_SECONDS = 60.0
    rate_limit.reset()
    client = Redis.from_url(redis_server.url)
    key = f"{rate_limit.KEY_PREFIX}{rate_limit._deployment()}:7"
    try:
        await client.delete(key)
        assert [await rate_limit.frame_allowed(7) for _ in range(3)] == [True, True, False]
        assert await client.zcard(key) == 3
    finally:
        rate_limit.reset()
        await client.aclose()
