"""Property tests over random conversations (SPEC R2.2, R2.3, R3, RP; DESIGN §2 rules).

Conversations mix system messages, earlier summaries, plain turns, images, tool-call
rounds (several calls per assistant message), injected follow-ups and a current query
that is either last (load time) or followed by tool rounds (ReAct iteration time).
"""

import copy

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from contextmgmt.core.compact import CompactUtils
from contextmgmt.core.guard import ContextGuard
from contextmgmt.core.llm import LLMUnavailable
from contextmgmt.core.masking import is_masked
from contextmgmt.core.messages import SUMMARY_PREFIX, ChatMessage, ToolCall
from contextmgmt.core.tokens import estimate_messages_tokens, estimate_tokens
from tests.support.fake_llm import FakeLLM, Hang

from .builders import IMAGE_PART, problems

PROPERTY_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

ALPHABETS = ["abcdefghij klmnop 0123456789.,", "中文日本語テキスト", "Привет мир", "äöüß €"]


@st.composite
def texts(draw, max_size=600):
    alphabet = draw(st.sampled_from(ALPHABETS))
    size = draw(st.integers(0, max_size))
    seed = draw(st.text(alphabet=alphabet, min_size=1, max_size=20))
    return (seed * (size // len(seed) + 1))[:size]


@st.composite
def conversations(draw):
    msgs: list[ChatMessage] = []
    for _ in range(draw(st.integers(0, 2))):
        msgs.append(ChatMessage(role="system", content=draw(texts(300))))
    if draw(st.booleans()):
        msgs.append(ChatMessage(role="system", content=f"{SUMMARY_PREFIX}\n{draw(texts(300))}"))
    call_no = 0

    def tool_rounds():
        nonlocal call_no
        out = []
        for _ in range(draw(st.integers(1, 2))):
            ids = []
            for _ in range(draw(st.integers(1, 3))):
                call_no += 1
                ids.append(f"call_{call_no}")
            calls = [ToolCall(id=i, name="search", arguments='{"q": "x"}') for i in ids]
            out.append(ChatMessage(role="assistant", content=None, tool_calls=calls))
            for i in ids:
                out.append(ChatMessage(role="tool", content=draw(texts()), tool_call_id=i))
        return out

    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["plain", "image", "tools", "injected"]))
        if kind == "image":
            parts = [{"type": "text", "text": draw(texts(200))}, IMAGE_PART]
            msgs.append(ChatMessage(role="user", content=parts))
        elif kind == "injected":
            msgs.append(ChatMessage(role="user", content=draw(texts()), pinned=True, injected=True))
        else:
            msgs.append(ChatMessage(role="user", content=draw(texts())))
        if kind == "tools":
            msgs.extend(tool_rounds())
        msgs.append(ChatMessage(role="assistant", content=draw(texts())))
    if draw(st.booleans()):
        msgs.append(ChatMessage(role="user", content=draw(texts(300)), pinned=True))
        if draw(st.booleans()):
            msgs.extend(tool_rounds())  # ReAct: the iteration's own tool rounds follow
    return msgs


budgets = st.integers(min_value=40, max_value=4_000)


def kept_alone_tokens(msgs):
    return estimate_messages_tokens([m for m in msgs if m.role == "system" or m.pinned])


def assert_core_invariants(msgs, out):
    assert problems(out) == []
    for m in msgs:
        if (m.role == "system" and not m.is_summary) or m.pinned:
            assert any(o is m for o in out), f"lost {m.role} pinned={m.pinned}"
    assert sum(1 for m in out if m.is_summary) <= max(1, sum(1 for m in msgs if m.is_summary))


@PROPERTY_SETTINGS
@given(conversations(), budgets)
def test_smart_truncate_properties_r2_2(msgs, budget):
    snapshot = copy.deepcopy(msgs)
    out = CompactUtils.smart_truncate(msgs, budget)
    event(f"dropped={len(out) < len(msgs)}")
    assert msgs == snapshot
    assert all(any(o is m for m in msgs) for o in out)  # a subsequence, nothing invented
    positions = [next(i for i, m in enumerate(msgs) if m is o) for o in out]
    assert positions == sorted(positions)
    assert_core_invariants(msgs, out)
    if kept_alone_tokens(msgs) <= budget:
        assert estimate_messages_tokens(out) <= budget


# A usable summary half the time; otherwise every way a compaction LLM can fail.
REPLIES = st.one_of(
    texts(2_000),
    texts(2_000),
    texts(2_000),
    texts(2_000),
    texts(2_000),
    st.sampled_from(["", "   ", "\n"]),
    st.just(LLMUnavailable("down")),
    st.just(ValueError("bad")),
    st.just(Hang()),
    st.just(ChatMessage(role="assistant", content=None, tool_calls=[ToolCall("x", "f", "{}")])),
)


@PROPERTY_SETTINGS
@given(conversations(), budgets, REPLIES, st.integers(0, 6))
async def test_llm_compact_properties_r2_3(msgs, budget, reply, keep_recent):
    snapshot = copy.deepcopy(msgs)
    llm = FakeLLM(default=reply)
    result = await CompactUtils.llm_compact(msgs, llm, budget, keep_recent, timeout=0.01)
    assert msgs == snapshot
    out = result.messages
    event(f"strategy={result.strategy}")
    assert_core_invariants(msgs, out)
    assert len(llm.calls) == result.summary_calls
    if kept_alone_tokens(msgs) <= budget:
        assert result.tokens_after == estimate_messages_tokens(out) <= budget
    if result.strategy == "llm":
        assert sum(1 for m in out if m.is_summary) == 1
        # RF.2: told its cap on every call, and never over it, whatever the reply.
        summary = next(m for m in out if m.is_summary)
        assert result.summary_tokens == estimate_tokens(summary.content) <= result.summary_cap
        assert all(0 < c.opts["max_tokens"] <= result.summary_cap for c in llm.calls)
    assert (result.error is not None) <= (result.strategy == "truncate")


@PROPERTY_SETTINGS
@given(conversations(), budgets, REPLIES, st.booleans(), st.integers(100, 2_000))
async def test_guard_properties_r3(msgs, budget, reply, with_llm, max_chars):
    snapshot = copy.deepcopy(msgs)
    llm = FakeLLM(default=reply) if with_llm else None
    guard = ContextGuard(llm, budget=budget, max_message_chars=max_chars, compact_timeout=0.01)
    out = await guard.check_and_compact(msgs, hint="react_iteration")  # never raises
    event(f"strategy={guard.last.strategy}, cut={guard.last.oversized_cut > 0}")
    assert msgs == snapshot
    assert problems(out) == []
    systems = [m for m in msgs if m.role == "system" and not m.is_summary]
    queries = [m for m in msgs if m.pinned and not m.injected]
    assert len([m for m in out if m.role == "system" and not m.is_summary]) == len(systems)
    assert len([m for m in out if m.pinned and not m.injected]) == len(queries)  # RR.3
    text_limit = max_chars + len("\n[Truncated]")
    # R3.2 limits what the user and the tools sent; a summary and a masking stub are the
    # guard's own short texts (a stub can outgrow a limit of a few hundred characters).
    originals = [
        m for m in out if isinstance(m.content, str) and not m.is_summary and not is_masked(m)
    ]
    assert all(len(m.text()) <= text_limit for m in originals)
    if out is msgs:
        assert guard.last.strategy == "none"
        assert estimate_messages_tokens(msgs) <= budget
    system_tokens = estimate_messages_tokens([m for m in msgs if m.role == "system"])
    query_tokens = estimate_messages_tokens(queries)
    fits = kept_alone_tokens(msgs) <= budget or (
        system_tokens <= budget // 2 and query_tokens <= budget // 2
    )
    if fits and all(len(m.text()) <= max_chars for m in msgs):
        assert estimate_messages_tokens(out) <= budget
