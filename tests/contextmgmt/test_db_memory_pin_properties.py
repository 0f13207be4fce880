"""Properties of DbMemory over random pinned histories (SPEC RV.2, R3.8, R4).

Histories mix plain turns, tool rounds and pins, with or without a stored summary, fitted
with a summarising LLM or by truncation. Whatever the draw: pinned history is kept verbatim
unless pins exceed half the budget, and then only the oldest yield, no more than needed;
tool calls keep their results; the result fits the budget; the caller's messages are not
touched.
"""

from __future__ import annotations

import copy
import itertools

from asgiref.sync import async_to_sync
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from contextmgmt.core.compact import tool_units
from contextmgmt.core.guard import PINNED_CAP_SHARE
from contextmgmt.core.messages import ChatMessage, ToolCall
from contextmgmt.core.tokens import estimate_messages_tokens
from contextmgmt.db_memory import DbMemory, LoadedHistory, StoredSummary
from tests.contextmgmt.core.builders import problems
from tests.support.fake_llm import FakeLLM

WORDS = ["budget", "4,200", "EUR", "host", "db-17", "deploy", "Friday", "lorem", "ipsum", "x"]


@st.composite
def texts(draw, max_words=80):
    n = draw(st.integers(1, max_words))
    return " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=n, max_size=n)))


@st.composite
def histories(draw):
    ids = itertools.count(1)
    out: list[ChatMessage] = []
    for _ in range(draw(st.integers(1, 14))):
        out.append(
            ChatMessage(
                role="user",
                content=draw(texts()),
                pinned=draw(st.booleans()),
                metadata={"id": next(ids)},
            )
        )
        if draw(st.booleans()):
            call_ids = [f"c{next(ids)}" for _ in range(draw(st.integers(1, 2)))]
            out.append(
                ChatMessage(
                    role="assistant",
                    content=None,
                    tool_calls=[ToolCall(c, "search", '{"q": "x"}') for c in call_ids],
                    pinned=draw(st.booleans()),
                    metadata={"id": next(ids)},
                )
            )
            for c in call_ids:
                out.append(
                    ChatMessage(
                        role="tool",
                        content=draw(texts(60)),
                        tool_call_id=c,
                        metadata={"id": next(ids)},
                    )
                )
        out.append(
            ChatMessage(
                role="assistant",
                content=draw(texts()),
                pinned=draw(st.booleans()),
                metadata={"id": next(ids)},
            )
        )
    summary = None
    if draw(st.booleans()):
        summary = StoredSummary(
            content=f"[Conversation summary]\n{draw(texts(80))}",
            covers_through_id=0,
            covered_count=draw(st.integers(1, 30)),
            id=1,
        )
    return LoadedHistory(messages=out, summary=summary)


def pinned_units(messages):
    return [u for u in tool_units(messages) if any(m.pinned for m in u)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    histories(),
    st.integers(min_value=300, max_value=3_000),
    st.booleans(),
    texts(200),
)
def test_rv2_pins_under_the_cap_tool_pairs_budget_and_no_mutation(loaded, budget, with_llm, reply):
    snapshot = copy.deepcopy(loaded)
    llm = FakeLLM(default=reply) if with_llm else None
    memory = DbMemory("conv", budget, compact_llm=llm, loaded=loaded)
    out = async_to_sync(memory.get_messages)()
    event(f"strategy={memory.last.strategy} yielded={bool(memory.last.pins_yielded)}")

    assert loaded == snapshot  # the caller's messages and flags are untouched
    found = problems(out)
    first = next((m for m in out if m.role != "system"), None)
    if first is not None and first.pinned:
        # A pinned answer whose question was summarised may come first: the user asked
        # for it verbatim (the current query still follows it in the run).
        found = [p for p in found if not p.startswith("first non-system")]
    assert found == []  # no tool call without its results, no orphan result
    assert estimate_messages_tokens(out) <= budget

    history = loaded.messages
    units = pinned_units(history)
    pinned_ids = [m.metadata["id"] for u in units for m in u if m.pinned]
    cap = int(budget * PINNED_CAP_SHARE)
    if memory.last.strategy in ("none", "summary"):
        assert memory.last.pins_yielded == ()
        assert all(any(o is m for o in out) for m in history)
        return
    # The oldest pins yield first: the yielded ids are a prefix of the pinned ones.
    assert list(memory.last.pins_yielded) == pinned_ids[: len(memory.last.pins_yielded)]
    yielded_units = [
        u for u in units if any(m.metadata["id"] in memory.last.pins_yielded for m in u)
    ]
    staying = units[len(yielded_units) :]
    assert estimate_messages_tokens([m for u in staying for m in u]) <= cap
    if yielded_units:
        # No more than needed: without the last yield the pins would be over the cap.
        assert estimate_messages_tokens([m for u in units[len(yielded_units) - 1 :] for m in u]) > (
            cap
        )
    # Every pin that did not yield reaches the model verbatim (the caller's own object).
    for unit in staying:
        for m in unit:
            assert any(o is m for o in out), m.metadata


def _words(n: int) -> str:
    return " ".join(["budget"] * n)


# Pins at exactly half the budget, one token over in all, and nothing older than the
# verbatim window but the stored summary: the window once stayed whole beside a summary
# assumed small, so no summariser call was made and the oldest turn was cut off unseen.
PINS_AT_THE_CAP_BESIDE_A_STORED_SUMMARY = LoadedHistory(
    messages=[
        ChatMessage(role="user", content="budget", metadata={"id": 1}),
        ChatMessage(role="assistant", content="budget", metadata={"id": 2}),
        ChatMessage(role="user", content="budget", metadata={"id": 3}),
        ChatMessage(
            role="assistant",
            content=None,
            tool_calls=[ToolCall("c4", "search", '{"q": "x"}')],
            pinned=True,
            metadata={"id": 5},
        ),
        ChatMessage(role="tool", content=_words(8), tool_call_id="c4", metadata={"id": 6}),
        ChatMessage(role="assistant", content=_words(38), pinned=True, metadata={"id": 7}),
        ChatMessage(role="user", content=_words(45), pinned=True, metadata={"id": 8}),
        ChatMessage(role="assistant", content=_words(58), metadata={"id": 9}),
    ],
    summary=StoredSummary(
        content=f"[Conversation summary]\n{_words(27)}",
        covers_through_id=0,
        covered_count=1,
        id=1,
    ),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.integers(min_value=300, max_value=3_000), texts(40))
@example(PINS_AT_THE_CAP_BESIDE_A_STORED_SUMMARY, 342, "budget")
def test_rf1_every_message_leaving_the_window_reaches_the_summary_the_model_gets(
    loaded, budget, reply
):
    """With a working summariser, whatever the pins: each loaded message reaches the model
    verbatim, or the summary the model receives stands for it; none is cut off unseen."""
    llm = FakeLLM(default=reply)
    memory = DbMemory("conv", budget, compact_llm=llm, loaded=loaded)
    out = async_to_sync(memory.get_messages)()
    event(f"strategy={memory.last.strategy} yielded={bool(memory.last.pins_yielded)}")
    verbatim = {m.metadata.get("id") for m in out if not m.is_summary}
    summaries = [m for m in out if m.is_summary]
    assert len(summaries) <= 1
    if memory.last.result is not None and memory.last.result.strategy == "llm":
        summarised = {m.metadata.get("id") for m in memory.last.result.summarized}
        assert summaries and summaries[0] in memory.last.result.messages
    else:
        summarised = set()
    for message in loaded.messages:
        key = message.metadata["id"]
        if key in verbatim:
            continue
        assert key in summarised, (key, memory.last.strategy)
    if loaded.summary is not None:
        # The stored summary is sent, or folded into the one that is.
        assert summaries
