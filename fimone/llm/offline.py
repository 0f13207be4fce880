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
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

from contextmgmt.core.llm import LLMResult, StreamChunk, Usage
from contextmgmt.core.messages import ChatMessage, ToolCall
from contextmgmt.core.tokens import estimate_message_tokens, estimate_messages_tokens

from .offline_text import detect_language, extractive_summary
from .options import check_opts

OFFLINE_MODEL_NAME = "fimone-offline"
COMPACTOR_MARK = "You are fimone's context compactor."

# --- tool intents ---------------------------------------------------------------------------

_WORD_OPS = [
    (re.compile(r"\bto the power of\b", re.I), "**"),
    (re.compile(r"\bmultiplied by\b|\btimes\b", re.I), "*"),
    (re.compile(r"\bdivided by\b|\bover\b", re.I), "/"),
    (re.compile(r"\bplus\b", re.I), "+"),
    (re.compile(r"\bminus\b", re.I), "-"),
    (re.compile(r"乘以|乘"), "*"),
    (re.compile(r"除以"), "/"),
    (re.compile(r"加上|加"), "+"),
    (re.compile(r"减去|减"), "-"),
]
_DATE_LIKE = re.compile(r"\b\d{4}-\d{1,2}-\d{1,2}\b|\b\d{1,2}:\d{2}\b")
_PERCENT_OF = re.compile(r"(\d+(?:\.\d+)?)\s*%\s*of\s*(\d+(?:\.\d+)?)", re.I)
_FUNC = r"(?:sqrt|log|ln|exp|abs|round|sin|cos|tan|floor|ceil)"
_OPERAND = rf"(?:{_FUNC}\s*)?[(\s]*-?\d+(?:\.\d+)?\)*"
_EXPRESSION = re.compile(rf"{_OPERAND}(?:\s*(?:\*\*|[-+*/%^])\s*{_OPERAND})+|{_FUNC}\s*\([^()]*\)")
_CALC_INTENT = re.compile(
    r"\b(?:calculate|compute|what(?:'s| is)|how much|evaluate|solve|sum)\b|=|算|等于|多少|是几",
    re.I,
)
_TIME_INTENT = re.compile(
    r"\bwhat time\b|\bcurrent (?:time|date)\b|\btime is it\b|\btime now\b|\bthe time\b"
    r"|\bwhat(?:'s| is) the date\b|\btoday'?s date\b|\bwhat day\b|\bdate today\b"
    r"|几点|时间|日期|几号|星期几|wie spät|uhrzeit|welches datum|welcher tag",
    re.I,
)
_RECALL_INTENT = re.compile(
    r"\bwhat did i (?:say|tell|mention|write|ask)\b|\bdid i (?:say|mention|tell)\b|\bearlier\b"
    r"|\bpreviously\b|\bremember\b|\brecall\b|\byou said\b|\bi (?:told|mentioned|said)\b"
    r"|\bwe (?:discussed|talked)\b|之前|刚才|先前|以前|上次|我说过|记得|vorhin|erinnerst",
    re.I,
)
_RECALL_TOPIC = re.compile(
    r"\b(?:about|regarding)\s+(.+?)[\s?.!]*$|关于(.+?)(?:的(?:什么|事|内容|话))?[？?。！]*$", re.I
)
_RECALL_NOISE = re.compile(
    r"\b(?:what|did|do|you|i|say|said|tell|told|me|mention(?:ed)?|earlier|previously"
    r"|remember|recall|we|discussed|talked|can|could|please)\b|[?？。.!！,，]|之前|刚才|我说过|记得",
    re.I,
)


def _expression(query: str) -> str | None:
    text = _DATE_LIKE.sub(" ", query)
    text = _PERCENT_OF.sub(r"\1/100*\2", text)
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    text = text.replace("×", "*").replace("÷", "/").replace("（", "(").replace("）", ")")
    text = re.sub(r"(?<=\d)\s*[xX]\s*(?=\d)", "*", text)
    for pattern, op in _WORD_OPS:
        text = pattern.sub(f" {op} ", text)
    found = max(_EXPRESSION.findall(text), key=len, default=None)
    if not found:
        return None
    expr = re.sub(r"\s+", " ", found.replace("^", "**")).strip()
    while expr.count("(") > expr.count(")") and expr.startswith("("):
        expr = expr[1:].strip()
    while expr.count(")") > expr.count("(") and expr.endswith(")"):
        expr = expr[:-1].strip()
    # "-" or "/" alone between two numbers is often a range or a date: ask for intent.
    if not re.search(r"\*|\+|%|[a-z]\(", expr) and not _CALC_INTENT.search(query):
        return None
    return expr


def _recall_query(query: str) -> str:
    m = _RECALL_TOPIC.search(query)
    if m:
        topic = " ".join(_RECALL_NOISE.sub(" ", m.group(1) or m.group(2)).split())
        if topic:
            return topic
    rest = " ".join(_RECALL_NOISE.sub(" ", query).split())
    return rest or query.strip()


def decide_tool_calls(query: str, offered: set[str], call_prefix: str) -> list[ToolCall]:
    """The tool calls a query asks for, among the tools offered; several run in parallel."""
    calls: list[tuple[str, dict[str, Any]]] = []
    expr = _expression(query) if "calculator" in offered else None
    if expr:
        calls.append(("calculator", {"expression": expr}))
    if "current_time" in offered and _TIME_INTENT.search(query):
        calls.append(("current_time", {}))
    if "recall" in offered and _RECALL_INTENT.search(query):
        calls.append(("recall", {"query": _recall_query(query)}))
    return [
        ToolCall(
            id=f"{call_prefix}_{i}_{name}",
            name=name,
            arguments=json.dumps(args, ensure_ascii=False),
        )
        for i, (name, args) in enumerate(calls)
    ]


# --- planner and analyser -------------------------------------------------------------------

_REQUEST_MARK = re.compile(
    r"(?:current (?:request|query|question)|user request|request|query|goal|task|当前请求|当前问题)"
    r"\s*[:：]\s*",
    re.I,
)
_SPLIT = re.compile(
    r"\s*(?:;|；|\band then\b|\bthen\b|\balso\b|然后|并且|同时|另外"
    r"|\band\b(?=\s+(?:what|how|tell|give|list|find|compute|calculate|write|explain|summari[sz]e"
    r"|check|compare)\b))\s*|(?<=[?？])\s*",
    re.I,
)
_FAILED = re.compile(
    r"^\(step failed|^(?:error|failed|failure)\b\s*[:：]|\[error\]|^\(no result\)|^\(empty\)",
    re.I,
)
# The analyser input: "### Step s1: task" headers, each followed by that step's result.
_STEP_HEADER = re.compile(r"^#+\s*Step\s+(\S+?)\s*:.*$", re.M)


# What the DAG engine appends after the request on a re-plan or a re-ask.
_AFTER_REQUEST = re.compile(
    r"\n\s*(?:A previous plan \(attempt|Your previous reply was not a valid plan"
    r"|Follow-ups the user sent meanwhile:)"
)


def current_request(text: str) -> str:
    """The request itself, out of an enriched query ("Previous conversation: …" + request)."""
    cut_at = _AFTER_REQUEST.search(text)
    if cut_at and text[: cut_at.start()].strip():
        text = text[: cut_at.start()]
    marks = list(_REQUEST_MARK.finditer(text))
    if marks and "previous conversation" in text.lower():
        tail = text[marks[-1].end() :].strip()
        if tail:
            return tail
    if "previous conversation" in text.lower():
        paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
        if paragraphs:
            return paragraphs[-1]
    return text.strip()


def make_plan(request_text: str) -> dict[str, Any]:
    query = " ".join(current_request(request_text).split())
    short = query if len(query) <= 300 else query[:299] + "…"
    zh = detect_language(query) == "zh"
    parts = [p.strip(" ,，.。") for p in _SPLIT.split(query) if p and len(p.strip(" ,，.。")) > 1]
    if len(parts) > 2:
        parts = [parts[0], " ".join(parts[1:])]  # at most 3 steps: the rest stays together
    if len(parts) >= 2:
        steps = [
            {"id": f"s{i + 1}", "task": part, "depends_on": []} for i, part in enumerate(parts[:2])
        ]
        # The request is not repeated here: s1 and s2 did its work, s3 only combines.
        final = (
            "综合 s1 和 s2 的结果，给出一个完整的回答。"
            if zh
            else "Combine the results of s1 and s2 into one answer for the user."
        )
        steps.append({"id": "s3", "task": final, "depends_on": ["s1", "s2"]})
    else:
        gather = (
            f"收集回答该问题所需的事实、数据和工具结果：{short}"
            if zh
            else f"Collect the facts, figures and tool results needed for: {short}"
        )
        answer = (
            "根据 s1 收集到的信息写出最终回答。"
            if zh
            else "Write the final answer from what s1 collected."
        )
        steps = [
            {"id": "s1", "task": gather, "depends_on": []},
            {"id": "s2", "task": answer, "depends_on": ["s1"]},
        ]
    return {"steps": steps}


def step_results(text: str) -> dict[str, str]:
    """Step id -> result text, from the analyser's input (or one block when unstructured)."""
    headers = list(_STEP_HEADER.finditer(text))
    if not headers:
        body = text.split("Step results:", 1)[-1].strip()
        return {"all": body} if body else {}
    return {
        h.group(1): text[h.end() : headers[i + 1].start() if i + 1 < len(headers) else None].strip()
        for i, h in enumerate(headers)
    }


def make_verdict(results_text: str) -> dict[str, Any]:
    """Achieved when every step result is non-empty and not an error."""
    zh = detect_language(results_text) == "zh"
    results = step_results(results_text)
    bad = sorted(k for k, v in results.items() if not v or _FAILED.search(v))
    achieved = bool(results) and not bad
    if zh:
        reason = "每个步骤都返回了非空结果" if achieved else "有步骤失败或没有结果"
        if bad:
            reason = f"步骤 {', '.join(bad)} 失败或没有结果"
    elif not results:
        reason = "no step results were given"
    elif achieved:
        reason = "every step returned a non-empty result"
    else:
        reason = f"step(s) {', '.join(bad)} failed or returned nothing"
    return {"achieved": achieved, "confidence": 0.9 if achieved else 0.35, "reason": reason}


# --- plain answers --------------------------------------------------------------------------

_NOTE = {
    "en": "(fimone's offline model answered this: no language model is configured, so I can "
    "only run tools and repeat what I was given.)",
    "de": "(Das hat fimones Offline-Modell beantwortet: Es ist kein Sprachmodell konfiguriert, "
    "ich kann nur Werkzeuge aufrufen und wiedergeben, was ich bekommen habe.)",
    "zh": "（这是 fimone 的离线模型给出的回答：尚未配置语言模型，"
    "我只能调用工具并复述已有的信息。）",
}


def _tool_line(name: str, args: dict[str, Any], result: str, lang: str) -> str:
    result = result.strip() or "(empty)"
    if name == "calculator" and args.get("expression"):
        return f"{args['expression']} = {result}"
    if name == "current_time":
        return f"现在的时间：{result}" if lang == "zh" else f"The current time is {result}."
    if name == "recall":
        return (
            f"之前的对话中提到：{result}"
            if lang == "zh"
            else f"Earlier in our conversation: {result}"
        )
    return f"{name}: {result}"


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
            lines.append(block if len(block) <= 600 else extractive_summary(block, max_tokens=150))
    if not lines:
        if len(query) > 400:
            lines.append(
                "我得到的信息中的要点：" if lang == "zh" else "The key points of what I was given:"
            )
            lines.append(extractive_summary(query, max_tokens=200))
        elif query:
            short = " ".join(query.split())
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
