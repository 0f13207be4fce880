"""What ``recall`` quotes of a hit and how it names it (chat/recall/quotes.py, RF.10).

The ranking, the question/reply pairs and the places are tested through the real recall
path, on both databases, in tests/support/search_scenarios.py; these are the pieces."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from chat.recall.quotes import (
    Focus,
    centred_bounds,
    focus_of,
    focuses_of,
    is_question,
    ordinal,
    states_value_early,
    when_text,
)
from chat.search.text import query_terms


def test_ordinals():
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111, 112)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd",
        "101st", "111th", "112th",
    ]  # fmt: skip


def test_a_date_reads_the_same_whatever_the_locale():
    assert when_text(datetime(2026, 3, 3, 14, 5, tzinfo=UTC)) == "3 March 2026 14:05 UTC"


def test_questions_in_several_languages():
    for text in (
        "Your EORI number?",
        "Quel est votre numéro EORI ?",
        "EORI番号を教えていただけますか？",
        'He asked: "which gate?"',
    ):
        assert is_question(text), text
    for text in ("DE884123456789012", "Is it? It is gate 7.", ""):
        assert not is_question(text), text


def test_a_value_next_to_the_key_is_stated_one_far_from_it_is_not():
    terms = query_terms("translator")
    near = focus_of("The translator's direct line is +49 30 9018 2277.", terms)
    assert near is not None and near.states_value
    far = focus_of("The translator was late. " + "Nothing else. " * 10 + "Room 4417.", terms)
    assert far is not None and not far.states_value


def test_a_value_over_the_key_itself_is_not_a_value_beside_it():
    """German capitalises nouns: "Zur Probe" reads as a name, but it is the key."""
    focus = focus_of("Zur Probe gibt es beim Rundgang nichts Neues.", query_terms("Probe"))
    assert focus is not None and not focus.states_value


def test_the_focus_is_the_match_beside_the_value():
    text = "Did the translator call? " + "x " * 400 + "The translator's phone is 030 1234567."
    focus = focus_of(text, query_terms("translator"))
    assert focus is not None and focus.states_value
    assert text[focus.start : focus.end].startswith("translator's phone is 030 1234567")


def test_a_reply_states_a_value_at_its_start():
    assert states_value_early("DE884123456789012")
    assert states_value_early("Sure: +49 30 9018 2277, ask for Ana.")
    assert not states_value_early("Nobody objected to moving it to the afternoon.")


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from("ab cd\n翻訳"), min_size=0, max_size=3_000),
    where=st.floats(min_value=0, max_value=1),
    width=st.integers(min_value=100, max_value=800),
)
def test_the_window_is_within_the_text_and_holds_its_focus(text, where, width):
    start = int(where * len(text))
    end = min(len(text), start + 20)
    low, high = centred_bounds(text, Focus(start, end, True), width)
    assert 0 <= low <= high <= len(text)
    assert high - low <= width
    # Word boundaries move each end in by at most 40 characters: a 20-character focus
    # stays inside a window of 100 or more.
    assert low <= start and end <= high


_FOCUS_PIECES = [
    "The translator's line is ",
    "+49 30 9018 2277",
    " translator ",
    "Room 4417. ",
    "Nothing else. ",
    "IBAN DE89 3704 0044 0532 0130 00 ",
    "am 12. März 2027 ",
    "翻译 translator 电话 139 1234 5678。",
    "\n",
    "Herr Karl Weber ",
    "translator-7 ",
]


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.lists(st.sampled_from(_FOCUS_PIECES), max_size=12).map("".join), max_size=6)
)
def test_texts_focused_together_are_focused_as_each_alone_rf_10(texts):
    """RF.10/RF.12: recall scans the value windows of several passages together; each
    passage's quote is centred as when it is looked at alone."""
    terms = query_terms("translator")
    assert focuses_of(texts, terms) == [focus_of(text, terms) for text in texts]
