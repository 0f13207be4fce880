"""fimone's built-in offline model: deterministic, honest, and enough to drive every path.

With no LLM configured the product still works end to end (issue 4, DESIGN §6). The model
decides by the messages it is given:

- a compaction call (system prompt starts with "You are fimone's context compactor.") gets an
  extractive summary of the transcript, in the transcript's language;
- a planner call (a system message asks for a "JSON plan") gets 2–3 steps, the last
  depending on the others;
- an analyser call (a system message asks for a "JSON verdict") gets a verdict: achieved
  when no step result is empty or an error;
- with tools offered and the latest user turn not yet answered by a tool result, it calls
  ``calculator`` for arithmetic, ``current_time`` for the time or date, ``recall`` for
  something said earlier (several at once when the query asks for several);
- otherwise it answers plainly from the tool results and what it was given, and says that
  it is fimone's offline model.

Usage is the fimone estimator's count (there is no provider to report one).

Answers are rendered as Markdown by the UI: what they quote (the user's words, expressions,
tool results, the headers around DAG step results) is escaped or set as inline code
(``offline_markdown``), so the user sees what was meant.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

from contextmgmt.core.llm import LLMResult, StreamChunk, Usage
from contextmgmt.core.messages import ChatMessage
from contextmgmt.core.tokens import estimate_message_tokens, estimate_messages_tokens

from .offline_markdown import escape_markdown, inline_code
from .offline_plan import make_plan, make_verdict
from .offline_text import detect_language, extractive_summary
from .offline_tools import decide_tool_calls
from .options import check_opts

OFFLINE_MODEL_NAME = "fimone-offline"
COMPACTOR_MARK = "You are fimone's context compactor."

# --- plain answers --------------------------------------------------------------------------

_NOTE = {
    "en": "(fimone's offline model answered this: no language model is configured, so I can "
    "only run tools and repeat what I was given.)",
    "de": "(Das hat fimones Offline-Modell beantwortet: Es ist kein Sprachmodell konfiguriert, "
    "ich kann nur Werkzeuge aufrufen und wiedergeben, was ich bekommen habe.)",
    "zh": "（这是 fimone 的离线模型给出的回答：尚未配置语言模型，"
    "我只能调用工具并复述已有的信息。）",
}


# Lines the DAG engine writes around step results (fimone.agent.dag / dag_context): they
# quote step tasks, i.e. the user's words, and reach an answer through "given" material.
_SCAFFOLD_LINE = re.compile(
    r"^(?:Results? of (?:the )?steps?\b.*|Your task:.*|Follow-ups the user sent meanwhile:.*)$"
)


def _tool_line(name: str, args: dict[str, Any], result: str, lang: str) -> str:
    result = escape_markdown(result.strip()) or "(empty)"
    if name == "calculator" and args.get("expression"):
        return f"{inline_code(str(args['expression']))} = {result}"
    if name == "current_time":
        return f"现在的时间：{result}" if lang == "zh" else f"The current time is {result}."
    if name == "recall":
        return (
            f"之前的对话中提到：{result}"
            if lang == "zh"
            else f"Earlier in our conversation: {result}"
        )
    return f"{escape_markdown(name)}: {result}"


def _safe_given(block: str) -> str:
    """Material given in the turn, for the answer: the DAG's header lines (which quote the
    user's words) escaped; results as they are (the offline model's own answers are already
    safe, a real model's are meant as Markdown)."""
    return "\n".join(
        escape_markdown(line) if _SCAFFOLD_LINE.match(line) else line for line in block.split("\n")
    )


def _safe_summary(summary: str) -> str:
    """An extractive summary ("- Label: sentence" lines) with each sentence escaped."""
    return "\n".join(
        line[:2] + escape_markdown(line[2:]) if line.startswith("- ") else escape_markdown(line)
        for line in summary.split("\n")
    )


def compose_answer(messages: list[ChatMessage]) -> str:
    last_user = _last_user_index(messages)
    query = messages[last_user].text() if last_user is not None else ""
    lang = detect_language(query or " ".join(m.text() for m in messages))
    lines: list[str] = []
    if last_user is not None:
        calls = {
            tc.id: tc
            for m in messages[last_user:]
            if m.role == "assistant"
            for tc in m.tool_calls or []
        }
        for m in messages[last_user + 1 :]:
            if m.role != "tool":
                continue
            call = calls.get(m.tool_call_id or "")
            name = call.name if call else (m.name or "tool")
            try:
                args = json.loads(call.arguments) if call else {}
            except ValueError:
                args = {}
            lines.append(_tool_line(name, args if isinstance(args, dict) else {}, m.text(), lang))
        images = _image_count(messages[last_user])
        if images:
            lines.append(
                f"我收到了 {images} 张图片，但离线模型无法查看图片。"
                if lang == "zh"
                else f"I received {images} image(s), but the offline model cannot look at images."
            )
    if not lines and last_user is not None:
        # Material given in the same turn (DAG step results, a step's dependency results):
        # the user messages right before the request.
        given = []
        i = last_user - 1
        while i >= 0 and messages[i].role == "user":
            given.insert(0, _without_note(messages[i].text()))
            i -= 1
        for block in filter(None, given):
            if len(block) <= 600:
                lines.append(_safe_given(block))
            else:
                lines.append(_safe_summary(extractive_summary(block, max_tokens=150)))
    if not lines:
        if len(query) > 400:
            lines.append(
                "我得到的信息中的要点：" if lang == "zh" else "The key points of what I was given:"
            )
            lines.append(_safe_summary(extractive_summary(query, max_tokens=200)))
        elif query:
            short = escape_markdown(" ".join(query.split()))
            lines.append(f"你问的是：“{short}”。" if lang == "zh" else f"You asked: “{short}”.")
    lines.append(_NOTE[lang])
    return "\n\n".join(lines)


def _without_note(text: str) -> str:
    """``text`` without this model's own honesty notes (they would pile up across steps)."""
    for note in _NOTE.values():
        text = text.replace(note, "")
    return text.strip()


def _image_count(message: ChatMessage) -> int:
    if not isinstance(message.content, list):
        return 0
    return sum(1 for p in message.content if isinstance(p, dict) and p.get("type") == "image_url")


def _last_user_index(messages: list[ChatMessage]) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user":
            return i
    return None


def _stream_pieces(text: str) -> list[str]:
    """Word-sized pieces (whitespace kept); CJK runs in 3-character pieces."""
    pieces: list[str] = []
    for word in re.findall(r"\S+\s*|\s+", text):
        if len(word) > 3 and not word.isascii() and not re.search(r"[A-Za-z]{4}", word):
            pieces.extend(word[i : i + 3] for i in range(0, len(word), 3))
        else:
            pieces.append(word)
    return pieces


# --- the model ------------------------------------------------------------------------------


class OfflineLLM:
    """``contextmgmt.core.llm.LLM`` without a network: see the module docstring."""

    offline = True
    supports_vision = False

    def __init__(self, *, model_name: str = OFFLINE_MODEL_NAME) -> None:
        self.model_name = model_name

    def __repr__(self) -> str:
        return f"OfflineLLM(model={self.model_name!r})"

    def reply(
        self, messages: list[ChatMessage], tools: list[dict[str, Any]] | None, opts: dict[str, Any]
    ) -> ChatMessage:
        """The assistant message this model gives to ``messages`` (pure, deterministic)."""
        check_opts(opts)
        systems = [m.text() for m in messages if m.role == "system"]
        user_text = "\n\n".join(m.text() for m in messages if m.role == "user")
        if systems and systems[0].lstrip().startswith(COMPACTOR_MARK):
            return _text(extractive_summary(user_text, opts.get("max_tokens")))
        if any("JSON plan" in s for s in systems):
            return _text(json.dumps(make_plan(user_text), ensure_ascii=False))
        if any("JSON verdict" in s for s in systems):
            return _text(json.dumps(make_verdict(user_text), ensure_ascii=False))
        last_user = _last_user_index(messages)
        if tools and last_user is not None:
            answered = any(m.role == "tool" for m in messages[last_user + 1 :])
            if not answered:
                offered = {
                    t.get("function", {}).get("name") for t in tools if t.get("type") == "function"
                }
                calls = decide_tool_calls(
                    messages[last_user].text(), offered, call_prefix=f"call_{len(messages)}"
                )
                if calls:
                    return ChatMessage(role="assistant", content=None, tool_calls=calls)
        return _text(compose_answer(messages))

    def _usage(self, messages: list[ChatMessage], reply: ChatMessage) -> Usage:
        return Usage(estimate_messages_tokens(messages), estimate_message_tokens(reply))

    async def chat(
        self,
        messages: list[ChatMessage],
        *,
        tools: list[dict[str, Any]] | None = None,
        **opts: Any,
    ) -> LLMResult:
        reply = self.reply(messages, tools, opts)
        await asyncio.sleep(0)  # a real await point, as with a network model
        return LLMResult(message=reply, usage=self._usage(messages, reply))

    async def stream_chat(
        self,
        messages: list[ChatMessage],
        *,
        tools: list[dict[str, Any]] | None = None,
        **opts: Any,
    ) -> AsyncIterator[StreamChunk]:
        reply = self.reply(messages, tools, opts)
        for piece in _stream_pieces(reply.text()):
            await asyncio.sleep(0)  # let cancellation and injections in between pieces
            yield StreamChunk(text=piece)
        yield StreamChunk(
            tool_calls=reply.tool_calls,
            usage=self._usage(messages, reply),
            finish_reason="tool_calls" if reply.tool_calls else "stop",
        )


def _text(content: str) -> ChatMessage:
    return ChatMessage(role="assistant", content=content)
