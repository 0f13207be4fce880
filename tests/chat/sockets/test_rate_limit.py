"""The websocket rate limit counts per user, over all of their sockets (in-memory layer)."""

from __future__ import annotations

import pytest

from chat.sockets import rate_limit


@pytest.fixture(autouse=True)
def fresh_counts(settings):
    settings.REDIS_URL = ""
    settings.FIMONE_WS_RATE_LIMIT = 3
    settings.FIMONE_WS_RATE_WINDOW_SECONDS = 10.0
    rate_limit.reset()
    yield
    rate_limit.reset()


@pytest.fixture
def frozen_clock(monkeypatch):
    now = [1_000.0]
    monkeypatch.setattr(rate_limit, "clock", lambda: now[0])
    return now


async def test_the_limit_is_per_user_not_per_socket(frozen_clock):
    # Three frames from "three sockets" of user 1: all are the same user's budget.
    assert [await rate_limit.frame_allowed(1) for _ in range(3)] == [True] * 3
    assert await rate_limit.frame_allowed(1) is False
    assert await rate_limit.frame_allowed(2) is True  # another user is not affected


async def test_the_window_slides(frozen_clock):
    for _ in range(3):
        await rate_limit.frame_allowed(1)
    frozen_clock[0] += 5
    assert await rate_limit.frame_allowed(1) is False
    frozen_clock[0] += 5.01  # the first three frames left the window; the refused one did not
    assert await rate_limit.frame_allowed(1) is True
    assert await rate_limit.frame_allowed(1) is True
    assert await rate_limit.frame_allowed(1) is False
