"""How texts and queries are cut into words for the full-text index (chat/search/text.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from chat.search.text import Term, index_text, query_terms, tokens


def test_words_are_folded_and_split_on_punctuation():
    assert tokens("Order #A-1234 at https://Ex.ample/path_x, ÜBER Straße") == [
        "order", "a", "1234", "at", "https", "ex", "ample", "path", "x", "über", "strasse",
    ]  # fmt: skip


def test_full_width_forms_are_their_ascii_twins():
    assert tokens("ＡＢＣ１２３") == ["abc123"]


def test_cjk_characters_are_tokens_and_query_runs_are_phrases():
    assert index_text("预算是3万元") == "预 算 是 3 万 元"
    assert query_terms("预算3") == [Term(("预", "算")), Term(("3",))]
    assert Term(("预", "算")).found_in(index_text("我们的预算是"))
    assert not Term(("算", "预")).found_in(index_text("我们的预算是"))


def test_whole_words_unless_prefix():
    indexed = index_text("The release is out")
    assert not Term(("lease",)).found_in(indexed)
    assert Term(("release",)).found_in(indexed)
    assert Term(("rele",), prefix=True).found_in(indexed)


def test_overlong_tokens_are_not_indexed():
    assert tokens("a" * 101 + " kept") == ["kept"]


def test_stopwords_are_dropped_unless_nothing_else_is_left():
    stop = frozenset({"the", "what"})
    assert query_terms("what the budget", stopwords=stop) == [Term(("budget",))]
    assert query_terms("what the", stopwords=stop) == [Term(("what",)), Term(("the",))]


@given(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=8), st.data())
def test_any_word_of_a_text_is_found_by_that_word(words, data):
    text = " ".join(words)
    chosen = data.draw(st.sampled_from(words))
    indexed = index_text(text)
    for term in query_terms(chosen):
        assert term.found_in(indexed), (text, chosen, term)


def test_german_compounds_are_indexed_by_their_parts():
    indexed = index_text("Die Lieferadresse ist nicht die Rechnungsadresse, bitte prüfen.")
    for word in ("adresse", "liefer", "rechnung", "lieferadresse"):
        (term,) = query_terms(word)
        assert term.found_in(indexed), word
    (short,) = query_terms("die")
    assert short.part is None


def test_english_long_words_are_not_taken_apart():
    indexed = index_text("The configuration of the release is in the repository.")
    (term,) = query_terms("figuration")
    assert not term.found_in(indexed)
    assert "0" not in indexed
