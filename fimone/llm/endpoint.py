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
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import openai

from contextmgmt.core.providers import (
    REASONING_FIELDS,
    ProviderProfile,
    reasoning_echo_refusal,
    unsupported_parameter,
)

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
        (a reasoning model refuses ``max_tokens`` first, then ``temperature``)."""
        refused: set[str] = set()
        while True:
            sent = self.profile.adapt(kwargs)
            try:
                return await post(sent)
            except openai.BadRequestError as err:
                param = unsupported_parameter(
                    err.message, _param_of(err), sent
                ) or reasoning_echo_refusal(err.message, sent)
                adapted = self.profile.without(param) if param and param not in refused else None
                if adapted is None:
                    raise
                refused.add(param)
                log.warning("endpoint refused %s (%s); retrying without it", param, err.message)
                self.profile = adapted
                await self._learn(param, err.message)

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


def _param_of(err: openai.APIStatusError) -> str | None:
    param = getattr(err, "param", None)
    if param:
        return str(param)
    body = err.body if isinstance(err.body, dict) else {}
    inner = body.get("error") if isinstance(body.get("error"), dict) else body
    value = inner.get("param") if isinstance(inner, dict) else None
    return str(value) if value else None
