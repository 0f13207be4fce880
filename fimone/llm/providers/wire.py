"""The wire shapes of one chat completion: messages as sent, replies and usage as read.

An earlier tool call whose arguments were not JSON goes back wrapped in a JSON object
(``INVALID_ARGUMENTS_KEY``): several servers parse the arguments of earlier calls (vLLM's
chat templates, Anthropic-compatible proxies) and would refuse the whole request.
"""

from __future__ import annotations

import json
from typing import Any

from contextmgmt.core.llm import LLMBadResponse, Usage
from contextmgmt.core.messages import STEP_REASONING, ChatMessage, ToolCall
from contextmgmt.core.tokens import estimate_message_tokens, estimate_messages_tokens

# An earlier tool call whose arguments were not JSON goes back as {KEY: "<raw text>"}.
INVALID_ARGUMENTS_KEY = "unparsed_arguments"


def wire_message(message: ChatMessage) -> dict[str, Any]:
    """``message.to_openai()``, with the arguments of earlier tool calls made valid JSON and
    a tool-calling step's reasoning as ``reasoning_content`` (the profile's ``adapt`` keeps
    it only for a provider that wants it back)."""
    wire = message.to_openai()
    reasoning = message.metadata.get(STEP_REASONING)
    if message.tool_calls and isinstance(reasoning, str):
        wire["reasoning_content"] = reasoning
    for call in wire.get("tool_calls") or []:
        function = call["function"]
        if not _is_json(function["arguments"]):
            function["arguments"] = json.dumps(
                {INVALID_ARGUMENTS_KEY: function["arguments"]}, ensure_ascii=False
            )
    return wire


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def parse_tool_calls(raw: list[tuple[str, str, str]]) -> list[ToolCall] | None:
    """Tool calls as the model sent them; arguments kept verbatim even when not JSON."""
    calls: list[ToolCall] = []
    for call_id, name, arguments in raw:
        arguments = arguments or "{}"  # some servers send "" for a call without arguments
        if not name:
            raise LLMBadResponse("a tool call without a function name")
        calls.append(ToolCall(id=call_id or f"call_{len(calls)}", name=name, arguments=arguments))
    return calls or None


def usage_of_reply(wire: Any) -> Usage | None:
    if wire is None or getattr(wire, "prompt_tokens", None) is None:
        return None
    details = getattr(wire, "completion_tokens_details", None)
    reasoning = getattr(details, "reasoning_tokens", None) or 0
    cached = getattr(getattr(wire, "prompt_tokens_details", None), "cached_tokens", None) or 0
    return Usage(
        int(wire.prompt_tokens or 0),
        int(wire.completion_tokens or 0),
        int(reasoning),
        cached_input_tokens=int(cached),
    )


def estimate(messages: list[ChatMessage], reply: ChatMessage) -> Usage:
    """fimone's count, for a provider that reported none (marked estimated)."""
    return Usage(estimate_messages_tokens(messages), estimate_message_tokens(reply), estimated=True)
