"""Summarising in rounds (RF.1) and the summariser's cap (RF.2)."""

import re

from contextmgmt.core.compact import CompactUtils
from contextmgmt.core.messages import SUMMARY_PREFIX
from contextmgmt.core.prompts import compact_prompt
from contextmgmt.core.tokens import estimate_messages_tokens, estimate_tokens
from tests.support.fake_llm import FakeLLM

from .builders import assistant, system, user

FACT = re.compile(r"FACT-\d+")


def keeps_every_fact(messages):
    """A summariser that keeps every FACT-n it is shown (and nothing else)."""
    return "Facts: " + ", ".join(dict.fromkeys(FACT.findall(messages[-1].text())))


def recent():
    return [user("recent question"), assistant("recent answer")] * 2


def huge_message(chars=20_000, marker="MIDDLE-MARKER-4242"):
    paragraph = "The build log shows the same warning about deprecated settings again. " * 5
    paragraphs = [paragraph] * (chars // len(paragraph))
    paragraphs[len(paragraphs) // 2] += f" The one thing that matters: {marker}."
    return "\n\n".join(paragraphs)


async def test_a_20k_character_messages_middle_reaches_the_summariser_rf_1():
    msgs = [system(), user(huge_message()), assistant("noted"), *recent()]
    llm = FakeLLM(default=keeps_every_fact)
    result = await CompactUtils.llm_compact(msgs, llm, max_tokens=2_000, window_tokens=3_000)
    assert result.strategy == "llm"
    sent = [c.messages[1].text() for c in llm.calls]
    assert any("MIDDLE-MARKER-4242" in text for text in sent)
    assert not any("omitted" in text for text in sent)
    # Every call fits the compactor's window, and the huge message went in several parts.
    assert all(estimate_messages_tokens(c.messages) <= 3_000 for c in llm.calls)
    assert sum("user (part " in text for text in sent) >= 3
    assert result.summary_rounds >= 2 and result.summary_calls == len(llm.calls)


async def test_rounds_summarise_every_piece_then_fold_and_keep_what_they_saw_rf_1():
    old = []
    for i in range(40):
        old += [user(f"Please note FACT-{1000 + i}. " + "Some context. " * 40), assistant("ok")]
    msgs = [system(), *old, *recent()]
    llm = FakeLLM(default=keeps_every_fact)
    result = await CompactUtils.llm_compact(msgs, llm, max_tokens=3_000, window_tokens=1_500)
    assert result.summary_rounds >= 2
    assert len(llm.calls) > 2
    final = llm.calls[-1].messages[1].text()
    assert final.count(f"system: {SUMMARY_PREFIX}") >= 2  # partial summaries, folded
    summary = next(m for m in result.messages if m.is_summary).text()
    assert set(FACT.findall(summary)) == {f"FACT-{1000 + i}" for i in range(40)}


async def test_the_result_names_exactly_the_summarised_messages_rf_1():
    earlier = system(f"{SUMMARY_PREFIX}\nearlier facts")
    earlier.metadata["summarized_count"] = 7
    old = [user("q" * 3_000), assistant("a" * 3_000), user("r" * 3_000), assistant("b" * 300)]
    msgs = [system(), earlier, *old, *recent()]
    result = await CompactUtils.llm_compact(msgs, FakeLLM(default="s"), max_tokens=2_000)
    assert [id(m) for m in result.summarized] == [id(m) for m in [earlier, *old]]
    assert result.summarized_count == 7 + len(old)


async def test_the_cap_is_in_the_prompt_and_on_the_call_rf_2():
    msgs = [system(), user("x" * 4_000), assistant("y" * 4_000), *recent()]
    llm = FakeLLM(default="short")
    result = await CompactUtils.llm_compact(msgs, llm, max_tokens=2_000)
    (call,) = llm.calls
    cap = call.opts["max_tokens"]
    assert 0 < cap <= result.summary_cap <= 2_000 // 4
    assert call.messages[0].content == compact_prompt("general", cap)
    assert f"at most {cap} tokens" in call.messages[0].content


async def test_a_reply_over_its_cap_is_cut_back_at_a_line_and_counted_rf_2():
    lines = "\n".join(f"- line {i}: {'detail ' * 8}" for i in range(400))
    msgs = [system(), user("x" * 4_000), assistant("y" * 4_000), *recent()]
    result = await CompactUtils.llm_compact(msgs, FakeLLM(default=lines), max_tokens=2_000)
    summary = next(m for m in result.messages if m.is_summary).text()
    assert result.summary_overshoots == 1
    assert estimate_tokens(summary) == result.summary_tokens <= result.summary_cap
    body = summary.split("\n", 1)[1].split("\n\nKey facts:")[0]
    assert body.endswith("\n…") and all(
        line.startswith("- line ") and line.endswith("detail ") for line in body.split("\n")[:-1]
    )


async def test_pieces_are_sized_in_the_summarisers_own_weights_rk_2():
    # A summariser whose tokenizer counts three times what the caller's does: every call
    # must fit its window counted its way, while the summary's cap stays in the caller's.
    from contextmgmt.core.tokens import BASE_WEIGHTS, use_weights

    dear = tuple(3 * w for w in BASE_WEIGHTS)
    old = []
    for i in range(30):
        old += [user(f"Please note FACT-{1000 + i}. " + "Some context. " * 40), assistant("ok")]
    msgs = [system(), *old, *recent()]

    plain = FakeLLM(default=keeps_every_fact)
    await CompactUtils.llm_compact(msgs, plain, max_tokens=3_000, window_tokens=6_000)
    summariser = FakeLLM(default=keeps_every_fact)
    summariser.token_weights = dear
    result = await CompactUtils.llm_compact(msgs, summariser, max_tokens=3_000, window_tokens=6_000)

    with use_weights(dear):
        sent = [estimate_messages_tokens(c.messages) for c in summariser.calls]
    assert max(sent) <= 6_000
    assert len(summariser.calls) > len(plain.calls)
    assert result.tokens_after <= 3_000  # the result is still counted the caller's way
    summary = next(m for m in result.messages if m.is_summary).text()
    assert set(FACT.findall(summary)) == {f"FACT-{1000 + i}" for i in range(30)}


async def test_a_summariser_with_a_small_window_gets_calls_that_fit_it_rk_2():
    # The main model's budget is large, the summarising model's input window small: no call
    # may send more than the summariser takes, and every fact still reaches the summary.
    old = []
    for i in range(60):
        old += [user(f"Please note FACT-{1000 + i}. " + "Some context. " * 40), assistant("ok")]
    msgs = [system(), *old, *recent()]
    wide = FakeLLM(default=keeps_every_fact)
    await CompactUtils.llm_compact(msgs, wide, max_tokens=4_000)
    assert max(estimate_messages_tokens(c.messages) for c in wide.calls) > 1_500

    narrow = FakeLLM(default=keeps_every_fact)
    narrow.input_window = 1_500
    result = await CompactUtils.llm_compact(msgs, narrow, max_tokens=4_000)
    assert all(estimate_messages_tokens(c.messages) <= 1_500 for c in narrow.calls)
    assert result.summary_rounds >= 2
    summary = next(m for m in result.messages if m.is_summary).text()
    assert set(FACT.findall(summary)) == {f"FACT-{1000 + i}" for i in range(60)}
