"""Retrying a model call: how long to wait, and whether to try again at all.

fimone owns every retry; the SDK's own are switched off (``max_retries=0`` on its client), so
that a wait the user should know about is never spent silently inside the SDK, and the two
never multiply (docs/operations.md, "Rate limits and retries").

- A **429** is retried up to ``rate_limit_retries`` times. The wait is what the endpoint
  says: ``Retry-After`` (seconds, or an HTTP date), ``retry-after-ms``, else the latest of
  OpenAI's ``x-ratelimit-reset-requests`` / ``x-ratelimit-reset-tokens`` (``"1s"``,
  ``"6m0s"``, ``"250ms"``); without any, exponential backoff (1, 2, 4, … s) with full jitter.
  Every wait is capped at ``max_wait`` seconds; an endpoint that asks for longer is not
  waited for (the answer ends ``llm_rate_limited`` at once, saying how long it asked).
- **5xx**, timeouts and connection errors are retried ``max_retries`` times, with the same
  backoff (or the endpoint's ``Retry-After``).
- Anything else (a 400, a 401, …) is not retried here.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import openai

from contextmgmt.core.llm import LLMRateLimited

log = logging.getLogger(__name__)

BASE_SECONDS = 1.0
MAX_WAIT_SECONDS = 60.0
RATE_LIMIT_RETRIES = 5
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_retries: int = 2  # 5xx, timeouts, connection errors
    rate_limit_retries: int = RATE_LIMIT_RETRIES
    max_wait: float = MAX_WAIT_SECONDS

    def attempts_for(self, err: BaseException) -> int:
        """How many retries ``err``'s kind gets."""
        if isinstance(err, openai.RateLimitError):
            return self.rate_limit_retries
        if _transient(err):
            return self.max_retries
        return 0


@dataclass(frozen=True, slots=True)
class Retry:
    """Try again after ``wait`` seconds; ``attempt`` of ``attempts``."""

    wait: float
    attempt: int
    attempts: int
    rate_limited: bool


class TooLongAWait(Exception):
    """The endpoint asked for a longer wait than ``max_wait``."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the endpoint asked to wait {seconds:.0f} seconds")
        self.seconds = seconds


def next_retry(
    err: BaseException, done: int, policy: RetryPolicy, rng: random.Random | None = None
) -> Retry | None:
    """The retry after ``done`` retries failed with ``err``, or None when there is none.

    Raises ``TooLongAWait`` when a 429 asks for more than ``policy.max_wait``."""
    attempts = policy.attempts_for(err)
    if done >= attempts:
        return None
    asked = asked_wait(err)
    rate_limited = isinstance(err, openai.RateLimitError)
    if asked is not None and asked > policy.max_wait:
        if rate_limited:
            raise TooLongAWait(asked)
        asked = policy.max_wait
    uniform = rng.uniform if rng is not None else random.uniform
    if asked is None:
        wait = uniform(0, min(policy.max_wait, BASE_SECONDS * 2**done))
    else:
        # A little jitter past the reset, so that clients told the same time do not all
        # come back in the same instant.
        wait = min(policy.max_wait, asked * (1 + uniform(0, 0.1)))
    return Retry(wait=wait, attempt=done + 1, attempts=attempts, rate_limited=rate_limited)


def asked_wait(err: BaseException, now: datetime | None = None) -> float | None:
    """The seconds the endpoint asked to wait, from the response's headers; None if none."""
    response = getattr(err, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value:
        seconds = _retry_after(value, now)
        if seconds is not None:
            return seconds
    resets = [
        _duration(headers.get(name) or "")
        for name in ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")
    ]
    found = [r for r in resets if r is not None]
    return max(found) if found else None


def _retry_after(value: str, now: datetime | None) -> float | None:
    """``Retry-After``: delay-seconds or an HTTP date (RFC 9110 §10.2.3)."""
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _duration(value: str) -> float | None:
    """OpenAI's reset durations: ``"1s"``, ``"6m0s"``, ``"1h2m3.5s"``, ``"250ms"``."""
    value = value.strip()
    if not value:
        return None
    parts = _DURATION.findall(value)
    if not parts or "".join(n + u for n, u in parts) != value:
        try:
            return max(0.0, float(value))  # some gateways send plain seconds
        except ValueError:
            return None
    return sum(float(n) * _UNIT[u] for n, u in parts)


def _transient(err: BaseException) -> bool:
    if isinstance(err, openai.APIStatusError):
        return err.status_code >= 500 or err.status_code in (408, 409)
    return isinstance(err, openai.APITimeoutError | openai.APIConnectionError)


def retry_or_raise(err: Exception, done: int, policy: RetryPolicy, who: str) -> Retry:
    """The retry after ``err``; raises ``err`` when there is none, ``LLMRateLimited`` when
    the endpoint asks for a longer wait than ``policy.max_wait``."""
    try:
        retry = next_retry(err, done, policy)
    except TooLongAWait as long:
        raise LLMRateLimited(
            f"the model endpoint is rate limiting us and {long}, longer than fimone "
            f"waits ({policy.max_wait:g} s)"
        ) from err
    if retry is None:
        raise err
    log.info(
        "%s: %s; retry %d of %d in %.1f s", who, err, retry.attempt, retry.attempts, retry.wait
    )
    return retry


async def retrying(call: Callable[[], Awaitable[Any]], policy: RetryPolicy, who: str) -> Any:
    """``await call()``, retried as the policy says (cancellation ends the wait)."""
    done = 0
    while True:
        try:
            return await call()
        except (openai.APIStatusError, openai.APIConnectionError) as err:
            retry = retry_or_raise(err, done, policy, who)
        done += 1
        await asyncio.sleep(retry.wait)
