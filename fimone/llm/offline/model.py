"""fimone's built-in offline model: deterministic, honest, and enough to drive every path.

With no LLM configured the product still works end to end (docs/architecture.md). The model
decides by the messages it is given:

- a compaction call (system prompt starts with "You are fimone's context compactor.") gets an
  extractive summary of the transcript, in the transcript's language;
- a planner call (a system message asks for a "JSON plan") gets 2–3 steps, the last
  depending on the others, a part that builds on the previous one depending on its step;
- an analyser call (a system message asks for a "JSON verdict") gets a verdict: achieved
  when no step result is empty or an error and every figure asked for is stated;
- with tools offered and the latest user turn not yet answered by a tool result, it calls
  ``calculator`` for arithmetic, ``current_time`` for the time or date, ``recall`` for
  something said earlier, ``fetch_url`` for a URL it is asked to read ("fetch
  https://…", "lies …", "获取 …") and then quotes the page (several at once when the
  query asks for several), and else ``read_document`` for a question asked with a
  document in view; a step's
  "that result" is the value its dependency results end with;
- otherwise it answers plainly from the tool results and what it was given, and says that
  it is fimone's offline model, in the user's language (``offline_phrases``): the
  request's own, else the interface language it was given (``speaking``).

Usage is the fimone estimator's count, marked ``estimated`` (there is no provider to report
one). ``stream_chat`` streams like a provider: the answer in word-sized pieces, handed over
as a network stream's reads hand them over (up to ``PIECES_PER_READ`` per read, the event
loop running between reads), and a tool decision as whole calls on the final chunk.

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
from contextmgmt.core.messages import ChatMessage, ToolCall
from contextmgmt.core.tokens import estimate_message_tokens, estimate_messages_tokens
from fimone.llm.offline.documents import answer_lines, document_calls, strip_notes
from fimone.llm.offline.instructions import followed, with_sign_off
from fimone.llm.offline.markdown import escape_markdown, inline_code
from fimone.llm.offline.pages import page_lines
from fimone.llm.offline.phrases import PHRASES, all_notes, language_of, phrase
from fimone.llm.offline.plan import current_request, make_plan, make_verdict
from fimone.llm.offline.text import LABELS, detect_language, extractive_summary
from fimone.llm.offline.tools import FINDER, decide_tool_calls, resolve_references, without_urls
from fimone.llm.options import check_opts

OFFLINE_MODEL_NAME = "fimone-offline"
COMPACTOR_MARK = "You are fimone's context compactor."

# --- plain answers --------------------------------------------------------------------------

# Lines the DAG engine writes around step results (fimone.agent.dag / dag_context): they
# frame the results for a model and quote step tasks; an answer made of the results keeps
# the results and drops the frames (nested steps would repeat them otherwise).
_SCAFFOLD_LINE = re.compile(
    r"^(?:Results? of (?:the )?steps?\b.*|Your task:.*|Follow-ups the user sent meanwhile:.*)$"
)
_TASK_PREFIX = re.compile(r"^\s*Your task:\s*")
# What a model without vision gets instead of a picture (chat.runs.preparation).
_IMAGE_LABEL = re.compile(r"\[image: [^\]\n]*\]")
# "Please remember it", "merk dir das", "请记住": something to keep, not something to look up.
_REMEMBER_REQUEST = re.compile(
    r"^\s*(?:please\s+)?(?:remember|keep in mind|note)\b(?!\s+(?:what|when|where|which|who|how))"
    r"|\bmerk(?:e)? dir\b|请?记住|记下",
    re.I,
)
# A recall passage "[1] the user's message (3 March 2026 14:05 UTC, 14th in this chat):
# text" or "[2] your answer (…) [said 2 times]: text" (chat.recall.lookup's names, numbered by
# fimone.agent.tools' recall); the older "[1] user (2026-01-01 10:00): text" too.
_PASSAGE = re.compile(
    r"^\[\d+\]\s+(?:(user|assistant|the user's message|your answer)\s+\(([^)]*)\)"
    r"(?:\s+\[said \d+ times\])?:\s?)?(.*)$",
    re.S,
)
_SPEAKER = {"the user's message": "user", "your answer": "assistant"}
# "3 March 2026 14:05 UTC, 14th in this chat", said in the asker's language.
_WHERE = re.compile(
    r"^(\d{1,2}) ([A-Z][a-z]+) (\d{4}) (\d\d:\d\d) UTC(?:, (\d+)(?:st|nd|rd|th) in this chat)?$"
)
_MONTHS = (
    "January February March April May June July August September October November December"
).split()
_MONTHS_DE = (
    "Januar Februar März April Mai Juni Juli August September Oktober November Dezember"
).split()


def _where(text: str, lang: str) -> str:
    m = _WHERE.match(text.strip())
    if not m or m.group(2) not in _MONTHS or lang not in ("zh", "de"):
        return text
    day, month, year, time, place = m.groups()
    number = _MONTHS.index(month) + 1
    if lang == "zh":
        when = f"{year}年{number}月{day}日 {time} UTC"
        return f"{when}，本对话第{place}条" if place else when
    when = f"{day}. {_MONTHS_DE[number - 1]} {year} {time} UTC"
    return f"{when}, {place}. in diesem Chat" if place else when


_OWN_WORDS = tuple(
    text.split("{", 1)[0].strip()
    for key in ("asked", "recall", "recall_none", "remember", "images", "images_one", "key_points")
    for text in PHRASES[key].values()
) + tuple(note[:24] for note in all_notes())


def _is_own_non_answer(role: str, text: str) -> bool:
    """An earlier answer of this model that only echoed or quoted: no news for a recall."""
    if role != "assistant":
        return False
    return text.lstrip().startswith(_OWN_WORDS) or any(n[:24] in text for n in all_notes())


def _recall_lines(result: str, lang: str) -> list[str]:
    blocks = re.split(r"\n\n(?=\[\d+\]\s)", result.strip())
    passages = []
    for block in blocks:
        m = _PASSAGE.match(block.strip())
        role = _SPEAKER.get(m.group(1), m.group(1)) if m and m.group(1) else ""
        if not m or _is_own_non_answer(role, m.group(3)):
            continue
        text = escape_markdown(m.group(3).strip())
        if role:
            label = LABELS.get(lang, LABELS["en"]).get(role, role)
            text = f"{label} ({_where(m.group(2), lang)}): {text}"
        passages.append(f"- {text}")
    if not passages:
        return [phrase("recall_none", lang)]
    return [phrase("recall", lang), "\n".join(passages)]


def _tool_lines(
    name: str, args: dict[str, Any], result: str, lang: str, query: str = ""
) -> list[str]:
    if name == "fetch_url":
        return page_lines(result, query, lang)
    if name == "read_document":
        return answer_lines(args, result, lang, query)
    if name == "recall" and _PASSAGE.match(result.split("\n\n", 1)[-1].strip()):
        return _recall_lines(result.split("\n\n", 1)[-1], lang)
    if name == "recall" and not result.lstrip().startswith("Error"):
        return [phrase("recall_none", lang)]
    shown = escape_markdown(result.strip()) or phrase("empty", lang)
    if name == "calculator" and args.get("expression"):
        return [f"{inline_code(str(args['expression']))} = {shown}"]
    if name == "current_time":
        return [phrase("time", lang, result=shown)]
    return [f"{escape_markdown(name)}: {shown}"]


_FOUND_LINE = re.compile(r"^- ([A-Za-z0-9_-]{1,64}):", re.M)


def _found_tools(after: list[ChatMessage]) -> set[str]:
    """The tools ``find_tools`` results after the request list (callable by name)."""
    found: set[str] = set()
    calls = {
        tc.id
        for m in after
        if m.role == "assistant"
        for tc in m.tool_calls or []
        if tc.name == FINDER
    }
    for m in after:
        if m.role == "tool" and m.tool_call_id in calls:
            found.update(_FOUND_LINE.findall(m.text()))
    return found


def _given_lines(block: str) -> list[str]:
    """What a block of given material (DAG step results) contributes to an answer: its
    lines without the engine's frames."""
    return [line for line in block.split("\n") if line.strip() and not _SCAFFOLD_LINE.match(line)]


def _safe_summary(summary: str) -> str:
    """An extractive summary ("- Label: sentence" lines) with each sentence escaped."""
    return "\n".join(
        line[:2] + escape_markdown(line[2:]) if line.startswith("- ") else escape_markdown(line)
        for line in summary.split("\n")
    )


def given_material(messages: list[ChatMessage], last_user: int) -> list[str]:
    """The user messages right before the request (DAG step results, a step's dependency
    results), without this model's own notes."""
    given: list[str] = []
    i = last_user - 1
    while i >= 0 and messages[i].role == "user":
        given.insert(0, _without_note(messages[i].text()))
        i -= 1
    return [g for g in given if g]


def request_text(message: ChatMessage) -> str:
    """The user's words in ``message``: no image labels, no documents, no "Your task:"
    frame."""
    text = strip_notes(message.text())
    return _TASK_PREFIX.sub("", _IMAGE_LABEL.sub(" ", text)).strip()


def compose_answer(messages: list[ChatMessage], language: str = "en") -> str:
    """The plain answer; its own sentences in the language the standing instructions ask
    for, else the request's, else ``language``; ending with the sign-off they ask for."""
    asked = followed(messages)
    last_user = _last_user_index(messages)
    query = request_text(messages[last_user]) if last_user is not None else ""
    # A URL's letters say nothing about the user's language ("获取 https://…"), nor do the
    # engine's English frames around an earlier conversation (a DAG answer's request is
    # "Previous conversation: …" + the request, its tool results as masking stubs).
    shown = without_urls(current_request(query)) if query else " ".join(m.text() for m in messages)
    lang = asked.language or detect_language(shown, default=language)
    lines: list[str] = []
    if last_user is not None:
        calls = {
            tc.id: tc
            for m in messages[last_user:]
            if m.role == "assistant"
            for tc in m.tool_calls or []
        }
        results = [m for m in messages[last_user + 1 :] if m.role == "tool"]
        named = [calls.get(m.tool_call_id or "") for m in results]
        if any(c is not None and c.name != FINDER for c in named):
            # The tools found were called: the finder's list says nothing more.
            results = [
                m for m, c in zip(results, named, strict=True) if c is None or c.name != FINDER
            ]
        for m in results:
            call = calls.get(m.tool_call_id or "")
            name = call.name if call else (m.name or "tool")
            try:
                args = json.loads(call.arguments) if call else {}
            except ValueError:
                args = {}
            args = args if isinstance(args, dict) else {}
            lines.extend(_tool_lines(name, args, m.text(), lang, query))
        images = _image_count(messages[last_user])
        described = _described_images(messages[last_user])
        if described:
            lines.extend(described_lines(described, lang))
        elif images:
            lines.append(phrase("images", lang, count=images))
        elif not lines and _REMEMBER_REQUEST.search(query):
            lines.append(phrase("remember", lang))
    if not lines and last_user is not None:
        seen: set[str] = set()
        for block in given_material(messages, last_user):
            if len(block) > 600:
                lines.append(_safe_summary(extractive_summary(block, max_tokens=150)))
                continue
            for line in _given_lines(block):
                if line.strip() not in seen:  # a combining step repeats its inputs
                    seen.add(line.strip())
                    lines.append(line)
    if not lines:
        if len(query) > 400:
            lines.append(phrase("key_points", lang))
            lines.append(_safe_summary(extractive_summary(query, max_tokens=200)))
        elif query:
            lines.append(phrase("asked", lang, query=escape_markdown(" ".join(query.split()))))
    lines.append(phrase("note", lang))
    return "\n\n".join(with_sign_off(lines, asked.sign_off))


def _without_note(text: str) -> str:
    """``text`` without this model's own honesty notes (they would pile up across steps)."""
    for note in all_notes():
        text = text.replace(note, "")
    return text.strip()


# ``[image: name, WxH — description]`` (chat.history.image_note): the stored description.
_DESCRIBED_IMAGE = re.compile(r"\[image: (.+?), (\d+x\d+) — ([^\]\n]*)\]")


def _described_images(message: ChatMessage) -> list[tuple[str, str, str]]:
    """The images of ``message`` that came as their stored description (name, size, text)."""
    return [
        (m.group(1), m.group(2), m.group(3).strip())
        for m in _DESCRIBED_IMAGE.finditer(message.text())
        if m.group(3).strip()
    ]


def described_lines(described: list[tuple[str, str, str]], lang: str) -> list[str]:
    """This model cannot see: it says so, and what each image's stored description says."""
    return [
        phrase(
            "image_described",
            lang,
            name=escape_markdown(name),
            size=size,
            description=escape_markdown(text),
        )
        for name, size, text in described
    ]


def _image_count(message: ChatMessage) -> int:
    if not isinstance(message.content, list):
        return len(_IMAGE_LABEL.findall(message.text()))
    return sum(
        1
        for p in message.content
        if isinstance(p, dict)
        and (
            p.get("type") == "image_url"
            or (p.get("type") == "text" and _IMAGE_LABEL.fullmatch(str(p.get("text", "")).strip()))
        )
    )


def _last_user_index(messages: list[ChatMessage]) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user":
            return i
    return None


# The pieces one read of a network stream hands over at once: the loop runs between reads,
# not between pieces (a provider's read carries the pieces that arrived meanwhile).
PIECES_PER_READ = 64


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

    def __init__(self, *, model_name: str = OFFLINE_MODEL_NAME, language: str = "en") -> None:
        self.model_name = model_name
        # The user's interface language: what the model's own sentences are written in
        # when the request itself does not show a language ("3+4").
        self.language = language_of(language)

    def __repr__(self) -> str:
        return f"OfflineLLM(model={self.model_name!r}, language={self.language!r})"

    def speaking(self, language: str) -> OfflineLLM:
        """This model for a user whose interface is in ``language`` (e.g. "zh-hans")."""
        return OfflineLLM(model_name=self.model_name, language=language)

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
            return _text(json.dumps(make_plan(user_text, self.language), ensure_ascii=False))
        if any("JSON verdict" in s for s in systems):
            verdict = make_verdict(user_text, self.language)
            return _text(json.dumps(verdict, ensure_ascii=False))
        last_user = _last_user_index(messages)
        if tools and last_user is not None:
            after = messages[last_user + 1 :]
            answered = any(m.role == "tool" for m in after)
            called = {tc.name for m in after if m.role == "assistant" for tc in m.tool_calls or []}
            # After find_tools, the tools it found are called as asked (only those not called).
            if not answered or FINDER in called:
                offered = {
                    t.get("function", {}).get("name") for t in tools if t.get("type") == "function"
                }
                if answered:
                    offered = (offered | _found_tools(after)) - {FINDER}
                # A step reads the results of the steps it depends on ("then multiply
                # that result by 10"): they come as the user messages before its task.
                query = resolve_references(
                    request_text(messages[last_user]),
                    "\n\n".join(given_material(messages, last_user)),
                )
                calls = decide_tool_calls(query, offered, call_prefix=f"call_{len(messages)}")
                calls = [c for c in calls if c.name not in called]
                documents = document_calls(query, messages) if "read_document" in offered else []
                if documents and not calls:
                    # Each document the question is about is read (a PDF and a DOCX: both).
                    calls = [
                        ToolCall(
                            id=f"call_{len(messages)}_{i}_read_document",
                            name="read_document",
                            arguments=json.dumps(document, ensure_ascii=False),
                        )
                        for i, document in enumerate(documents)
                    ]
                if calls:
                    return ChatMessage(role="assistant", content=None, tool_calls=calls)
        return _text(compose_answer(messages, self.language))

    def _usage(self, messages: list[ChatMessage], reply: ChatMessage) -> Usage:
        return Usage(
            estimate_messages_tokens(messages), estimate_message_tokens(reply), estimated=True
        )

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
        for number, piece in enumerate(_stream_pieces(reply.text())):
            if number % PIECES_PER_READ == 0:
                await asyncio.sleep(0)  # a read of the stream: cancellation can come in
            yield StreamChunk(text=piece)
        yield StreamChunk(
            tool_calls=reply.tool_calls,
            usage=self._usage(messages, reply),
            finish_reason="tool_calls" if reply.tool_calls else "stop",
        )


def _text(content: str) -> ChatMessage:
    return ChatMessage(role="assistant", content=content)
