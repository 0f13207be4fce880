"""The live provider profile of one endpoint: requests adapted to it, answers teaching it.

``contextmgmt.core.providers`` says what a profile is. This is the client's side of it:

- ``send`` adapts a request to the profile and, when the endpoint answers 400 naming a
  parameter it does not accept (or refusing a tool-calling step's reasoning sent back, or
  its absence), retries once without it (or with its replacement, or with it) and
  keeps the adapted profile: logged, and reported through ``on_learn`` so the model
  configuration remembers it (the admin lists it);
- ``reasoning_text`` reads a streamed delta's reasoning text from the profile's field;
- ``saw_reasoning`` / ``saw_no_stream_usage`` record what the first answers showed.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import openai

from contextmgmt.core.llm import LLMRefused
from contextmgmt.core.providers import (
    REASONING_FIELDS,
    ProviderProfile,
    reads_like_unnamed_refusal,
    reasoning_echo_refusal,
    suspects,
    unsupported_parameter,
)
from fimone.llm.providers.errors import says_overflow
from fimone.llm.providers.vision import says_no_images

log = logging.getLogger(__name__)

# on_learn(profile, refused_param, message): refused_param None for an observation.
Learner = Callable[[ProviderProfile, str | None, str], Awaitable[None]]


class Endpoint:
    def __init__(self, profile: ProviderProfile | None = None, on_learn: Learner | None = None):
        self.profile = profile or ProviderProfile()
        self._on_learn = on_learn
        self._pending_observation = False

    async def send(self, post: Callable[[dict[str, Any]], Awaitable[Any]], kwargs: dict[str, Any]):
        """``await post(adapted kwargs)``, retried once per parameter a 400 names as refused
        (a reasoning model refuses ``max_tokens`` first, then ``temperature``); a refusal
        that names none is guessed at (``_guess``). A refusal to stream raises
        ``StreamRefused`` once learnt: the caller asks again without streaming."""
        refused: set[str] = set()
        while True:
            sent = self.profile.adapt(kwargs)
            try:
                return await post(sent)
            except (openai.BadRequestError, openai.UnprocessableEntityError) as err:
                message = message_of(err)
                param = unsupported_parameter(
                    message, _param_of(err), sent
                ) or reasoning_echo_refusal(message, sent)
                adapted = self.profile.without(param) if param and param not in refused else None
                if adapted is None or param is None:
                    if param is None and not refused and _may_guess(err):
                        return await self._guess(post, kwargs, err)
                    raise
                refused.add(param)
                log.warning("endpoint refused %s (%s); retrying without it", param, message)
                self.profile = adapted
                await self._learn(param, message)
                if param == "stream":
                    raise StreamRefused(message) from err

    async def _guess(self, post: Callable[[dict[str, Any]], Awaitable[Any]], kwargs, first):
        """A refusal that names no parameter: the suspects (``SUSPECTS``, in that order) are
        left out one at a time, at most ``MAX_GUESSES`` more requests; the one whose absence
        lets the request pass is learnt. None does: ``LLMRefused`` quoting the provider."""
        base = self.profile
        tried: list[str] = []
        for name in suspects(base, base.adapt(kwargs)):
            trial = base.without(name)
            if trial is None:  # suspects() names only what changes the profile
                continue
            tried.append(name)
            try:
                result = await post(trial.adapt(kwargs))
            except (openai.BadRequestError, openai.UnprocessableEntityError) as err:
                if _may_guess(err):
                    continue
                raise
            self.profile = trial
            log.warning("endpoint refused a request naming nothing; it passed without %s", name)
            said = message_of(first)
            await self._learn(name, f"{said} (named no parameter; passed without {name})")
            return result
        if not tried:
            raise first
        raise LLMRefused(
            f"the model endpoint refused the request ({first.status_code}) without naming a "
            f"parameter, and leaving out {', '.join(tried)} one at a time did not help; it "
            f"said: {message_of(first)}"
        ) from first

    def reasoning_text(self, delta: Any) -> str:
        """The reasoning text of a streamed delta (its JSON) or of a reply message, "" if
        none."""
        if delta is None:
            return ""
        fields = (self.profile.reasoning_field,) if self.profile.reasoning_field else ()
        for name in (*fields, *REASONING_FIELDS):
            value = delta.get(name) if isinstance(delta, dict) else getattr(delta, name, None)
            if isinstance(value, str) and value:
                if not self.profile.reasoning_field:
                    self._observe(reasoning_field=name)
                return value
        return ""

    def saw_no_stream_usage(self) -> None:
        """A stream that was asked for usage ended without it (the request option is ignored)."""
        if self.profile.stream_usage:
            self._observe(stream_usage=False)

    def _observe(self, **change: Any) -> None:
        self.profile = dataclasses.replace(self.profile, **change)
        self._pending_observation = True

    async def report(self) -> None:
        """Pass on what the last call observed (called once the call is over)."""
        if self._pending_observation:
            self._pending_observation = False
            await self._learn(None, "")

    async def _learn(self, param: str | None, message: str) -> None:
        if self._on_learn is None:
            return
        try:
            await self._on_learn(self.profile, param, message)
        except Exception:  # remembering is a convenience; the answer must not fail for it
            log.exception("could not store what the endpoint answered")


class StreamRefused(Exception):
    """The endpoint refused to stream this model (learnt): ask for the reply whole."""


def _may_guess(err: openai.APIStatusError) -> bool:
    """A 400/422 that may refuse a parameter it does not name (not images, not length)."""
    message = " ".join(s for s in (err.message, str(err.body or "")) if s)
    if says_no_images(err) or says_overflow(err):
        return False
    return reads_like_unnamed_refusal(err.status_code, message)


def _param_of(err: openai.APIStatusError) -> str | None:
    param = getattr(err, "param", None)
    if param:
        return str(param)
    inner = _error_of(err)
    value = inner.get("param") or _wrapped(inner).get("param")
    return str(value) if isinstance(value, str) and value else None


def message_of(err: openai.APIStatusError) -> str:
    """What the provider said: the SDK's message, and the wrapped provider's own words when
    a gateway wrapped them (``_wrapped``)."""
    inner = _wrapped(_error_of(err)).get("message")
    if isinstance(inner, str) and inner and inner not in err.message:
        return f"{err.message}: {inner}"
    return err.message


def _error_of(err: openai.APIStatusError) -> dict[str, Any]:
    body = err.body if isinstance(err.body, dict) else {}
    inner = body.get("error") if isinstance(body.get("error"), dict) else body
    return inner if isinstance(inner, dict) else {}


def _wrapped(error: dict[str, Any]) -> dict[str, Any]:
    """The provider's error a gateway wrapped (OpenRouter: "Provider returned error", the
    provider's body as text in ``metadata.raw``); {} when there is none."""
    metadata = error.get("metadata")
    raw = metadata.get("raw") if isinstance(metadata, dict) else None
    if not isinstance(raw, str):
        return {}
    try:
        wrapped = json.loads(raw)
    except ValueError:
        return {}
    inner = wrapped.get("error") if isinstance(wrapped, dict) else None
    return inner if isinstance(inner, dict) else {}
