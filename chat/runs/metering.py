"""Usage metering: every model call of a run is counted where it is made, so a run that
fails or is cancelled half way still reports (and bills) what it used."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from contextmgmt.core.llm import LLM, LLMResult, StreamChunk, Usage
from contextmgmt.core.tokens import (
    N_CLASSES,
    estimate_messages_tokens,
    estimate_tokens,
    usage_sample,
)
from fimone.agent.tools.finder import definition_tokens


class MeteredLLM:
    """An LLM that adds the usage of every call to ``usage`` (and forwards everything else).

    Counting at the call, not from the engine's outcome, keeps the usage of a run that
    failed or was cancelled half way (its totals, and the usage of a partial answer).
    """

    def __init__(
        self,
        inner: LLM,
        usage: Usage | None = None,
        *,
        token_weights: tuple[float, ...] | None = None,
        input_window: int | None = None,
    ) -> None:
        self._inner = inner
        self.model_name = inner.model_name
        # The model's calibrated class weights: summarising with this LLM sizes its input
        # in the model's own tokens.
        self.token_weights = token_weights
        # The model's usable input tokens: one summarising call never sends more, even when
        # the budget it summarises for (the main model's) is larger.
        self.input_window = input_window
        self.usage = usage if usage is not None else Usage()
        # Calls made so far: a compaction saves on every later call that carries it.
        self.call_count = 0
        # Input tokens of calls whose provider reported its usage, as estimated and as
        # reported, and the class counts and fixed tokens of what those calls sent: one
        # calibration sample per run and model (an estimate compared with itself would
        # teach nothing).
        self.estimated_input = 0
        self.reported_input = 0
        self.input_counts = [0] * N_CLASSES
        self.fixed_input = 0
        # Estimated tokens of the tool definitions sent with every call (part of the input):
        # the usage card shows what the tool tier cost the answer.
        self.tool_definition_tokens = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def chat(self, messages, *, tools=None, **opts) -> LLMResult:
        self.call_count += 1
        tools_json = self._definitions(tools)
        result = await self._inner.chat(messages, tools=tools, **opts)
        self._count(result.usage, messages, tools_json)
        return result

    async def stream_chat(self, messages, *, tools=None, **opts) -> AsyncIterator[StreamChunk]:
        self.call_count += 1
        tools_json = self._definitions(tools)
        async for chunk in self._inner.stream_chat(messages, tools=tools, **opts):
            if chunk.usage is not None:
                self._count(chunk.usage, messages, tools_json)
            yield chunk

    def _definitions(self, tools) -> str:
        """The call's tool definitions as JSON text (for the calibration sample), counted
        into ``tool_definition_tokens`` as the tool tier counts them."""
        if not tools:
            return ""
        self.tool_definition_tokens += definition_tokens(tools)
        return json.dumps(tools)

    def _count(self, usage: Usage, messages, tools_json: str) -> None:
        self.usage.add(usage)
        if usage.input_tokens > 0 and not usage.estimated:
            self.estimated_input += estimate_messages_tokens(messages) + (
                estimate_tokens(tools_json) if tools_json else 0
            )
            self.reported_input += usage.input_tokens
            counts, fixed = usage_sample(messages, tools_json)
            self.input_counts = [a + b for a, b in zip(self.input_counts, counts, strict=True)]
            self.fixed_input += fixed


def usage_totals(answer: Usage, compaction: Usage) -> dict[str, Any]:
    """The ``done`` usage: totals include compaction calls, which are also split out;
    ``estimated: true`` when some call's figure is fimone's count, not the provider's;
    ``reasoning_tokens`` (part of the output) when the model reported any."""
    totals: dict[str, Any] = {
        "input_tokens": answer.input_tokens + compaction.input_tokens,
        "output_tokens": answer.output_tokens + compaction.output_tokens,
        "compaction_input_tokens": compaction.input_tokens,
        "compaction_output_tokens": compaction.output_tokens,
    }
    reasoning = answer.reasoning_tokens + compaction.reasoning_tokens
    if reasoning:  # part of the output tokens, shown apart
        totals["reasoning_tokens"] = reasoning
    cached = answer.cached_input_tokens + compaction.cached_input_tokens
    if cached:  # part of the input tokens, read from the provider's prompt cache
        totals["cached_input_tokens"] = cached
    if answer.estimated or compaction.estimated:  # some call's usage was fimone's count
        totals["estimated"] = True
    return totals
