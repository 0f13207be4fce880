"""Markdown-safe offline answers (issue 9): fimone.llm.offline.markdown and its use.

The UI renders answers with markdown-it-py (CommonMark + tables + strikethrough, as
chat.rendering.markdown does); fimone.llm stays free of Django, so these tests use markdown_it
directly. "What the user sees is what was meant": the rendered text equals the quoted text.
"""

from __future__ import annotations

import html
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from contextmgmt.core.messages import ChatMessage, ToolCall
from fimone.llm.offline.markdown import escape_markdown, inline_code
from fimone.llm.offline.model import OfflineLLM


def md() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


def rendered_text(markdown: str) -> str:
    """What a reader sees: the rendered HTML without tags, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", md().render(markdown))).strip()


# --- escape_markdown -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Compute 17*23 and 19*29",
        "call __init__ and _private_ or **bold** ~~gone~~",
        "a [link](http://example.com) and ![img](x.png) and <http://example.com>",
        "<b>not html</b> &amp; &#65; x < 5",
        "back`tick and ``two`` ticks",
        "# not a heading",
        "> not a quote",
        "- not a list",
        "+ not a list",
        "1. not a list",
        "2) not a list",
        "---",
        "===",
    ],
)
def test_escaped_text_renders_as_written(text):
    assert rendered_text(escape_markdown(text)) == text.replace("``two``", "two")


def test_user_code_spans_stay_code():
    """Backtick pairs the user typed are kept as code: that is what they meant."""
    escaped = escape_markdown("use `a*b` here")
    assert escaped == "use `a*b` here"
    assert "<code>a*b</code>" in md().render(escaped)


def test_block_starts_are_escaped_on_every_line():
    text = "Notes:\n# one\n- two\n3. three\n> four\nfive\n---"
    escaped = escape_markdown(text)
    html_out = md().render(escaped)
    assert not re.search(r"<(h\d|ul|ol|li|blockquote|hr)\b", html_out), html_out
    assert rendered_text(escaped) == text


@pytest.mark.parametrize("text", ["a|b\n-|-", "| a | b |\n|---|:-:|", "x|y\n---|"])
def test_a_quoted_table_stays_text(text):
    escaped = escape_markdown(text)
    assert "<table" not in md().render(escaped)
    assert rendered_text(escaped) == text


_LINE = st.text(alphabet="ab1.*_[]()<>!#&;~|-+=: ", min_size=1, max_size=15)


@settings(max_examples=150, deadline=None)
@given(st.lists(_LINE.map(str.strip).filter(bool), min_size=1, max_size=4))
def test_any_few_lines_render_as_written(lines):
    text = "\n".join(lines)
    assert rendered_text(escape_markdown(text)) == text


def test_only_what_can_change_the_rendering_is_escaped():
    """The streamed plain text shows escapes until the HTML replaces it: keep them few."""
    text = "What's 3 - 2, (a+b)! and 5% of 10? Done. x < 5"
    assert escape_markdown(text) == text


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab 1.*_[]()<>!#&;~|-+=:/\"'", max_size=40))
def test_any_single_line_renders_as_written(text):
    """No backslash (an existing escape is kept, for idempotence) and no backtick (a pair
    is kept as a code span, tested above) in the alphabet; everything else must survive."""
    text = text.strip()
    assert rendered_text(escape_markdown(text)) == text


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="ab 1.*_`[]<#&;~-+=>\n", max_size=40))
def test_escaping_is_idempotent(text):
    once = escape_markdown(text)
    assert escape_markdown(once) == once


# --- inline_code ---------------------------------------------------------------------------


@pytest.mark.parametrize("expr", ["17*23", "a_b_c", "x`y", "`edge`", "2 ** 10", "``"])
def test_inline_code_renders_the_expression_exactly(expr):
    out = md().render(inline_code(expr))
    (code,) = re.findall(r"<code>(.*?)</code>", out)
    assert html.unescape(code) == expr


# --- the offline model's answers -----------------------------------------------------------


def tools() -> list[dict]:
    return [
        {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
        for n in ("calculator", "current_time", "recall")
    ]


async def test_calculator_answers_keep_17_times_23():
    """The reported case: "Compute 17*23 and 19*29" must not turn into italics."""
    call = ToolCall(id="c1", name="calculator", arguments='{"expression": "17*23"}')
    messages = [
        ChatMessage(role="user", content="Compute 17*23 and 19*29"),
        ChatMessage(role="assistant", content=None, tool_calls=[call]),
        ChatMessage(role="tool", content="391", tool_call_id="c1"),
    ]
    answer = (await OfflineLLM().chat(messages, tools=tools())).message.text()
    rendered = md().render(answer)
    assert "<code>17*23</code> = 391" in rendered
    assert "<em>" not in rendered


async def test_a_quoted_question_renders_as_typed():
    answer = (
        await OfflineLLM().chat([ChatMessage(role="user", content="Is a*b*c the same as _x_?")])
    ).message.text()
    assert "You asked: “Is a*b*c the same as _x_?”." in rendered_text(answer)


async def test_recalled_passages_render_as_stored():
    call = ToolCall(id="c1", name="recall", arguments='{"query": "code"}')
    passage = "Passages matching 'code':\n\n[1] My *secret* code is __4711__"
    messages = [
        ChatMessage(role="user", content="What did I say earlier about the code?"),
        ChatMessage(role="assistant", content=None, tool_calls=[call]),
        ChatMessage(role="tool", content=passage, tool_call_id="c1"),
    ]
    answer = (await OfflineLLM().chat(messages, tools=tools())).message.text()
    assert "My *secret* code is __4711__" in rendered_text(answer)


async def test_dag_step_results_reach_the_answer_once_without_the_engine_frames():
    """Step results reach the final answer; the headers around them (which quote the user's
    words) are the engine's frames, not the answer, and a result a combining step repeated
    shows once."""
    task = "Collect what is needed for: Compute 17*23 and 19*29"
    messages = [
        ChatMessage(role="system", content="Write the final answer."),
        ChatMessage(role="user", content=f"Result of step s1 ({task}):\n`17*23` = 391"),
        ChatMessage(
            role="user",
            content=(
                "Result of step s2 (combine):\nResults of the steps your task depends on:\n\n"
                f"Result of step s1 ({escape_markdown(task)}):\n`17*23` = 391"
            ),
        ),
        ChatMessage(role="user", content="Compute 17*23 and 19*29", pinned=True),
    ]
    answer = (await OfflineLLM().chat(messages)).message.text()
    seen = rendered_text(answer)
    assert "Result of step" not in seen and task not in seen
    assert seen.count("17*23 = 391") == 1
    assert "<em>" not in md().render(answer)
