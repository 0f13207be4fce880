"""Summary fact check: dropped numbers, identifiers, URLs and paths come back as Key facts."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextmgmt.core.factcheck import (
    KEY_FACTS_LABEL,
    append_key_facts,
    extract_facts,
    is_present,
    missing_facts,
    rank_by_distinctiveness,
)
from contextmgmt.core.factscan import normalise
from contextmgmt.core.tokens import N_CLASSES, estimate_tokens, use_weights

from .fact_texts import SCAN_PIECES, TOKENS


def test_ranking_prefers_kind_then_repetition_then_recency():
    facts = extract_facts(["price 1234.5", "ref AB-12 and 9999.9", "ref AB-12 again"])
    assert [f.text for f in facts] == ["AB-12", "9999.9", "1234.5"]


@pytest.mark.parametrize(
    ("summary", "present"),
    [
        ("Total 1249.90 paid.", True),  # thousands separator and currency ignored
        ("Total 1,249.90 paid.", True),
        ("TOTAL $1,249.90", True),
        ("Total 1249.9 paid.", False),  # a different number
        ("Paid 51,249.90.", False),  # the fact is not a whole token here
    ],
)
def test_presence_is_normalised_but_whole_token(summary, present):
    assert (missing_facts(summary, ["It costs $1,249.90."]) == []) is present


def test_key_facts_line_fits_its_allowance_and_counts_what_is_missing():
    sources = [f"order ORD-{10000 + i} shipped" for i in range(40)]
    text, (missing, appended) = append_key_facts("Orders shipped.", sources, max_tokens=30)
    assert missing == 40
    assert 0 < appended < 40
    line = text[len("Orders shipped.") :]
    assert line.startswith(f"\n\n{KEY_FACTS_LABEL} ORD-10039; ORD-10038")  # newest first
    assert estimate_tokens(line) <= 30
    assert line.count("ORD-") == appended


def test_nothing_missing_means_nothing_appended():
    assert append_key_facts("Ref AB-12.", ["ref AB-12"]) == ("Ref AB-12.", (0, 0))


def test_zero_allowance_appends_nothing_but_still_counts():
    assert append_key_facts("x", ["ref AB-12"], max_tokens=0) == ("x", (1, 0))


# --- speed: one scan, dictionary look-ups; same answers as the per-fact regex ---------------


def _reference_present(fact: str, summary: str) -> bool:
    """The per-fact regex this module used to build (kept here as the specification)."""
    norm = normalise(summary)
    needle = normalise(fact)
    if needle[:1] in "$€£¥+-" or needle.endswith("%"):
        needle = needle.lstrip("$€£¥+-").rstrip("%") or needle
    if re.search(r"(?<![\w])" + re.escape(needle) + r"(?![\w])", norm):
        return True
    return not needle[:1].isalnum() and not needle[-1:].isalnum() and needle in norm


@settings(max_examples=300, deadline=None)
@given(
    fact=st.sampled_from(["1234.5", "AB-12", "$1,234.5", "12%", "/srv/a.py", "v1.2.3", "ab"]),
    pieces=st.lists(st.sampled_from([*TOKENS, " ", ".", "_", "-", "中", "\n"]), max_size=12),
)
def test_presence_matches_the_per_fact_regex_rs_3(fact, pieces):
    summary = "".join(pieces)
    assert is_present(fact, summary) is _reference_present(fact, summary)


def test_key_facts_prefer_the_one_of_a_kind_over_templated_values_rf_5():
    sources = [
        "The invoice number is INV-2024-0042 and the dashboard is https://d.example.com/x1.",
        *(f"probe {i}: host 10.1.{i}.{i + 3} answered in {i + 100}.5 ms" for i in range(30)),
    ]
    text, (missing, appended) = append_key_facts("Probes ran.", sources, max_tokens=30)
    line = text.split(KEY_FACTS_LABEL, 1)[1]
    assert line.split("; ")[:2] == [" https://d.example.com/x1", "INV-2024-0042"]
    assert missing > appended >= 2


def test_rv1_the_check_names_the_facts_it_found_missing_and_those_it_appended():
    """What the opened divider shows: the lists behind the counts."""
    from contextmgmt.core.factcheck import check_key_facts

    sources = ["The budget is 4,200 EUR and the host is db-17.", "Deploy on 2026-03-14."]
    checked = check_key_facts("The user plans a deploy.", sources, max_tokens=12)
    text, (missing, appended) = append_key_facts("The user plans a deploy.", sources, max_tokens=12)
    assert checked.text == text
    assert (len(checked.missing), len(checked.appended)) == (missing, appended)
    assert {"4,200 EUR", "db-17", "2026-03-14"} <= set(checked.missing)
    assert checked.appended and set(checked.appended) <= set(checked.missing)
    assert all(fact in text for fact in checked.appended)
    assert len(checked.appended) < len(checked.missing)  # 12 tokens hold only some


@settings(max_examples=200, deadline=None)
@given(
    sources=st.lists(
        st.lists(st.sampled_from([*SCAN_PIECES, " order ORD-1", " 10.0.0.1", " 10.0.0.2"])).map(
            "".join
        ),
        max_size=6,
    ),
    summary=st.lists(st.sampled_from(SCAN_PIECES), max_size=8).map("".join),
)
def test_key_facts_follow_the_distinctiveness_ranking_of_the_missing_facts(sources, summary):
    ranked = [f.text for f in rank_by_distinctiveness(missing_facts(summary, sources))]
    text, (missing, appended) = append_key_facts(summary, sources, max_tokens=10_000)
    assert missing == len(ranked)
    if appended:
        assert text.split(f"\n\n{KEY_FACTS_LABEL} ", 1)[1] == "; ".join(ranked)


@settings(max_examples=400, deadline=None)
@given(
    needle=st.lists(
        st.sampled_from([*TOKENS, " ", ".", "_", "-", "中", "é"]), min_size=1, max_size=5
    )
    .map("".join)
    .filter(str.strip),
    pieces=st.lists(st.sampled_from([*TOKENS, " ", ".", "_", "-", "中", "é", "\n"]), max_size=14),
)
def test_rf_12_presence_by_the_summary_read_once_is_the_whole_token_search(needle, pieces):
    """RF.12: the check reads the summary once (its word runs as a set) and searches the
    text only for needles all of whose runs it holds; the answer is the one a whole-token
    search of the text for each needle gives (the reference, kept here)."""
    from contextmgmt.core import factcheck

    text = normalise("".join(pieces))
    needle = normalise(needle)
    reference = needle in text and factcheck._whole_token_in(text, needle)
    kept = factcheck.PRESENCE_BY_RUNS_CHARS
    try:
        for threshold in (0, kept):  # by the summary's runs, and the direct search
            factcheck.PRESENCE_BY_RUNS_CHARS = threshold
            assert factcheck._Presence(text).has(needle) == reference
    finally:
        factcheck.PRESENCE_BY_RUNS_CHARS = kept


def _greedy_line(missing, max_tokens):
    """The Key-facts line's filling as specified: each missing fact in rank order, its
    estimate counted, taken when it fits (the reference, kept here)."""
    prefix, separator = f"\n\n{KEY_FACTS_LABEL} ", "; "
    used = estimate_tokens(prefix)
    chosen = []
    for fact in missing:
        cost = estimate_tokens(fact + separator) + 1
        if used + cost > max_tokens:
            if used >= max_tokens - 2:
                break
            continue
        chosen.append(fact)
        used += cost
    while chosen and estimate_tokens(prefix + separator.join(chosen)) > max_tokens:
        chosen.pop()
    return chosen


_FACT_PIECES = [
    *["ORD-", "7", "42", "2027", "年", "3月", "日", "Straße", "улица", "東京", "·", "€", " "],
    *["Ω", "ก", "ሀ", "한", "😀", "→", "\t", "\u00a0", "\n", "x", "Q", '"', "é"],
]


@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(
        st.lists(st.sampled_from(_FACT_PIECES), min_size=1, max_size=8).map("".join),
        max_size=40,
    ),
    max_tokens=st.integers(min_value=0, max_value=80),
    weights=st.one_of(
        st.none(), st.lists(st.floats(0, 4), min_size=N_CLASSES, max_size=N_CLASSES).map(tuple)
    ),
)
def test_rf_12_the_key_facts_line_is_the_greedy_fill_of_the_ranked_facts(
    values, max_tokens, weights
):
    """RF.12: facts that cannot fit are passed over without counting their tokens; the
    line is the one counting every fact would give, under any non-negative weights."""
    from contextmgmt.core.factcheck import check_key_facts

    sources = [f"the value is ORD-{i} and {value}" for i, value in enumerate(values)]
    with use_weights(weights):
        checked = check_key_facts("Nothing.", sources, max_tokens=max_tokens)
        assert checked.appended == _greedy_line(checked.missing, max_tokens)


def test_rf_12_facts_that_cannot_fit_are_not_counted_one_by_one(monkeypatch):
    """RF.12: once the Key-facts line is nearly full, the hundreds of other missing facts
    are not each estimated (a bound from their length says they do not fit)."""
    from contextmgmt.core import factcheck

    sources = [f"order ORD-{100_000 + i} shipped" for i in range(800)]
    cost = estimate_tokens("ORD-100000; ") + 1
    # Room for ten, and three tokens to spare: not one more fits, yet the line is not full.
    max_tokens = estimate_tokens(f"\n\n{KEY_FACTS_LABEL} ") + 10 * cost + 3
    assert cost > 3
    counted = []
    real = factcheck.tokens.estimate_tokens

    def counting(text):
        counted.append(text)
        return real(text)

    monkeypatch.setattr(factcheck.tokens, "estimate_tokens", counting)
    checked = factcheck.check_key_facts("Orders shipped.", sources, max_tokens=max_tokens)
    assert len(checked.missing) == 800
    assert len(checked.appended) == 10
    assert len(counted) < 100
