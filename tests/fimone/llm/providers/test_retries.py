"""How long a retry waits: the endpoint's Retry-After (seconds or HTTP date), retry-after-ms
and OpenAI's x-ratelimit-reset-* headers, else exponential backoff with full jitter; every
wait capped; a 429 asking for longer than the cap is not waited for.

Header forms: RFC 9110 §10.2.3 (Retry-After), OpenAI's rate-limit headers
(platform.openai.com/docs/guides/rate-limits: ``x-ratelimit-reset-requests: 1s``,
``x-ratelimit-reset-tokens: 6m0s``), and the ``retry-after-ms`` the openai SDK reads."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx2
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fimone.llm.providers.retries import (
    BASE_SECONDS,
    RetryPolicy,
    TooLongAWait,
    asked_wait,
    next_retry,
)

NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)


def status_error(status: int, headers: dict[str, str] | None = None) -> openai.APIStatusError:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx2.Response(status, headers=headers or {}, request=request)
    kind = openai.RateLimitError if status == 429 else openai.InternalServerError
    if status < 500 and status != 429:
        kind = openai.BadRequestError
    return kind("scripted", response=response, body=None)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": format_datetime(NOW + timedelta(seconds=30), usegmt=True)}, 30.0),
        ({"retry-after": format_datetime(NOW - timedelta(seconds=30), usegmt=True)}, 0.0),
        ({"retry-after-ms": "250"}, 0.25),
        ({"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "6m0s"}, 360.0),
        ({"x-ratelimit-reset-tokens": "1m30.5s"}, 90.5),
        ({"x-ratelimit-reset-requests": "20ms"}, 0.02),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_the_wait_the_endpoint_asks_for_is_read(headers, seconds):
    assert asked_wait(status_error(429, headers), now=NOW) == seconds


def test_a_429_waits_what_it_was_told_with_a_little_jitter():
    retry = next_retry(status_error(429, {"retry-after": "10"}), 0, RetryPolicy())
    assert 10 <= retry.wait <= 11 and retry.rate_limited
    assert (retry.attempt, retry.attempts) == (1, RetryPolicy().rate_limit_retries)


def test_a_429_asking_for_more_than_the_cap_is_not_waited_for():
    with pytest.raises(TooLongAWait) as raised:
        next_retry(status_error(429, {"retry-after": "3600"}), 0, RetryPolicy(max_wait=60))
    assert raised.value.seconds == 3600


@given(st.integers(0, 12), st.integers(0, 2**32))
def test_backoff_without_a_header_is_jittered_exponential_and_capped(done, seed):
    policy = RetryPolicy(rate_limit_retries=20, max_wait=60)
    retry = next_retry(status_error(429), done, policy, random.Random(seed))
    assert 0 <= retry.wait <= min(60, BASE_SECONDS * 2**done)


def test_the_budgets_are_per_kind_and_a_400_is_never_retried():
    policy = RetryPolicy(max_retries=1, rate_limit_retries=3)
    assert next_retry(status_error(429), 2, policy) is not None
    assert next_retry(status_error(429), 3, policy) is None
    assert next_retry(status_error(503), 0, policy) is not None
    assert next_retry(status_error(503), 1, policy) is None
    assert next_retry(status_error(400), 0, policy) is None
