"""The fact scan: each kind of fact is found, log template lines are passed over, and the
combined pattern finds what each kind alone would, in priority order."""

import re
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextmgmt.core import factpatterns, factscan
from contextmgmt.core.factcheck import extract_facts

from .fact_texts import KIND_EXAMPLES, SCAN_PIECES


@pytest.mark.parametrize(("text", "fact", "kind"), KIND_EXAMPLES)
def test_extracts_each_kind_of_fact(text, fact, kind):
    facts = {f.text: f.kind for f in extract_facts([text])}
    assert facts == {fact: kind}


def test_small_plain_integers_and_words_are_not_facts():
    assert extract_facts(["I have 3 cats and 12 dogs, and/or km/h, ok?"]) == []


def test_numbers_inside_urls_and_identifiers_are_not_extracted_again():
    facts = [f.text for f in extract_facts(["https://x.io/items/98765 and INV-55555"])]
    assert facts == ["https://x.io/items/98765", "INV-55555"]


def test_log_template_lines_are_not_fact_checked_but_a_unique_line_in_the_log_is_rf_5():
    log = "\n".join(
        f"2026-03-0{i % 9 + 1}T10:0{i % 10}:00Z INFO req={1000 + i} from 10.0.{i}.7 took {i}ms"
        for i in range(40)
    )
    log += "\nERROR payment for ORD-77812 failed: card declined\n" + log
    texts = [f.text for f in extract_facts([log])]
    assert texts == ["ORD-77812"]


def test_lines_repeated_across_messages_are_still_checked():
    facts = extract_facts([f"order ORD-{i} shipped" for i in range(100, 140)])
    assert len(facts) == 40


def _reference_scan(text: str) -> list[tuple[str, str]]:
    """Every kind tried at every place, in priority order: one alternation, no branch by the
    first character, no guard, no kind left out for a character the text lacks."""
    kinds = tuple(kind for kind, _, _ in factpatterns._PATTERNS)
    pattern = re.compile(r"\W(?:" + factpatterns._alternatives(kinds, "o") + ")")
    found = []
    for match in pattern.finditer(" " + text):
        group = match.lastgroup
        value = match.group(group)
        found.append((group.removesuffix("_o"), value))
    return found


@settings(max_examples=1000, deadline=None)
@given(pieces=st.lists(st.sampled_from(SCAN_PIECES), max_size=10))
def test_the_combined_scan_finds_what_each_kind_in_priority_order_finds_rs_3(pieces):
    _assert_scan_matches_the_reference("".join(pieces))


@pytest.mark.parametrize(
    "text",
    [
        *(text for text, _, _ in KIND_EXAMPLES),
        " ".join(text for text, _, _ in KIND_EXAMPLES),
        "See https://x.io/a, ops@x.io; C:\\tmp\\a.txt and `run()` with LOG_LEVEL=debug.",
        "Order ORD-41 weighs 12.5 kg, €1,200.50 paid 2026-03-01T10:00:00Z; v2.0.1 at 9:30 UTC",
        "josé@exemple.fr écrit à 10:30; путь ~/data/x.csv и 500 рублей; 交付 8000 元",
        # All ASCII, with white space to Unicode that the ASCII classes do not count as such.
        *(f"see https://x.io/a{c}b and max=1{c}x, ab{c}c9" for c in "\x1c\x1d\x1e\x1f"),
        # A lone surrogate (JSON can carry one) in a fact and in a repeated log line.
        "id \ud800-42x at 12:30\n" + "\n".join(f"\ud800 req {i} took {i} ms" for i in range(4)),
    ],
)
def test_the_combined_scan_finds_every_example_the_reference_finds_rs_3(text):
    _assert_scan_matches_the_reference(text)


def _assert_scan_matches_the_reference(text: str) -> None:
    # The combined pattern alone (the language tables are tested on their own).
    scanned = [(kind, value) for kind, value, *_ in factscan._scan([text], languages=False)[0]]
    reference = [
        (kind, value) for kind, value in _reference_scan(factscan.without_repeated_lines(text))
    ]
    # _scan trims punctuation after URLs, paths and settings and blanks in code spans.
    trimmed = []
    for kind, value in reference:
        if kind == "url":
            value = value.rstrip(".,;:!?)]}>")
        elif kind in ("path", "setting"):
            value = value.rstrip(".,;:!?)]}>") or value
        elif kind == "code":
            value = value.strip()
            if not value:
                continue
        trimmed.append((kind, value))
    assert scanned == trimmed


# Pieces of every script and notation the tables read, for texts scanned together.
_MIXED_PIECES = [
    *SCAN_PIECES,
    " 7 décembre 2026",
    " le 14 au lieu du 12",
    " 7 de diciembre de 2026",
    " 184 500,00 ₽",
    " 1\u202f234,56 €",
    " ТП-2026-0412",
    " Иван Петров",
    "注文番号はJP-20261207-0042です。",
    "东京都",
    "2027年3月15日",
    " Musterstraße 12, 10115 Berlin",
    " +49 30 901820",
    "\n",
    " ",
]


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(st.lists(st.sampled_from(_MIXED_PIECES), max_size=8).map("".join)))
def test_texts_scanned_together_give_what_each_alone_gives_rs_3(texts):
    together = factscan.facts_in_texts(texts)
    assert together == [factscan.facts_in(text) for text in texts]


# Long runs of what the patterns repeat (digits, separators, capitals, letters, CJK), and
# near misses of every format: a pattern that backtracks catastrophically would take
# minutes on these; the generous deadline separates that from a linear scan.
_ADVERSARIAL = ["1", "1 ", "1.", "1,", "1'", "1\u202f", "A", "Ab ", "а", "Я", "年", "月", "-",
                "/", ". ", "de ", "rue ", "ул. ", "丸の内", "9-", "0", " ", "\u00a0"]  # fmt: skip


@settings(max_examples=25, deadline=timedelta(seconds=20))
@given(
    piece=st.lists(st.sampled_from(_ADVERSARIAL), min_size=1, max_size=4).map("".join),
    tail=st.sampled_from(["", "x", "€", "号", " Street", "!", "年"]),
)
def test_no_pattern_backtracks_catastrophically_on_adversarial_input_rf_12(piece, tail):
    text = piece * (20_000 // len(piece)) + tail
    factscan.facts_in_texts([text, text[: len(text) // 2]])
