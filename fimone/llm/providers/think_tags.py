"""Reasoning written inline as ``<think>…</think>`` in a reply's content, split out of it.

Qwen3, QwQ and DeepSeek-R1 distills served without a reasoning parser (vLLM without
``--reasoning-parser``, several local servers) write their thinking into ``content`` between
``<think>`` and ``</think>``. ``ThinkSplitter`` takes the content as it streams and hands
back what is answer and what is reasoning, so that the thinking is shown as such and never
stored or sent back as answer text:

- a tag may arrive split over several deltas (``<thi`` + ``nk>``): a piece that could still
  become a tag is held back until the next delta (or the end) decides;
- a ``<think>`` never closed (the reply was cut at its token limit) keeps everything after
  it as reasoning;
- a ``<think>`` inside a fenced code block or an inline code span of the answer is text
  (an answer about the tag itself), as is anything that merely starts like the tag;
- the whitespace a model puts after ``<think>`` and after ``</think>`` is dropped.

Several chat templates open the block in the prompt (QwQ, DeepSeek-R1 distills, Qwen3's
"Thinking" models), so the reply carries only the closing tag. For such a model
(``opens_in_prompt``, by name, or once an endpoint has sent a closing tag without an opening
one) the splitter starts inside the block, tentatively: it holds the text back until
``</think>`` shows it was reasoning, and a reply that ends without one was all answer (so
the answer of a model that did not think arrives at once, at the end). The first reply of
an unknown endpoint that does this shows its reasoning as answer up to the closing tag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

OPEN = "<think>"
CLOSE = "</think>"
_FENCE = re.compile(r"^ {0,3}(?:```|~~~)", re.MULTILINE)
# Models whose chat template writes the opening tag into the prompt.
_OPENS_IN_PROMPT = re.compile(r"qwq|thinking|deepseek-r1|r1-distill|qwen3\.5", re.IGNORECASE)


def opens_in_prompt(model: str) -> bool:
    return bool(_OPENS_IN_PROMPT.search(model or ""))


@dataclass(slots=True)
class Split:
    """What one piece of content turned out to be."""

    text: str = ""
    reasoning: str = ""


@dataclass(slots=True)
class ThinkSplitter:
    thinking: bool = False
    # Started inside a block the prompt opened: hold everything until the closing tag says
    # it was reasoning (``tentative``), or the end says it was the answer.
    tentative: bool = False
    # A closing tag came without an opening one: the endpoint opens the block in its prompt.
    saw_orphan_close: bool = False
    _held: str = ""
    # The answer so far (to tell whether a tag stands inside code) and whether whitespace is
    # being dropped after a tag.
    _answer: list[str] = field(default_factory=list)
    _skip_space: bool = False

    @classmethod
    def inside(cls) -> ThinkSplitter:
        """A splitter for a reply that starts inside a block its prompt opened."""
        return cls(thinking=True, tentative=True)

    def settle(self) -> None:
        """The endpoint sent reasoning in its own field: the content is all answer."""
        if self.tentative:
            self.thinking, self.tentative = False, False

    def feed(self, piece: str) -> Split:
        """Split the next delta of content."""
        out = Split()
        buffer, self._held = self._held + piece, ""
        while buffer:
            if self.thinking:
                buffer = self._in_thought(buffer, out)
            else:
                buffer = self._in_answer(buffer, out)
        return out

    def flush(self) -> Split:
        """The end of the reply: what was held back is what it was taken for."""
        held, self._held = self._held, ""
        out = Split()
        if self.tentative:  # never closed: it was the answer
            self.thinking = self.tentative = False
            self._skip_space = False
            self._say(held, out)
        elif self.thinking:
            out.reasoning = held
        elif held:
            self._say(held, out)
        return out

    def _in_answer(self, buffer: str, out: Split) -> str:
        start = 0
        while True:
            at = buffer.find("<", start)
            if at < 0:
                self._say(buffer, out)
                return ""
            rest = buffer[at:]
            for tag in (OPEN, CLOSE):
                if rest.startswith(tag) and not self._in_code(buffer[:at]):
                    self._say(buffer[:at], out)
                    self.thinking = tag == OPEN
                    self.saw_orphan_close |= tag == CLOSE
                    self._skip_space = tag == OPEN
                    return buffer[at + len(tag) :]
            if (OPEN.startswith(rest) or CLOSE.startswith(rest)) and not self._in_code(buffer[:at]):
                self._say(buffer[:at], out)
                self._held = rest  # may become the tag with the next delta
                return ""
            start = at + 1

    def _in_thought(self, buffer: str, out: Split) -> str:
        if self.tentative:
            at = buffer.find(CLOSE)
            if at < 0:
                self._held = buffer  # reasoning or answer: the closing tag will say
                return ""
            self.tentative, self._skip_space = False, False
            buffer = buffer.lstrip()
            at = buffer.find(CLOSE)
        if self._skip_space:
            buffer = buffer.lstrip()
            if not buffer:
                return ""
            self._skip_space = False
        at = buffer.find(CLOSE)
        if at >= 0:
            out.reasoning += buffer[:at]
            self.thinking, self._skip_space = False, True
            return buffer[at + len(CLOSE) :]
        keep = _partial_suffix(buffer, CLOSE)
        out.reasoning += buffer[: len(buffer) - keep]
        self._held = buffer[len(buffer) - keep :]
        return ""

    def _say(self, text: str, out: Split) -> None:
        if self._skip_space:
            text = text.lstrip()
            if not text:
                return
            self._skip_space = False
        out.text += text
        self._answer.append(text)

    def _in_code(self, before: str) -> bool:
        """Whether the answer so far, then ``before``, leaves us inside code."""
        text = "".join(self._answer) + before
        if len(_FENCE.findall(text)) % 2:
            return True
        line = text[text.rfind("\n") + 1 :]
        return line.count("`") % 2 == 1


def _partial_suffix(text: str, tag: str) -> int:
    """How many trailing characters of ``text`` are a proper start of ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


def split_whole(content: str) -> Split:
    """A complete reply's content split at once (a reply that was not streamed): a closing
    tag without an opening one ends a block the prompt opened."""
    splitter = ThinkSplitter()
    if CLOSE in content and OPEN not in content.split(CLOSE, 1)[0]:
        splitter = ThinkSplitter.inside()
    first = splitter.feed(content)
    last = splitter.flush()
    return Split(first.text + last.text, first.reasoning + last.reasoning)
