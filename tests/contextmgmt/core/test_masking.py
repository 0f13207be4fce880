"""Masking that adapts to the window (RT.1) and the read-on lines that outlive masking and
compaction (RT.4): what the guard does with rounds too large for their share, results the
model has read, and a result larger than the room left."""

from __future__ import annotations

import json

from contextmgmt.core.guard import ContextGuard
from contextmgmt.core.masking import (
    CUT_KEY,
    MASK_PREFIX,
    THIS_RUN_NOTE,
    cut_unread_results,
    is_masked,
    kept_window_start,
    mask_tool_results,
    stub_for,
)
from contextmgmt.core.messages import ChatMessage, ToolCall
from contextmgmt.core.readon import call_text, parts_of, read_on_line, read_on_lines
from contextmgmt.core.summarise import READING_IN_PARTS, summarise_rounds
from contextmgmt.core.tokens import estimate_messages_tokens
from tests.support.fake_llm import FakeLLM

from .builders import assistant, problems, system, user

PAGE_LINE = read_on_line(
    part=1,
    parts=3,
    start=0,
    end=20_000,
    total=51_234,
    unit="characters",
    next_call=call_text("fetch_url", {"url": "https://example.org/a", "start_index": 20_000}),
)


def page(i: int, chars: int = 30_000) -> str:
    """A page of about ``chars`` characters, its number in its first line and throughout."""
    line = f"Page {i}: the reading for sensor {i} is {1000 + i}.{i:02d} units, logged hourly. "
    return (f"# Page {i}\n" + line * (chars // len(line) + 1))[:chars]


def two_call_round(step: int, chars: int = 30_000) -> list[ChatMessage]:
    calls = [
        ToolCall(f"s{step}a", "pages__read", json.dumps({"n": 2 * step})),
        ToolCall(f"s{step}b", "pages__read", json.dumps({"n": 2 * step + 1})),
    ]
    return [
        ChatMessage(role="assistant", content=None, tool_calls=calls),
        ChatMessage(role="tool", content=page(2 * step, chars), tool_call_id=calls[0].id),
        ChatMessage(role="tool", content=page(2 * step + 1, chars), tool_call_id=calls[1].id),
    ]


def start() -> list[ChatMessage]:
    return [system("Use the tools."), user("Read every page.", pinned=True)]


async def test_rounds_larger_than_their_share_are_stubbed_not_summarised_rt_1():
    """At a 32K window two rounds of two 30,000-character pages exceed the budget alone:
    the answered round becomes stubs, the unread one stays whole, and no summary is asked."""
    llm = FakeLLM()  # no reply scripted: a summariser call would fail the test
    guard = ContextGuard(compact_llm=llm, budget=24_000)
    messages = start() + two_call_round(0)
    messages = await guard.check_and_compact(messages)
    messages = list(messages) + two_call_round(1)
    out = await guard.check_and_compact(messages)
    assert llm.calls == [] and guard.last.strategy == "mask"
    assert [m.call_id for m in guard.last.masked] == ["s0a", "s0b"]
    assert all(o is m for o, m in zip(out[-3:], messages[-3:], strict=True))
    assert estimate_messages_tokens(out) <= 24_000 and problems(out) == []


def test_the_window_keeps_rounds_only_while_they_fit_and_always_the_unread_one_rt_1():
    messages = start() + two_call_round(0, 4_000) + two_call_round(1, 4_000)
    unread = len(messages) - 3
    assert kept_window_start(messages, keep_rounds=2) == 2  # both fit: both stay
    assert kept_window_start(messages, keep_rounds=2, keep_tokens=2_500) == unread
    assert kept_window_start(messages, keep_rounds=0, keep_tokens=0) == unread
    answered = [*messages, assistant("Both read.")]
    assert kept_window_start(answered, keep_rounds=0) == len(answered)


async def test_answered_rounds_become_stubs_before_any_summary_rt_1():
    """Two rounds fit their share, but with an earlier long exchange the context is over
    budget: the answered round is masked too, and that fits, so no summariser is asked."""
    messages = [
        *start(),
        user("An earlier question " * 300),
        assistant("An earlier answer " * 300),
        *two_call_round(0, 5_000),
        *two_call_round(1, 5_000),
    ]
    budget = estimate_messages_tokens(messages) - 500
    llm = FakeLLM()
    guard = ContextGuard(compact_llm=llm, budget=budget)
    out = await guard.check_and_compact(messages)
    assert llm.calls == [] and guard.last.strategy == "mask"
    assert [m.call_id for m in guard.last.masked] == ["s0a", "s0b"]
    assert all(not is_masked(m) for m in out[-3:])


async def test_an_unread_result_larger_than_the_room_is_cut_with_a_pointer_rt_1():
    """At an 8K window a 30,000-character result cannot fit: it is cut, never summarised,
    and says how to read on (recall from where it stops), keeping the tool's own line."""
    text = page(0) + "\n\n" + PAGE_LINE
    call = ToolCall("c1", "fetch_url", '{"url": "https://example.org/a"}')
    messages = [
        *start(),
        ChatMessage(role="assistant", content=None, tool_calls=[call]),
        ChatMessage(role="tool", content=text, tool_call_id="c1"),
    ]
    llm = FakeLLM()
    guard = ContextGuard(compact_llm=llm, budget=4_000)
    out = await guard.check_and_compact(messages)
    assert llm.calls == [] and guard.last.strategy == "mask"
    result = out[-1]
    assert not is_masked(result) and result.metadata[CUT_KEY]["chars"] == len(text)
    shown = result.metadata[CUT_KEY]["shown"]
    assert text.startswith(result.text()[:shown]) and 1_000 < shown < len(text)
    lines = read_on_lines(result.text())
    assert lines[0].endswith(f'read on with recall(id="c1", start={shown})]')
    assert f"of {len(text):,} of this result shown" in lines[0]
    assert lines[1] == PAGE_LINE
    assert estimate_messages_tokens(out) <= 4_000 and messages[-1].text() == text


def test_a_cut_result_is_cut_further_from_the_same_start_rt_1():
    text = page(0)
    messages = [*start(), *two_call_round(0)]
    messages[-1] = ChatMessage(role="tool", content=text, tool_call_id="s0b")
    once = cut_unread_results(messages, room_tokens=3_000).messages
    twice = cut_unread_results(once, room_tokens=1_000).messages
    first, second = once[-1].metadata[CUT_KEY], twice[-1].metadata[CUT_KEY]
    assert second["chars"] == first["chars"] == len(text) and second["shown"] < first["shown"]
    assert twice[-1].text().startswith(text[: second["shown"]])
    (line,) = read_on_lines(twice[-1].text())
    assert f"start={second['shown']})" in line


def test_a_stub_carries_the_read_on_lines_of_the_result_it_replaces_rt_4():
    text = "URL: https://example.org/a\n\n" + page(0, 20_000) + "\n\n" + PAGE_LINE
    call = ToolCall("c1", "fetch_url", '{"url": "https://example.org/a"}')
    messages = [
        *start(),
        ChatMessage(role="assistant", content=None, tool_calls=[call]),
        ChatMessage(role="tool", content=text, tool_call_id="c1"),
        assistant("Read part 1."),
    ]
    out = mask_tool_results(messages, keep_rounds=0)
    stub = out.messages[3].text()
    assert stub.startswith(MASK_PREFIX) and stub.endswith("\n" + PAGE_LINE)
    assert read_on_lines(stub) == [PAGE_LINE]
    # A cut result's stub counts the whole result and says where reading stopped.
    cut = cut_unread_results(messages[:4], room_tokens=1_000).messages
    out = mask_tool_results([*cut, assistant("Read it.")], keep_rounds=0)
    stub = out.messages[3].text()
    assert f"returned {len(text):,} characters" in stub
    assert [line.split(";")[-1] for line in read_on_lines(stub)] == [
        f' read on with recall(id="c1", start={cut[3].metadata[CUT_KEY]["shown"]})]',
        ' read on with fetch_url(url="https://example.org/a", start_index=20000)]',
    ]


def test_the_stub_format_is_one_function_rt_1():
    call = ToolCall("c9", "search", '{"q": "tern"}')
    stub = stub_for(call, chars=12_345, first_line="Terns", result_id="r7", read_on=[PAGE_LINE])
    assert stub == (
        f'{MASK_PREFIX}: search({{"q": "tern"}}) returned 12,345 characters. First line: Terns. '
        f'For the whole result, call recall with id "r7"{THIS_RUN_NOTE}.]\n{PAGE_LINE}'
    )


def test_a_part_says_where_it_stands_rt_4():
    assert parts_of(0, 8_000, 51_234) == (1, 7)
    assert parts_of(8_000, 8_000, 51_234) == (2, 7)
    assert parts_of(48_000, 8_000, 51_234) == (7, 7)
    assert parts_of(0, 8_000, 5_000) == (1, 1)
    line = read_on_line(
        part=2,
        parts=7,
        start=8_000,
        end=16_000,
        total=51_234,
        unit="characters",
        next_call=call_text("fetch_url", {"url": "https://x.example/", "start_index": 16_000}),
    )
    assert line == (
        "[Part 2 of 7: characters 8,000–16,000 of 51,234; read on with "
        'fetch_url(url="https://x.example/", start_index=16000)]'
    )
    assert read_on_lines(f"text\n{line}\nmore\n{line}") == [line]


async def test_a_summary_keeps_where_the_parts_read_stand_rt_4():
    """The summariser may drop the read-on lines; the summary keeps them as written, and a
    later summary folding it keeps them again."""
    first = PAGE_LINE
    second = PAGE_LINE.replace("Part 1", "Part 2").replace("20,000 of", "40,000 of")
    messages = [
        user("Read the page."),
        ChatMessage(role="tool", content=page(0, 2_000) + "\n\n" + first, tool_call_id="x"),
        ChatMessage(role="tool", content=page(1, 2_000) + "\n\n" + second, tool_call_id="y"),
    ]
    llm = FakeLLM(default="The page lists sensor readings.")
    outcome = await summarise_rounds(messages, llm, max_summary_tokens=400)
    text = outcome.summary.text()
    assert READING_IN_PARTS in text and text.endswith(f"{first}\n{second}")
    folded = await summarise_rounds(
        [outcome.summary, user("And now?")], llm, max_summary_tokens=400
    )
    assert folded.summary.text().endswith(f"{first}\n{second}")
