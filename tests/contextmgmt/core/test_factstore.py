"""Facts found when a message is stored (contextmgmt/core/factstore.py):
RF.12, a compaction takes them instead of scanning the text again, and its check comes
out exactly as when it scans; facts that no longer hold for the text or the patterns are
not taken."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextmgmt.core import corrections, factscan, factstore
from contextmgmt.core.factcheck import check_key_facts
from contextmgmt.core.messages import STORED_FACTS, ChatMessage
from contextmgmt.core.summarise import _fit_and_check

from .fact_texts import SCAN_PIECES

FACT_RICH = [
    "Order ORD-4471 costs 12.380,50 € and ships on 14.03.2027.",
    "Das Budget ist jetzt 41.500 €, nicht 38.000 €.",
    "展位号改为 B2-17，对接人是王芳。",
    "Le rendez-vous est le 14, pas le 12, au 12 rue de la Paix.",
    "Call +49 30 901820 or see https://example.com/a and /srv/app/stage.yaml.",
]
sources_strategy = st.lists(
    st.lists(st.sampled_from([*SCAN_PIECES, *FACT_RICH]), max_size=10).map("".join),
    min_size=1,
    max_size=6,
)


def stored(text: str) -> dict:
    """As a database gives them back: through JSON."""
    return json.loads(json.dumps(factstore.stored_facts(text)))


def fresh_caches() -> None:
    factscan.clear_cache()
    corrections.clear_cache()


@settings(max_examples=150, deadline=None)
@given(sources=sources_strategy, summary=st.sampled_from(["", "ORD-4471", "B2-17 41.500 €"]))
def test_rf_12_stored_facts_give_the_check_a_scan_gives(sources, summary):
    """RF.12: the check with the stored facts equals the check that scans every text."""
    fresh_caches()
    scanned = check_key_facts(summary, sources, stated=sources[:1])
    known = factstore.known_facts((text, stored(text)) for text in sources)
    assert set(known) == set(sources)
    fresh_caches()
    taken = check_key_facts(summary, sources, stated=sources[:1], known=known)
    assert (taken.text, taken.missing, taken.appended) == (
        scanned.text,
        scanned.missing,
        scanned.appended,
    )


def test_rf_12_a_check_with_stored_facts_scans_no_text(monkeypatch):
    """RF.12: with every message's facts stored, the compaction's check reads them."""
    known = factstore.known_facts((text, stored(text)) for text in FACT_RICH)
    fresh_caches()

    def no_scan(*args, **kwargs):
        raise AssertionError("a text was scanned again")

    monkeypatch.setattr(factscan, "facts_in_texts", no_scan)
    checked, _ = _fit_and_check("A summary.", 500, FACT_RICH, 100, [], known)
    assert "ORD-4471" in checked.missing


@pytest.mark.parametrize(
    "spoil",
    [
        lambda entry: {**entry, "text": entry["text"] + 1},  # another text (edited)
        lambda entry: {**entry, "scan": "0"},  # other patterns
        lambda entry: {**entry, "facts": [["x"]]},  # not facts
        lambda entry: {**entry, "facts": {**entry["facts"], "start": ["0"]}},  # not a place
        lambda entry: {**entry, "facts": {**entry["facts"], "end": []}},  # columns unequal
        lambda entry: {**entry, "facts": {**entry["facts"], "value": [""] * 4}},  # no value
        lambda entry: {**entry, "cued": None},  # not said whether it holds a cue
        lambda entry: "facts",
    ],
)
def test_stored_facts_that_no_longer_hold_are_not_taken(spoil):
    text = FACT_RICH[0]
    assert factstore.known_facts([(text, spoil(stored(text)))]) == {}


def test_the_summariser_takes_the_facts_messages_carry(monkeypatch):
    """The compaction reads ``metadata["facts"]`` (what the storing layer keeps)."""
    import asyncio

    from contextmgmt.core.llm import LLMResult, Usage
    from contextmgmt.core.summarise import summarise_rounds

    class Terse:
        model_name = "terse"

        async def chat(self, messages, **opts):
            return LLMResult(ChatMessage(role="assistant", content="They talked."), Usage())

    messages = [
        ChatMessage(role="user", content=text, metadata={STORED_FACTS: stored(text)})
        for text in FACT_RICH
    ]
    fresh_caches()
    monkeypatch.setattr(factscan, "facts_in_texts", lambda *a, **k: pytest.fail("scanned"))
    outcome = asyncio.run(summarise_rounds(messages, Terse(), max_summary_tokens=400))
    assert outcome.error is None
    assert "ORD-4471" in outcome.missing_facts


def test_rf_12_stored_facts_without_a_cue_leave_the_text_unread(monkeypatch):
    """RF.12: a stored text holding no correction cue is never read again for
    corrections (whether it holds one was found when it was stored); one that does is."""
    plain = "Order ORD-4471 costs 12.380,50 € and ships on 14.03.2027."
    correcting = "Das Budget ist jetzt 41.500 €, nicht 38.000 €."
    known = factstore.known_facts((text, stored(text)) for text in (plain, correcting))
    assert [known[plain].cued, known[correcting].cued] == [False, True]
    fresh_caches()
    read: list[str] = []
    split = corrections._split

    def recording_split(text, facts):
        read.append(text)
        return split(text, facts)

    monkeypatch.setattr(corrections, "_split", recording_split)
    monkeypatch.setattr(factscan, "facts_in_texts", lambda *a, **k: pytest.fail("scanned"))
    replaced = corrections.superseded([plain, correcting], known)
    assert replaced.replacement("38.000 €") == "41.500 €"
    assert read == [correcting]


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(
        st.lists(st.sampled_from(["1", "234", ",", " ", "\n", "'", "A", "ß", "€", "1.5"]))
        .map("".join)
        .filter(bool),
        min_size=1,
        max_size=6,
    )
)
def test_rf_12_values_worked_out_together_are_what_each_alone_gives(values):
    """RF.12: the keys and shapes of all values worked out in one go (joined) are each
    value's own, whatever the values hold (line breaks, separators next to digits)."""
    placed = [[(0, len(value), "amount", value, 5)] for value in values]
    scanned = factscan.with_occurrences(placed, [False] * len(values))
    keys = [scan.occurrences[0][2] for scan in scanned]
    shapes = [scan.occurrences[0][5] for scan in scanned]
    assert keys == [factscan.normalise(value) for value in values]
    assert shapes == [v.encode("utf-8").translate(factscan._SHAPE_BYTES) for v in values]


def test_rf_12_a_text_stored_twice_is_taken_once():
    text = FACT_RICH[0]
    known = factstore.known_facts([(text, stored(text)), (text, stored(text))])
    assert list(known) == [text]


SPOILS = [
    lambda entry: {**entry, "facts": {**entry["facts"], "start": ["0"]}},
    lambda entry: {**entry, "facts": {**entry["facts"], "end": []}},
    lambda entry: {**entry, "facts": {**entry["facts"], "value": [""] * 4}},
    lambda entry: {**entry, "facts": {**entry["facts"], "weight": [True] * 4}},
    lambda entry: {**entry, "facts": {**entry["facts"], "kind": "date"}},
    lambda entry: {**entry, "text": entry["text"] + 1},
]


@pytest.mark.parametrize("spoil", SPOILS)
def test_rf_12_the_texts_whose_facts_hold_are_taken_beside_one_that_does_not(spoil):
    """RF.12: the columns of all texts are checked together; one text's columns not as
    stored leave that text out and take the others, as when each is looked at alone."""
    first, spoilt, last = FACT_RICH[0], FACT_RICH[1], FACT_RICH[2]
    known = factstore.known_facts(
        [(first, stored(first)), (spoilt, spoil(stored(spoilt))), (last, stored(last))]
    )
    assert list(known) == [first, last]
    alone = factstore.known_facts([(first, stored(first)), (last, stored(last))])
    assert known == alone
    # A text stored again after a spoilt entry of it is taken from the good one.
    again = factstore.known_facts([(spoilt, spoil(stored(spoilt))), (spoilt, stored(spoilt))])
    assert again == factstore.known_facts([(spoilt, stored(spoilt))])


def test_rf_12_stored_columns_that_hold_are_not_looked_at_text_by_text(monkeypatch):
    """RF.12: a load of hundreds of messages checks their columns in a few C calls, not
    each text's apart."""
    monkeypatch.setattr(factstore, "_stored_rows", lambda facts: pytest.fail("text by text"))
    texts = [f"{text} ({i})" for i in range(40) for text in FACT_RICH]
    known = factstore.known_facts((text, stored(text)) for text in texts)
    assert len(known) == len(texts)


@settings(max_examples=100, deadline=None)
@given(sources=sources_strategy)
def test_rf_12_stored_facts_taken_are_what_a_scan_keeps_of_each_text(sources):
    """RF.12: what a load takes of each text's stored facts is what a scan keeps of it —
    the same occurrences and places (tuples, item for item) and the same cue — whether
    the texts' columns are checked together or one by one."""
    scans = dict(zip(sources, factscan._scan_placed(sources), strict=True))
    known = factstore.known_facts((text, stored(text)) for text in sources)
    apart = factstore._known_apart(
        [(text, stored(text)) for text in sources], factstore.scan_fingerprint()
    )
    for taken in (known, apart):
        assert set(taken) == set(sources)
        for text, scan in scans.items():
            assert type(taken[text].occurrences) is tuple and type(taken[text].placed) is tuple
            assert taken[text] == scan
