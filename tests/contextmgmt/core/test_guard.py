"""ContextGuard (SPEC R3.1–R3.8, RP): the per-iteration enforcer."""

import copy

import pytest

from contextmgmt.core.guard import TRUNCATED_SUFFIX, ContextGuard, apply_pinned_cap
from contextmgmt.core.llm import LLMBadResponse, LLMResult, Usage
from contextmgmt.core.messages import SUMMARY_PREFIX, ChatMessage
from contextmgmt.core.prompts import compact_prompt
from contextmgmt.core.tokens import estimate_message_tokens, estimate_messages_tokens
from tests.support.fake_llm import FakeLLM, Hang

from .builders import IMAGE_PART, assistant, chat_history, problems, system, tool_round, user


def test_defaults_match_the_design_r3():
    guard = ContextGuard()
    assert (guard.compact_llm, guard.budget, guard.max_message_chars) == (None, 60_000, 50_000)
    assert guard.last is None and guard.usage == Usage()


async def test_within_budget_returns_the_same_list_object_r3_3():
    guard = ContextGuard(budget=10_000)
    msgs = chat_history(5)
    out = await guard.check_and_compact(msgs)
    assert out is msgs
    assert guard.last.strategy == "none"
    total = estimate_messages_tokens(msgs)
    assert (guard.last.tokens_before, guard.last.tokens_after) == (total, total)
    assert guard.last.messages is msgs


async def test_budget_argument_overrides_the_guard_default_r5_3():
    guard = ContextGuard(budget=10_000)
    msgs = chat_history(5)
    total = estimate_messages_tokens(msgs)
    assert await guard.check_and_compact(msgs, budget=total) is msgs
    out = await guard.check_and_compact(msgs, budget=total - 1)
    assert out is not msgs and guard.last.strategy == "truncate"


async def test_oversized_string_message_is_cut_with_truncated_suffix_r3_2():
    guard = ContextGuard(budget=1_000_000, max_message_chars=50_000)
    big = user("x" * 60_000)
    msgs = [system(), big, assistant("Long.")]
    snapshot = copy.deepcopy(msgs)
    out = await guard.check_and_compact(msgs)
    assert out[1].content == "x" * 50_000 + TRUNCATED_SUFFIX
    assert out[0] is msgs[0] and out[2] is msgs[2]
    assert msgs == snapshot  # the caller's message is untouched
    assert guard.last.strategy == "none" and guard.last.oversized_cut == 1


async def test_an_oversized_tool_result_says_how_to_read_on_rt_1():
    """A runaway result is cut within the same length, and ends with how to read on from
    where it stops (recall with its id and a start), not with a bare [Truncated]."""
    guard = ContextGuard(budget=1_000_000, max_message_chars=50_000)
    big = ChatMessage(role="tool", content="x" * 60_000, tool_call_id="c1")
    msgs = [system(), user("read it"), *tool_round("c1", "read", "{}", "")[:1], big]
    snapshot = copy.deepcopy(msgs)
    out = await guard.check_and_compact(msgs)
    text = out[-1].content
    assert len(text) <= 50_000 + len(TRUNCATED_SUFFIX) and text.startswith("x" * 49_000)
    shown = out[-1].metadata["cut"]["shown"]
    assert text.endswith(
        f"[Cut to fit the context: characters 0–{shown:,} of 60,000 of this result shown; "
        f'read on with recall(id="c1", start={shown})]'
    )
    assert out[-1].tool_call_id == "c1"
    assert out[:-1] == msgs[:-1]
    assert msgs == snapshot  # the caller's message is untouched
    assert guard.last.strategy == "none" and guard.last.oversized_cut == 1


async def test_a_limit_too_small_for_the_read_on_line_cuts_the_result_plainly_r3_2():
    """The length limit holds even where the read-on line alone would not fit in it."""
    guard = ContextGuard(budget=1_000_000, max_message_chars=100)
    big = ChatMessage(role="tool", content="0" * 113, tool_call_id="call_1")
    msgs = [system(), user("read it"), *tool_round("call_1", "search", "{}", "")[:1], big]
    out = await guard.check_and_compact(msgs)
    assert out[-1].content == "0" * 100 + TRUNCATED_SUFFIX
    assert out[-1].tool_call_id == "call_1"


async def test_oversized_text_part_is_cut_and_images_kept_r3_2():
    guard = ContextGuard(budget=1_000_000, max_message_chars=100)
    msg = ChatMessage(role="user", content=[{"type": "text", "text": "y" * 150}, IMAGE_PART])
    out = await guard.check_and_compact([msg])
    assert out[0].content == [{"type": "text", "text": "y" * 100 + TRUNCATED_SUFFIX}, IMAGE_PART]
    assert msg.content[0]["text"] == "y" * 150


async def test_exactly_max_chars_is_not_cut_r3_2():
    guard = ContextGuard(budget=1_000_000, max_message_chars=100)
    msgs = [user("z" * 100)]
    assert await guard.check_and_compact(msgs) is msgs


async def test_over_budget_without_llm_smart_truncates_r3_4():
    guard = ContextGuard(budget=300)
    msgs = [*chat_history(8), user("now what?", pinned=True)]
    out = await guard.check_and_compact(msgs)
    assert guard.last.strategy == "truncate"
    assert out[0] is msgs[0] and out[-1] is msgs[-1]
    assert estimate_messages_tokens(out) <= 300
    assert problems(out) == []
    assert (guard.last.original_count, guard.last.compacted_count) == (len(msgs), len(out))


async def test_over_budget_with_llm_compacts_with_the_hint_prompt_r3_4_r3_5():
    llm = FakeLLM(default="Earlier: eight questions answered.")
    guard = ContextGuard(compact_llm=llm, budget=400)
    msgs = [*chat_history(8), user("now what?", pinned=True)]
    out = await guard.check_and_compact(msgs, hint="react_iteration")
    cap = llm.calls[0].opts["max_tokens"]
    assert llm.calls[0].messages[0].content == compact_prompt("react_iteration", cap)
    assert guard.last.strategy == "llm"
    assert out[1].content.startswith(SUMMARY_PREFIX)
    assert out[-1] is msgs[-1]
    assert estimate_messages_tokens(out) <= 400


async def test_usage_of_compaction_calls_accumulates_ru_2():
    class MeteredLLM:
        model_name = "metered"

        async def chat(self, messages, **opts):
            return LLMResult(ChatMessage(role="assistant", content="summary"), Usage(100, 7))

    guard = ContextGuard(compact_llm=MeteredLLM(), budget=400)
    msgs = chat_history(8)
    await guard.check_and_compact(msgs)
    await guard.check_and_compact(msgs)
    await guard.check_and_compact(chat_history(1))  # within budget: no call
    assert guard.usage == Usage(200, 14)
    assert guard.compactions == 2


@pytest.mark.parametrize(
    "failure",
    [
        LLMBadResponse("not json"),
        ValueError("weird"),
        TimeoutError(),
        Hang(),
        "",
        "   ",
        "\n\n",
    ],
    ids=["llm-error", "any-exception", "timeout-error", "hang", "empty", "spaces", "newlines"],
)
async def test_llm_failure_falls_back_silently_and_is_recorded_r3_7(failure):
    llm = FakeLLM().enqueue(failure)
    guard = ContextGuard(compact_llm=llm, budget=300, compact_timeout=0.05)
    msgs = [*chat_history(8), user("now what?", pinned=True)]
    out = await guard.check_and_compact(msgs)
    assert guard.last.strategy == "truncate"
    assert guard.last.error
    assert out[-1] is msgs[-1]
    assert estimate_messages_tokens(out) <= 300


async def test_garbage_summary_is_used_but_key_facts_survive():
    llm = FakeLLM(default="lorem ipsum dolor sit amet")
    guard = ContextGuard(compact_llm=llm, budget=2_000)
    msgs = [system(), user("Deploy build 7f3a9c2 to eu-west-1 at 14:30."), assistant("ok")]
    msgs += chat_history(4, filler=2000)[1:]
    out = await guard.check_and_compact(msgs)
    summary = next(m for m in out if m.is_summary)
    assert summary.content.endswith("Key facts: 7f3a9c2; eu-west-1; 14:30")
    assert guard.last.facts_appended == 3


def query_and_injections(injected_sizes, query_size=40):
    """system, injected follow-ups (pinned, injected), then the current query (pinned)."""
    msgs = [system("s" * 36)]
    for i, size in enumerate(injected_sizes):
        msgs.append(user(f"{i}".ljust(size, "i"), pinned=True, injected=True))
        msgs.append(assistant("noted"))
    msgs.append(user("q" * query_size, pinned=True))
    return msgs


def test_pinned_cap_unpins_injected_oldest_first_r3_8():
    msgs = query_and_injections([400, 400, 400])  # each injected: 113 tokens; query 15
    snapshot = copy.deepcopy(msgs)
    out, unpinned = apply_pinned_cap(msgs, budget=400)  # cap 200; pinned 354
    assert unpinned == 2
    assert [m.pinned for m in out if m.role == "user"] == [False, False, True, True]
    assert out[1].injected and not out[1].pinned and out[1] is not msgs[1]
    assert out[5] is msgs[5] and out[-1] is msgs[-1]
    assert msgs == snapshot and all(m.pinned for m in msgs if m.role == "user")


def test_pinned_cap_never_unpins_the_current_query_r3_8():
    msgs = query_and_injections([40], query_size=4000)
    out, unpinned = apply_pinned_cap(msgs, budget=400)
    assert unpinned == 1
    assert out[-1] is msgs[-1] and out[-1].pinned


def test_pinned_cap_leaves_pinned_within_half_the_budget_alone_r3_8():
    msgs = query_and_injections([400])
    pinned = estimate_message_tokens(msgs[1]) + estimate_message_tokens(msgs[-1])
    out, unpinned = apply_pinned_cap(msgs, budget=2 * pinned)  # exactly at the 50% cap
    assert out is msgs and unpinned == 0
    out, unpinned = apply_pinned_cap(msgs, budget=2 * pinned - 2)  # one token over it
    assert unpinned == 1


async def test_guard_applies_the_pinned_cap_before_truncating_rp_2():
    guard = ContextGuard(budget=240)
    msgs = query_and_injections([400, 400, 400])  # 383 tokens, 354 of them pinned
    out = await guard.check_and_compact(msgs)
    # Two oldest injections unpinned (cap 120) and then truncated away; the newest and the
    # query stay pinned. Without the cap all four pinned messages would be kept.
    assert [m.content[0] for m in out if m.role == "user"] == ["2", "q"]
    assert estimate_messages_tokens(out) <= 240


async def test_repeated_checks_reuse_cached_estimates():
    guard = ContextGuard(budget=100_000)
    msgs = chat_history(50)
    await guard.check_and_compact(msgs)
    assert all(m._token_cache is not None for m in msgs)
    msgs[3].content = "changed " * 2000  # reassigned content is re-estimated
    await guard.check_and_compact(msgs)
    assert guard.last.tokens_before == estimate_messages_tokens(copy.deepcopy(msgs))


async def test_nothing_but_system_and_the_query_over_budget_is_sent_as_it_is_rf_3():
    """A query bigger than the budget leaves nothing to compact: no compaction is counted
    and no LLM is asked."""
    fake = FakeLLM()
    guard = ContextGuard(compact_llm=fake, budget=100)
    msgs = [system(), user("a long paste " * 200, pinned=True)]
    out = await guard.check_and_compact(msgs)
    assert out == msgs and guard.last.strategy == "none" and guard.compactions == 0
    assert fake.calls == []


async def test_cached_messages_with_parts_and_tool_calls_follow_edits_r3_2():
    # Estimates of part lists and tool-call messages are cached too; a part or a tool call
    # added, removed or replaced afterwards is still seen by the in-budget pass.
    guard = ContextGuard(budget=100_000, max_message_chars=100)
    msgs = [user("hi"), *tool_round("c1", "search", '{"q": "x"}', "result"), assistant("done")]
    parts = [{"type": "text", "text": "short"}, IMAGE_PART]
    msgs.append(ChatMessage(role="user", content=parts))
    await guard.check_and_compact(msgs)
    assert all(m._token_cache is not None for m in msgs)

    parts.append({"type": "text", "text": "x" * 150})  # an over-long part, added in place
    msgs[1].tool_calls.append(msgs[1].tool_calls[0])  # a second tool call, in place
    out = await guard.check_and_compact(msgs)
    assert out is not msgs
    assert out[-1].content[-1]["text"] == "x" * 100 + TRUNCATED_SUFFIX
    assert guard.last.tokens_before == estimate_messages_tokens(copy.deepcopy(msgs))


async def test_a_yielding_pin_mid_run_is_summarised_with_its_facts_not_dropped_rv_2():
    """The 5,000-token case in the engine: a pinned 5,500-character paste (the engine marks
    history pins yieldable) and its answer, the next question and a tool round. The pin
    yields to the cap and reaches the summariser, though it is among the newest messages;
    the next call carries its facts."""
    facts = ("DE89370400440532013000", "OPS-7731", "2026-03-14")
    paste = f"账户 IBAN {facts[0]}，工单 {facts[1]}，截止 {facts[2]}。\n"
    while len(paste) < 5_500:
        paste += "仓库报告列出了货架、木箱和托盘，夜班清点两次并与送货单核对。\n"
    paste = paste[:5_500]
    pinned = ChatMessage(role="user", content=paste, pinned=True, injected=True)
    query = user("And the deadline?", pinned=True)
    msgs = [
        system("Be brief."),
        pinned,
        assistant("Noted."),
        query,
        *tool_round("c1", "calculator", '{"expression": "2+2"}', "4 " * 1_500),
    ]

    def summariser(messages):
        shown = messages[-1].text()
        return "Report pasted. " + "; ".join(f for f in facts if f in shown)

    guard = ContextGuard(compact_llm=FakeLLM(default=summariser), budget=5_000)
    out = await guard.check_and_compact(msgs, hint="react_iteration")
    assert guard.last.strategy == "llm"
    assert paste in [m.text() for m in guard.last.summarized]
    (summary,) = [m for m in out if m.is_summary]
    assert all(fact in summary.text() for fact in facts)
    assert query in out and problems(out) == []
    assert estimate_messages_tokens(out) <= 5_000


def _tool_heavy(rounds: int, chars: int) -> list[ChatMessage]:
    msgs = [system("Use the tools."), user("Read the logs.", pinned=True)]
    for i in range(rounds):
        msgs += tool_round(
            f"c{i}", "read_log", f'{{"n": {i}}}', f"log {i} fact-{i}\n" + "x " * chars
        )
    return msgs


async def test_old_tool_results_are_masked_before_any_summary_rm_1():
    """Over budget with old tool results: every result older than the newest rounds
    becomes a stub; no summariser is asked when that fits (strategy "mask")."""
    msgs = _tool_heavy(6, 1_000)
    llm = FakeLLM(default="summary")
    guard = ContextGuard(compact_llm=llm, budget=estimate_messages_tokens(msgs) - 10)
    out = await guard.check_and_compact(msgs)
    assert llm.calls == [] and guard.last.strategy == "mask"
    keep = guard.mask_keep_rounds
    assert [m.call_id for m in guard.last.masked] == [f"c{i}" for i in range(6 - keep)]
    assert problems(out) == [] and estimate_messages_tokens(out) < guard.budget / 2
    assert all(out[-1 - 2 * i] is msgs[-1 - 2 * i] for i in range(keep))  # newest rounds
    again = await guard.check_and_compact(out)
    assert again is out  # the next call finds the same prefix, within budget


async def test_masking_starts_at_half_the_budget_and_only_ever_appends_stubs_rm_3():
    """Under half the budget nothing changes; past it the old results are masked though the
    budget is not reached; a later masking leaves every stub already sent as it was, so
    each call's prefix up to its last stub is the previous call's byte for byte."""
    msgs = _tool_heavy(4, 1_000)
    total = estimate_messages_tokens(msgs)
    guard = ContextGuard(budget=2 * total + 2)
    assert await guard.check_and_compact(msgs) is msgs and guard.last.strategy == "none"
    guard = ContextGuard(budget=2 * total - 2)
    first = await guard.check_and_compact(msgs)
    assert guard.last.strategy == "mask" and guard.compactions == 1
    assert [m.call_id for m in guard.last.masked] == ["c0", "c1"]
    grown = list(first)
    for i in range(4, 9):
        grown += tool_round(f"c{i}", "read_log", f'{{"n": {i}}}', f"log {i}\n" + "x " * 1_000)
        before = list(grown)
        grown = await guard.check_and_compact(grown)
        stubs = [i for i, m in enumerate(before) if m.metadata.get("masked")]
        settled = stubs[-1] + 1
        assert [m.to_openai() for m in grown[:settled]] == [m.to_openai() for m in before[:settled]]
    assert problems(grown) == []
    assert guard.compactions > 1 and estimate_messages_tokens(grown) <= guard.budget


async def test_what_masking_cannot_fit_is_summarised_with_stubs_not_results_rm_1():
    msgs = _tool_heavy(6, 1_000)
    # An earlier exchange too long for the budget beside the stubs: only a summary fits it.
    msgs[1:1] = [user("An earlier question " * 200), assistant("An earlier answer " * 200)]
    llm = FakeLLM(default="summary")
    guard = ContextGuard(compact_llm=llm, budget=700)
    out = await guard.check_and_compact(msgs)
    assert guard.last.strategy == "llm" and guard.last.masked
    shown = llm.calls[0].messages[-1].text()
    # The masked rounds reach the summariser as their stubs, the newest ones whole.
    assert 'read_log({"n": 0}) returned' in shown and "fact-0\nx x" not in shown
    assert problems(out) == [] and estimate_messages_tokens(out) <= 700
