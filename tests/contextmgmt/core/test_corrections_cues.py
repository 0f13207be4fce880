"""The correction cues as the engine reads them fast (contextmgmt/core/factcues.py):
each alternative led by a literal character, the word boundary checked looking back. RF.12:
they find exactly what the plain patterns (``\\b`` first, kept here as the reference) find,
so the fact check's output does not change with its speed."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from contextmgmt.core import corrections, factcues
from contextmgmt.core.corrections import superseded
from contextmgmt.core.factcues import CUES
from contextmgmt.core.patterntext import top_level_alternatives

# The straightforward patterns, as the cue tables write them.
REFERENCE_WEAK = re.compile("|".join(weak for weak, _ in CUES.values()).casefold())
REFERENCE_STRONG = re.compile("|".join(strong for _, strong in CUES.values()).casefold())
REFERENCE_CUE_WORDS = re.compile(
    REFERENCE_WEAK.pattern + "|" + REFERENCE_STRONG.pattern, re.IGNORECASE
)
REFERENCE_SENTENCE = re.compile(r"(?<=[.!?])\s+|[。！？；;\n]+")

# Pieces of cue words, whole and cut, in every language of the tables, with what stands
# around them (letters, digits, white space, punctuation).
CUE_PIECES = [
    *["not", "Not", "NOT", "no", "now", "nicht", "statt", "instead of", "rather than"],
    *["changed", "Changed", "update:", "Update:", "correction", "Korrektur", "jetzt"],
    *["neue", "neuer", "nicht mehr", "no longer", "pas", "au lieu d", "désormais"],
    *["changée", "n'est plus", "nouvelle", "en vez de", "ahora", "ya no", "nuevo"],
    *["cambiada", "pasa a", "не", "Не", "вместо", "теперь", "новый", "перенесли"],
    *["不是", "改为", "更正", "ではなく", "変更", "訂正", "k", "K", "ß", "é", "ё"],
    *["a", "x", "_", "1", "12", " ", "  ", "\n", ".", "!", "?", ",", "-", "'", "。", "；"],
]
cue_texts = st.lists(st.sampled_from(CUE_PIECES), max_size=24).map("".join)


def spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    return [match.span() for match in pattern.finditer(text)]


def test_rf_12_every_cue_alternative_starts_with_a_literal_character():
    """RF.12: the engine skips to the cues' first characters only when every alternative
    starts with one (none with ``\\b``): then a cue search reads a text once, in C."""
    for pattern in (factcues.WEAK, factcues.STRONG, factcues.CUE_WORDS):
        for alternative in top_level_alternatives(pattern.pattern):
            assert not alternative.startswith(("\\b", "(", "[", "\\s", ".")), alternative


@settings(max_examples=400, deadline=None)
@given(text=cue_texts)
def test_rf_12_the_fast_cues_match_what_the_plain_patterns_match(text):
    """RF.12: same matches, at the same places, as the reference patterns."""
    folded = text.casefold()
    assert spans(factcues.WEAK, folded) == spans(REFERENCE_WEAK, folded)
    assert spans(factcues.STRONG, folded) == spans(REFERENCE_STRONG, folded)
    assert spans(factcues.ANY_CUE, folded) == spans(
        re.compile(REFERENCE_WEAK.pattern + "|" + REFERENCE_STRONG.pattern), folded
    )
    assert factcues.CUE_WORDS.sub(" ", text) == REFERENCE_CUE_WORDS.sub(" ", text)
    assert spans(corrections._SENTENCE, text) == spans(REFERENCE_SENTENCE, text)


def test_rf_12_a_correction_after_a_pasted_log_is_still_read():
    """RF.12: cues are looked for in the text the scan read (a log's repeated lines left
    out); a correction in the same message as a log is found as before."""
    log = "\n".join(f"GET /api/orders 200 {n} ms id=REQ-{n:05d}" for n in range(40))
    sources = [
        "The marketing budget is 38,000 for the fair.",
        f"{log}\nThe budget is 41,500, not 38,000.",
    ]
    corrections.clear_cache()
    assert superseded(sources).replacement("38000") == "41500"


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(cue_texts, max_size=8))
def test_rf_12_one_search_of_all_texts_finds_each_text_s_cue(texts):
    """RF.12: whether each text holds a cue, found by one search of all of them joined,
    is what a search of each alone finds (a cue never spans two texts; a text's edges
    look the same)."""
    assert factcues.cued(texts) == [bool(factcues.ANY_CUE.search(t.casefold())) for t in texts]
