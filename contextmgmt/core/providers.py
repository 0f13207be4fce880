"""Provider profiles: how one OpenAI-compatible endpoint differs from the others.

The "OpenAI-compatible" servers disagree on a few request parameters and on where reasoning
text arrives. A ``ProviderProfile`` records, per endpoint:

- ``token_limit_param``: ``max_tokens`` or ``max_completion_tokens`` (OpenAI's reasoning
  models refuse the former);
- ``send_temperature``: whether a temperature may be sent (the same models refuse any value
  but the default);
- ``stream_usage``: whether ``stream_options.include_usage`` is accepted (older vLLM,
  llama.cpp builds and some gateways refuse it or send no usage in streams);
- ``reasoning_field``: the delta field carrying reasoning text (``reasoning_content`` for
  DeepSeek, vLLM and llama.cpp, ``reasoning`` for Ollama and OpenRouter; blank: read both);
- ``stream``: whether the model may stream (OpenAI refuses streaming some models to an
  unverified organisation: "Your organization must be verified to stream this model",
  ``param: stream``); when not, each call is asked whole and its answer arrives at once;
- ``reasoning_echo``: whether a tool-calling assistant message goes back with its
  ``reasoning_content`` within the turn that made it (DeepSeek's thinking mode refuses a
  request without it; its older reasoner refused one with it). Later turns never carry it:
  a stored conversation holds answers, not the steps that led to them.

Plain Python: the LLM client adapts its requests with it, the admin shows and edits it.
A profile starts from the base URL and model name (``detect``), is refined by what the
endpoint answers (``unsupported_parameter`` reads a 400 that names a refused parameter,
``without`` leaves it out; ``sending`` puts it back when an operator resets the refusal), and
is stored per model configuration so the admin sees and can correct it. docs/models.md, "Connecting
a model" lists the profiles that are tested.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

# A tool-calling assistant message's reasoning on the wire (``messages.STEP_REASONING`` holds
# it in fimone); the two names a refusal of it is remembered under: the endpoint refused a
# request that carried it, or one that lacked it.
REASONING_ECHO = "reasoning_content"
REASONING_MISSING = "reasoning_content_missing"

TokenLimitParam = Literal["max_tokens", "max_completion_tokens"]
ReasoningField = Literal["", "reasoning_content", "reasoning"]
REASONING_FIELDS: tuple[str, ...] = ("reasoning_content", "reasoning")


@dataclass(frozen=True, slots=True)
class ProviderProfile:
    name: str = "openai_compatible"
    token_limit_param: TokenLimitParam = "max_tokens"
    send_temperature: bool = True
    stream_usage: bool = True
    reasoning_field: ReasoningField = ""
    reasoning_echo: bool = False
    stream: bool = True

    def adapt(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """``kwargs`` for ``chat.completions.create`` as this endpoint accepts them."""
        out = dict(kwargs)
        if "max_tokens" in out and self.token_limit_param == "max_completion_tokens":
            out["max_completion_tokens"] = out.pop("max_tokens")
        if not self.send_temperature:
            out.pop("temperature", None)
        if not self.stream_usage:
            out.pop("stream_options", None)
        if "messages" in out:
            out["messages"] = _echo(out["messages"], self.reasoning_echo)
        return out

    def without(self, param: str) -> ProviderProfile | None:
        """This profile after the endpoint refused ``param``; None if that changes nothing."""
        if param == "max_tokens" and self.token_limit_param == "max_tokens":
            return dataclasses.replace(self, token_limit_param="max_completion_tokens")
        if param == "max_completion_tokens" and self.token_limit_param != "max_tokens":
            return dataclasses.replace(self, token_limit_param="max_tokens")
        if param == "temperature" and self.send_temperature:
            return dataclasses.replace(self, send_temperature=False)
        if param in ("stream_options", "include_usage") and self.stream_usage:
            return dataclasses.replace(self, stream_usage=False)
        if param == "stream" and self.stream:
            return dataclasses.replace(self, stream=False)
        if param == REASONING_ECHO and self.reasoning_echo:
            return dataclasses.replace(self, reasoning_echo=False)
        if param == REASONING_MISSING and not self.reasoning_echo:
            return dataclasses.replace(self, reasoning_echo=True)
        return None

    def sending(self, param: str) -> ProviderProfile:
        """This profile sending ``param`` again: what ``without(param)`` changed, undone
        (an operator's reset of a remembered refusal)."""
        if param == "max_tokens":
            return dataclasses.replace(self, token_limit_param="max_tokens")
        if param == "max_completion_tokens":
            return dataclasses.replace(self, token_limit_param="max_completion_tokens")
        if param == "temperature":
            return dataclasses.replace(self, send_temperature=True)
        if param in ("stream_options", "include_usage"):
            return dataclasses.replace(self, stream_usage=True)
        if param in (REASONING_ECHO, REASONING_MISSING):
            return dataclasses.replace(self, reasoning_echo=param == REASONING_ECHO)
        if param == "stream":
            return dataclasses.replace(self, stream=True)
        return self

    def settings(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# The profiles fimone is tested against (tests/support/scripted_server.py reproduces each).
PROFILES: dict[str, ProviderProfile] = {
    p.name: p
    for p in (
        ProviderProfile("openai_compatible"),
        ProviderProfile("openai", token_limit_param="max_completion_tokens"),
        ProviderProfile(
            "openai_reasoning", token_limit_param="max_completion_tokens", send_temperature=False
        ),
        ProviderProfile("vllm", reasoning_field="reasoning_content"),
        ProviderProfile("llamacpp", reasoning_field="reasoning_content"),
        ProviderProfile("ollama", stream_usage=False, reasoning_field="reasoning"),
        ProviderProfile("deepseek", reasoning_field="reasoning_content", reasoning_echo=True),
        ProviderProfile("openrouter", reasoning_field="reasoning"),
        ProviderProfile("gateway_no_stream_usage", stream_usage=False),
    )
}

# OpenAI's reasoning families: o1, o3, o4-mini, gpt-5… (chat models: gpt-4o, gpt-4.1).
_OPENAI_REASONING = re.compile(r"^(?:o\d|gpt-5)", re.IGNORECASE)
OLLAMA_PORT = 11434


def detect(base_url: str, model: str = "") -> ProviderProfile:
    """The profile a base URL (and model name) points to; the generic one when unknown."""
    parts = urlsplit(base_url or "")
    host = (parts.hostname or "").lower()
    if host == "api.openai.com" or host.endswith(".openai.azure.com"):
        return PROFILES["openai_reasoning" if _OPENAI_REASONING.match(model) else "openai"]
    if host == "api.deepseek.com":
        return PROFILES["deepseek"]
    if host.endswith("openrouter.ai"):
        return PROFILES["openrouter"]
    if parts.port == OLLAMA_PORT or "ollama" in host:
        return PROFILES["ollama"]
    return PROFILES["openai_compatible"]


def detect_from_models(payload: Any, base: ProviderProfile) -> ProviderProfile:
    """Refine ``base`` by a ``GET /v1/models`` body: vLLM, llama.cpp and Ollama say who they
    are in ``owned_by``."""
    entries = payload.get("data") if isinstance(payload, dict) else None
    if base.name != "openai_compatible" or not isinstance(entries, list):
        return base
    owners = {e.get("owned_by") for e in entries if isinstance(e, dict)}
    if "vllm" in owners:
        return PROFILES["vllm"]
    if "llamacpp" in owners:
        return PROFILES["llamacpp"]
    if "library" in owners:  # Ollama lists its library models so
        return PROFILES["ollama"]
    return base


# How servers name a refused parameter: OpenAI's ``param`` field and "Unsupported
# parameter: 'max_tokens'…", vLLM/pydantic's "stream_options: Extra inputs are not
# permitted", gateways' "unknown field `temperature`" or "temperature is not supported".
_KNOWN_PARAMS = ("max_completion_tokens", "max_tokens", "temperature", "stream_options", "stream")
_REFUSAL = re.compile(
    r"unsupported (?:parameter|value)|not supported|extra (?:inputs|fields) (?:are )?not "
    r"permitted|unknown (?:field|parameter)|unrecognized|not allowed|does not support"
    r"|must be verified to stream",
    re.IGNORECASE,
)
# A 400/422 that reads like a refused parameter but names none we could find (a gateway that
# words it generally, or wraps the provider's answer: OpenRouter's "Provider returned error").
_UNNAMED_REFUSAL = re.compile(
    _REFUSAL.pattern + r"|provider returned error|invalid request|bad request|unprocessable"
    r"|validation error|extra_forbidden",
    re.IGNORECASE,
)
# What is left out, in this order, when a refusal names no parameter: the parameters
# endpoints refuse most (docs/models.md).
SUSPECTS = ("stream_options", "temperature", "max_tokens")
MAX_GUESSES = len(SUSPECTS)


def unsupported_parameter(message: str, param: str | None, sent: dict[str, Any]) -> str | None:
    """The request parameter a 400 refused, when it names one we sent and may leave out."""
    if param:
        name = param.split(".")[0]
        if name in _KNOWN_PARAMS and name in sent:
            return name
    if not message or not _REFUSAL.search(message):
        return None
    for name in _KNOWN_PARAMS:  # longest first: max_completion_tokens before max_tokens
        if name in sent and re.search(rf"\b{name}\b", message):
            return name
    return None


def reads_like_unnamed_refusal(status: int, message: str) -> bool:
    """A 400/422 that may be a refused parameter, though it names none (see ``SUSPECTS``)."""
    return status in (400, 422) and bool(_UNNAMED_REFUSAL.search(message or "") or status == 422)


def suspects(profile: ProviderProfile, sent: dict[str, Any]) -> list[str]:
    """The parameters of ``sent`` to leave out one at a time, in the documented order."""
    return [name for name in SUSPECTS if name in sent and profile.without(name) is not None][
        :MAX_GUESSES
    ]


# DeepSeek's thinking mode: "The `reasoning_content` in the thinking mode must be passed back
# to the API." (2026) and "Missing `reasoning_content` field in the assistant message at
# message index 2" (2025). Its older reasoner refused reasoning_content in input messages.
_ECHO_MISSING = re.compile(
    r"reasoning_content`? (?:in the thinking mode )?must be passed back"
    r"|missing `?reasoning_content",
    re.IGNORECASE,
)
_ECHO_REFUSED = re.compile(
    r"reasoning_content.{0,80}(?:must not|should not|not (?:be )?(?:sent|allowed|supported|"
    r"permitted))|(?:unknown|unrecognized|extra).{0,40}reasoning_content",
    re.IGNORECASE,
)


def reasoning_echo_refusal(message: str, sent: dict[str, Any]) -> str | None:
    """``REASONING_MISSING`` or ``REASONING_ECHO`` when a 400 refused the request for the
    reasoning a tool-calling message lacked or carried; None otherwise."""
    if not message or "reasoning_content" not in message:
        return None
    carried = any(
        isinstance(m, dict) and "reasoning_content" in m for m in sent.get("messages") or ()
    )
    if _ECHO_MISSING.search(message):
        return REASONING_MISSING
    if carried and _ECHO_REFUSED.search(message):
        return REASONING_ECHO
    return None


def _echo(messages: list[Any], echo: bool) -> list[Any]:
    """The wire messages with ``reasoning_content`` on every tool-calling assistant message
    (``""`` where none was kept: the endpoint checks the field is there) when ``echo``, on
    none otherwise. The caller's dicts are not changed."""
    out = []
    for m in messages:
        if not isinstance(m, dict) or m.get("role") != "assistant":
            out.append(m)
        elif echo and m.get("tool_calls") and "reasoning_content" not in m:
            out.append({**m, "reasoning_content": ""})
        elif not (echo and m.get("tool_calls")) and "reasoning_content" in m:
            out.append({k: v for k, v in m.items() if k != "reasoning_content"})
        else:
            out.append(m)
    return out
