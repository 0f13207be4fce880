"""Regular expressions as text (contextmgmt/core/patterntext.py): what a pattern's leading
words and top-level alternatives are, and patterns regrouped by their first character
matching what they matched (RF.12: the passes a scan skips rest on these)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from contextmgmt.core.patterntext import (
    by_first_character,
    each_led,
    leading_words,
    top_level_alternatives,
    word_group,
)


def test_rf_12_a_pattern_led_by_a_word_group_needs_one_of_its_words():
    assert leading_words(word_group(r"Dr\.|Herr") + " [A-Z][a-z]+") == ("Dr.", "Herr")
    assert leading_words(r"(?:Dr\.(?<!\wDr\.)|Herr(?<!\wHerr)) [A-Z][a-z]+") == ("Dr.", "Herr")
    assert leading_words(r"(?:Stk\.?(?<!\wStk\.?)|Herr(?<!\wHerr)) \d") == ()
    assert leading_words(r"(?:a\d(?<!\wa\d)) x") == ()
    assert leading_words(r"(?:星期|周|礼拜)[一二三四五六日天]") == ()
    assert leading_words(r"\d(?<![\w.,]\d)\d*") == ()


def test_top_level_alternatives_leave_groups_classes_and_escapes_whole():
    assert top_level_alternatives(r"a|(?:b|c)|[|x]|\||d") == ["a", "(?:b|c)", "[|x]", r"\|", "d"]
    assert top_level_alternatives("abc") == ["abc"]


def test_a_word_group_matches_its_words_only_where_a_word_starts():
    group = re.compile(word_group("am|um"))
    assert [m.group() for m in group.finditer("am Tag, um 5, warum")] == ["am", "um"]


_PIECES = ["a", "b", "ab", r"\d", "[xy]", r"a\d+", "b?", r"\.", ".", "(?:a|c)", "c"]


@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=6), st.text("abcxy.1 ", max_size=20))
def test_rf_12_alternatives_grouped_by_first_character_match_what_they_matched(pieces, text):
    """Regrouped, a pattern matches at the same places as before (the same alternatives
    in the same order within each first character: the leftmost match is kept)."""
    pattern = "|".join(pieces)
    grouped = by_first_character(pattern)
    found = [bool(re.match(pattern, text[at:])) for at in range(len(text) + 1)]
    assert found == [bool(re.match(grouped, text[at:])) for at in range(len(text) + 1)]
    assert each_led(("a", "b"), "x") == "ax|bx"
