"""Properties of the masking tier (contextmgmt.core.masking) over random conversations:
tool pairs stay valid, masking is deterministic and idempotent, the newest tool rounds,
pinned messages and the current query are never touched, and the token count never grows;
through the guard, call after call, stubs are only ever appended to the prefix sent before."""

from __future__ import annotations

import asyncio
import copy
import json
import random
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextmgmt.core import masking
from contextmgmt.core.compact import tool_units
from contextmgmt.core.guard import ContextGuard
from contextmgmt.core.masking import MASK_PREFIX, is_masked, mask_tool_results
from contextmgmt.core.messages import ChatMessage, ToolCall
from contextmgmt.core.tokens import estimate_messages_tokens

from .builders import problems, system

pytestmark = pytest.mark.slow  # long hypothesis searches (not in bin/test --fast)

WORDS = ["total", "50875.356", "EUR", "host", "db-17", "log", "ERROR", "x", "页面", "Zeile"]


@st.composite
def texts(draw, max_words=400):
    """Up to ``max_words`` of WORDS, picked by a generator seeded from one draw: hypothesis
    spends its time per draw, and a draw per word made the searches of this module cost
    some 40 s of CPU (docs/testing.md, "How long it takes"); what masking reads, a text's
    length and its mix of words, still varies with every example."""
    n = draw(st.integers(1, max_words) | st.integers(60, 160))
    return " ".join(random.Random(draw(st.integers(0, 2**32))).choices(WORDS, k=n))


@st.composite
def conversations(draw):
    out = [system("Use the tools.")]
    ids = iter(range(1, 10_000))
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["turn", "round", "round", "pinned-round"]))
        if kind == "turn":
            out.append(ChatMessage(role="user", content=draw(texts(30))))
            out.append(ChatMessage(role="assistant", content=draw(texts(30))))
            continue
        calls = [
            ToolCall(
                f"c{next(ids)}",
                draw(st.sampled_from(["fetch", "calc", "read_document"])),
                json.dumps({"q": draw(texts(3))}),
            )
            for _ in range(draw(st.integers(1, 3)))
        ]
        pinned = kind == "pinned-round"
        out.append(ChatMessage(role="assistant", content=None, tool_calls=calls, pinned=pinned))
        for call in calls:
            out.append(ChatMessage(role="tool", content=draw(texts()), tool_call_id=call.id))
    out.append(ChatMessage(role="user", content=draw(texts(20)), pinned=True))  # the query
    if draw(st.booleans()):
        call = ToolCall(f"c{next(ids)}", "calc", '{"e": "1+1"}')
        out.append(ChatMessage(role="assistant", content=None, tool_calls=[call]))
        out.append(ChatMessage(role="tool", content=draw(texts()), tool_call_id=call.id))
    return out


targets = st.one_of(st.none(), st.integers(0, 3_000))
rounds = st.integers(0, 4)


@settings(max_examples=150, deadline=None)
@given(conversations(), targets, rounds)
def test_pairs_stay_valid_and_only_old_unpinned_tool_results_change(messages, target, keep):
    snapshot = copy.deepcopy(messages)
    out = mask_tool_results(messages, target_tokens=target, keep_rounds=keep)
    assert messages == snapshot  # the caller's list and messages are untouched
    assert problems(out.messages) == problems(messages)
    assert len(out.messages) == len(messages)
    newest = [u for u in tool_units(messages) if u[0].tool_calls][::-1][:keep]
    untouchable = {id(m) for u in newest for m in u}
    unread = masking.unanswered_round(messages)
    if unread is not None:  # the round the model has not answered: never stubbed (RT.1)
        untouchable |= {id(m) for m in messages[unread:]}
    untouchable |= {id(m) for u in tool_units(messages) for m in u if any(x.pinned for x in u)}
    for before, after in zip(messages, out.messages, strict=True):
        if after is before:
            continue
        assert before.role == "tool" and id(before) not in untouchable
        assert after.tool_call_id == before.tool_call_id and after.role == "tool"
        assert is_masked(after) and after.text().startswith(MASK_PREFIX)
    query = next(m for m in messages if m.pinned and m.role == "user")
    assert any(m is query for m in out.messages)


@settings(max_examples=150, deadline=None)
@given(conversations(), targets, rounds)
def test_never_more_tokens_deterministic_and_idempotent(messages, target, keep):
    once = mask_tool_results(messages, target_tokens=target, keep_rounds=keep)
    assert estimate_messages_tokens(once.messages) <= estimate_messages_tokens(messages)
    assert once.tokens_after == estimate_messages_tokens(once.messages)
    again = mask_tool_results(copy.deepcopy(messages), target_tokens=target, keep_rounds=keep)
    assert [m.content for m in again.messages] == [m.content for m in once.messages]
    twice = mask_tool_results(once.messages, target_tokens=target, keep_rounds=keep)
    assert twice.masked == []
    assert all(a is b for a, b in zip(twice.messages, once.messages, strict=True))
    if target is not None and once.masked:
        # Oldest first and no further than needed: without the last stub it was over.
        last = once.masked[-1]
        assert once.tokens_after + last.tokens_saved > target


def test_a_stub_names_tool_arguments_size_first_line_and_the_way_back():
    call = ToolCall("call_7", "fetch", '{"url": "https://example.org/report"}')
    result = "Quarterly report\n" + "line\n" * 2_000
    messages = [
        system(),
        ChatMessage(role="user", content="Fetch it", pinned=True),
        ChatMessage(role="assistant", content=None, tool_calls=[call]),
        ChatMessage(role="tool", content=result, tool_call_id="call_7"),
        ChatMessage(role="assistant", content="Read."),
    ]
    out = mask_tool_results(messages, keep_rounds=0)
    stub = out.messages[3].text()
    assert 'fetch({"url": "https://example.org/report"})' in stub
    assert f"{len(result):,} characters" in stub and "First line: Quarterly report" in stub
    assert 'recall with id "call_7"' in stub
    (masked,) = out.masked
    assert (masked.tool, masked.chars, masked.call_id) == ("fetch", len(result), "call_7")
    assert masked.tokens_saved > 0
    document = ToolCall("call_8", "read_document", '{"file": "a.pdf", "page": 3}')
    messages[2:] = [
        ChatMessage(role="assistant", content=None, tool_calls=[document]),
        ChatMessage(role="tool", content=result, tool_call_id="call_8"),
        ChatMessage(role="assistant", content="Read."),
    ]
    stub = mask_tool_results(messages, keep_rounds=0).messages[3].text()
    assert 'call read_document({"file": "a.pdf", "page": 3}) again' in stub


@st.composite
def runs(draw):
    """A run's start (system, the query) and the tool rounds its calls add, one per call."""
    ids = iter(range(1, 10_000))
    added = []
    for _ in range(draw(st.integers(1, 12))):
        calls = [
            ToolCall(f"r{next(ids)}", draw(st.sampled_from(["fetch", "calc"])), '{"q": 1}')
            for _ in range(draw(st.integers(1, 2)))
        ]
        added.append(
            [ChatMessage(role="assistant", content=None, tool_calls=calls)]
            + [ChatMessage(role="tool", content=draw(texts()), tool_call_id=c.id) for c in calls]
        )
    start = [system("Use the tools."), ChatMessage(role="user", content="Go", pinned=True)]
    return start, added


@settings(max_examples=100, deadline=None)
@given(runs(), st.integers(300, 6_000))
def test_the_guard_only_appends_stubs_so_each_call_keeps_the_previous_prefix(run, budget):
    """Call after call of a run through the guard: pairs stay valid, and whenever only
    masking was needed, everything up to the last stub the call started with is sent byte
    for byte as before (the provider's cached prefix); masking never adds tokens."""
    start, added = run
    guard = ContextGuard(budget=budget)
    messages = list(start)
    for round_ in added:
        before = messages + round_
        settled = max((i + 1 for i, m in enumerate(before) if is_masked(m)), default=0)
        messages = asyncio.run(guard.check_and_compact(before))
        assert problems(messages) == []
        if guard.last.strategy in ("none", "mask"):
            assert [m.to_openai() for m in messages[:settled]] == [
                m.to_openai() for m in before[:settled]
            ]
            assert estimate_messages_tokens(messages) <= estimate_messages_tokens(before)
            if guard.last.strategy == "mask":
                assert estimate_messages_tokens(messages) <= budget


@settings(max_examples=150, deadline=None)
@given(conversations(), rounds)
def test_the_quick_look_before_masking_never_misses_a_result(messages, keep):
    """The guard runs masking on every call over half its budget; a cheap pass first says
    whether anything is left to mask. Masking with that pass and without it agree."""
    quick = mask_tool_results(messages, keep_rounds=keep)
    with patch.object(masking, "_anything_to_mask", return_value=True):
        full = mask_tool_results(messages, keep_rounds=keep)
    assert quick.masked == full.masked
    assert all(m.chars >= masking.MIN_MASKED_CHARS for m in full.masked)


@st.composite
def page_runs(draw):
    """A run reading long results: each step one or two calls whose results are up to
    60,000 characters (some ending with a read-on line), sometimes a follow-up after."""
    steps = []
    for step in range(draw(st.integers(1, 7))):
        calls = [
            ToolCall(f"p{step}_{k}", draw(st.sampled_from(["mcp__page", "fetch_url"])), "{}")
            for k in range(draw(st.integers(1, 2)))
        ]
        results = []
        for call in calls:
            size = draw(st.integers(50, 60_000))
            words = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=4, max_size=12)))
            text = (f"# {call.id}\n" + (words + "\n") * (size // (len(words) + 1) + 1))[:size]
            if draw(st.booleans()):
                line = f"Part 1 of 3: characters 0–{size} of {3 * size}"
                text += f'\n[{line}; read on with x(id="{call.id}")]'
            results.append(ChatMessage(role="tool", content=text, tool_call_id=call.id))
        unit = [ChatMessage(role="assistant", content=None, tool_calls=calls), *results]
        if draw(st.integers(0, 5)) == 0:
            unit.append(ChatMessage(role="user", content=draw(texts(20))))
        steps.append(unit)
    return steps


windows = st.sampled_from([4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 200_000])


@settings(max_examples=60, deadline=None)
@given(page_runs(), windows, st.booleans())
def test_at_every_window_a_run_fits_keeps_pairs_pins_and_stubs_rt_1(steps, window, summarise):
    """RT.1 at windows from 4K to 200K, call after call of a run through the guard: the
    budget is respected, the pinned query and every tool call/result pair stay, the caller's
    messages are never changed, a stub once made is the same text at every later call, and
    the round the model has not answered yet is never stubbed."""
    from tests.support.fake_llm import FakeLLM

    llm = FakeLLM(default="Summary of the earlier steps.") if summarise else None
    guard = ContextGuard(compact_llm=llm, budget=window)
    query = ChatMessage(role="user", content="Read every page.", pinned=True)
    messages = [system("Use the tools."), query]
    stubs: dict[str, str] = {}
    for unit in steps:
        before = messages + unit
        snapshot = copy.deepcopy(before)
        messages = list(asyncio.run(guard.check_and_compact(before)))
        assert before == snapshot  # never mutated
        assert problems(messages) == []
        assert any(m is query for m in messages)
        assert estimate_messages_tokens(messages) <= window
        for m in messages:
            if is_masked(m):
                assert stubs.setdefault(m.tool_call_id, m.text()) == m.text()
        for call_id, text in stubs.items():  # a stub stays as it was while it is sent
            sent = [m for m in messages if m.role == "tool" and m.tool_call_id == call_id]
            assert all(m.text() == text for m in sent)
        unread = masking.unanswered_round(messages)
        assert unread is not None
        assert not any(is_masked(m) for m in messages[unread:])
        ids = {tc.id for tc in unit[0].tool_calls}
        assert ids <= {m.tool_call_id for m in messages[unread:] if m.role == "tool"}
