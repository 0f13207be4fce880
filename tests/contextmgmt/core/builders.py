"""Conversation builders and well-formedness checks shared by the core tests."""

from __future__ import annotations

from contextmgmt.core.messages import ChatMessage, ToolCall

IMAGE_PART = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}


def system(text: str = "You are a helpful assistant.") -> ChatMessage:
    return ChatMessage(role="system", content=text)


def user(text: str, **flags) -> ChatMessage:
    return ChatMessage(role="user", content=text, **flags)


def assistant(text: str) -> ChatMessage:
    return ChatMessage(role="assistant", content=text)


def tool_round(call_id: str, name: str, arguments: str, result: str) -> list[ChatMessage]:
    """An assistant tool call and the tool result answering it."""
    return [
        ChatMessage(
            role="assistant",
            content=None,
            tool_calls=[ToolCall(id=call_id, name=name, arguments=arguments)],
        ),
        ChatMessage(role="tool", content=result, tool_call_id=call_id, name=name),
    ]


def chat_history(turns: int, filler: int = 200) -> list[ChatMessage]:
    """system + ``turns`` user/assistant pairs, each message ``filler`` ASCII chars long."""
    out = [system()]
    for i in range(turns):
        out.append(user(f"question {i} " + "q" * filler))
        out.append(assistant(f"answer {i} " + "a" * filler))
    return out


def problems(messages: list[ChatMessage]) -> list[str]:
    """Why ``messages`` would be rejected by an OpenAI-style API or break fimone's rules."""
    found = []
    open_calls: set[str] = set()
    answered: set[str] = set()
    for i, msg in enumerate(messages):
        if msg.role == "tool":
            if msg.tool_call_id not in open_calls:
                found.append(f"orphan tool message at {i}")
            open_calls.discard(msg.tool_call_id)
            answered.add(msg.tool_call_id)
            continue
        if open_calls:
            found.append(f"unanswered tool call(s) {sorted(open_calls)} before {i}")
            open_calls.clear()
        if msg.role == "assistant" and msg.tool_calls:
            open_calls = {tc.id for tc in msg.tool_calls}
    if open_calls:
        found.append(f"unanswered tool call(s) {sorted(open_calls)} at the end")
    first = next((m for m in messages if m.role != "system"), None)
    if first is not None and first.role in ("assistant", "tool"):
        found.append(f"first non-system message is {first.role}")
    return found
