"""SDK errors as the exceptions of ``contextmgmt.core.llm``: callers catch only those."""

from __future__ import annotations

import re

import openai

from contextmgmt.core.llm import (
    ContextOverflow,
    LLMAuthError,
    LLMBadResponse,
    LLMError,
    LLMRateLimited,
    LLMTimeout,
    LLMUnavailable,
)

# What providers say when a request is longer than the model's window (OpenAI, vLLM,
# llama.cpp, Ollama, Anthropic-compatible proxies word it differently).
_OVERFLOW = re.compile(
    r"maximum context length|context[_ ]length[_ ]exceeded|too many tokens|context window"
    r"|prompt is too long|exceeds? the (?:[\w']+ ){0,3}context|exceed_context_size",
    re.IGNORECASE,
)


def says_overflow(err: openai.APIError) -> bool:
    return any(_OVERFLOW.search(s) for s in (err.message, err.code or "", str(err.body or "")) if s)


def map_error(err: BaseException) -> LLMError:
    """The fimone exception for an SDK (or parsing) error; callers catch only these."""
    if isinstance(err, LLMError):
        return err
    if isinstance(err, openai.APITimeoutError):
        return LLMTimeout("the model did not answer in time")
    if isinstance(err, openai.APIConnectionError):
        return LLMUnavailable(f"cannot reach the model endpoint: {err}")
    if isinstance(err, openai.RateLimitError):
        return LLMRateLimited(f"the model endpoint is rate limiting us: {err.message}")
    if isinstance(err, openai.AuthenticationError | openai.PermissionDeniedError):
        return LLMAuthError(f"the model endpoint refused our credentials: {err.message}")
    if isinstance(err, openai.APIStatusError):
        if err.status_code in (400, 413) and says_overflow(err):
            return ContextOverflow(err.message)
        if err.status_code >= 500:
            return LLMUnavailable(f"the model endpoint failed ({err.status_code}): {err.message}")
        return LLMError(
            f"the model endpoint refused the request ({err.status_code}): {err.message}"
        )
    if isinstance(err, openai.APIResponseValidationError):
        return LLMBadResponse(f"the model endpoint sent an unexpected response: {err.message}")
    if isinstance(err, openai.APIError):  # an error event inside a stream
        if says_overflow(err):
            return ContextOverflow(err.message)
        return LLMUnavailable(f"the model's stream reported an error: {err.message}")
    if isinstance(err, ValueError):
        return LLMBadResponse(f"the model endpoint sent malformed JSON: {err}")
    return LLMError(str(err))
