"""The character classes and their counter (``count_py``) against a per-character
definition of them."""

import re
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextmgmt.core import charclass
from contextmgmt.core.charclass import BASE_WEIGHTS, CLASSES, N_CLASSES, NO_COUNTS, count_py


@pytest.fixture(scope="module")
def counter():
    return count_py


# Code point ranges of the non-ASCII classes, written out independently of the lead-byte
# table the estimator uses.
BLOCKS = [
    (0x80, 0x380, "latin_ext"),
    (0x380, 0x400, "greek"),
    (0x400, 0x540, "cyrillic"),
    (0x540, 0x600, "hebrew_armenian"),
    (0x600, 0x800, "arabic"),
    (0x800, 0x1000, "indic_thai"),
    (0x1000, 0x2000, "other_scripts"),
    (0x2000, 0x3000, "symbols"),
    (0x3000, 0x4000, "cjk_punct_kana"),
    (0x4000, 0xA000, "cjk"),
    (0xA000, 0xE000, "hangul"),
    (0xE000, 0x10000, "fullwidth"),
    (0x10000, 0x110000, "astral"),
]
ENCODED_RUN = re.compile(r"[A-Za-z0-9]{20,}")


def reference_counts(text: str) -> dict[str, int]:
    """The class counts, one character at a time (the definition the fast passes meet)."""
    counts = dict.fromkeys(CLASSES, 0)
    for ch in text:
        o = ord(ch)
        if "a" <= ch <= "z":
            counts["lower"] += 1
        elif "A" <= ch <= "Z":
            counts["upper"] += 1
        elif "0" <= ch <= "9":
            counts["digit"] += 1
        elif ch == '"':
            counts["quote"] += 1
        elif ch == " ":
            counts["space"] += 1
        elif ch in "\r\n":
            counts["newline"] += 1
        elif o < 0x20 or o == 0x7F:
            counts["other_space"] += 1
        elif o < 0x80:
            counts["punct"] += 1
        else:
            counts[next(name for lo, hi, name in BLOCKS if lo <= o < hi)] += 1
    dense = (counts["upper"] + counts["digit"]) * 4 >= counts["lower"]
    if dense and len(text.encode("utf-8", "surrogatepass")) >= 20:
        counts["encoded"] = sum(
            len(run)
            for run in ENCODED_RUN.findall(text)
            if not run.isdigit() and any(c.isdigit() for c in run)
        )
    return counts


def counts_by(counter, text: str) -> list[int]:
    counts = array("q", bytes(8 * N_CLASSES))
    counter(text, counts, BASE_WEIGHTS)
    return list(counts)


def named(counter, text: str) -> dict[str, int]:
    return {name: n for name, n in zip(CLASSES, counts_by(counter, text), strict=True) if n}


def test_ascii_classes_rk_1(counter):
    assert named(counter, 'Hello, "World" 42!\n\tok') == {
        "lower": 10,
        "upper": 2,
        "digit": 2,
        "punct": 2,
        "quote": 2,
        "space": 2,
        "newline": 1,
        "other_space": 1,
    }


@pytest.mark.parametrize(
    ("char", "name"),
    [
        ("é", "latin_ext"),
        ("Ω", "greek"),
        ("Ж", "cyrillic"),
        ("א", "hebrew_armenian"),
        ("ع", "arabic"),
        ("क", "indic_thai"),
        ("ა", "other_scripts"),  # Georgian
        ("ệ", "other_scripts"),  # Vietnamese letters live in Latin Extended Additional
        ("—", "symbols"),
        ("の", "cjk_punct_kana"),
        ("中", "cjk"),
        ("한", "hangul"),
        ("，", "fullwidth"),
        ("😀", "astral"),
    ],
)
def test_every_script_is_counted_by_its_unicode_block_rk_1(counter, char, name):
    assert named(counter, char * 3 + " x") == {name: 3, "space": 1, "lower": 1}


@pytest.mark.parametrize(
    ("text", "encoded"),
    [
        ("aGVsbG8gd29ybGQgdGhpcyBpcyBhIHRlc3Q0MTIz", 40),  # base64
        ("sha256 " + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", 64),
        ("abcdefghijklmnopqrstuvwxyzABCD", 0),  # a long word without digits
        ("12345678901234567890123456789012", 0),  # a long number
        ("abc123DEF456", 0),  # mixed, but shorter than 20
    ],
)
def test_base64_and_hex_like_runs_rk_1(counter, text, encoded):
    assert counts_by(counter, text)[CLASSES.index("encoded")] == encoded


def test_encoded_runs_are_not_looked_for_in_plain_prose(counter):
    # A 24-character token with digits, drowned in lower-case prose: not dense enough to
    # hold base64, so the search (a pass over the text) is skipped.
    text = "the quick brown fox jumps over the lazy dog " * 5 + "v2ab34cd56ef78gh90ijklmn"
    assert counts_by(counter, text)[CLASSES.index("encoded")] == 0


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_fast_counts_match_the_per_character_definition_rk_1(counter, text):
    assert dict(zip(CLASSES, counts_by(counter, text), strict=True)) == reference_counts(text)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), min_size=300, max_size=3000))
def test_long_texts_take_the_same_counts_as_short_ones(counter, text):
    # Long buffers are counted by deletion, short ones in place: both must agree.
    assert dict(zip(CLASSES, counts_by(counter, text), strict=True)) == reference_counts(text)


def test_lone_surrogates_are_counted_not_raised(counter):
    assert named(counter, "a\ud800b") == {"lower": 2, "hangul": 1}


def test_the_counter_adds_to_the_counts_it_is_given():
    counts = array("q", NO_COUNTS)
    charclass.count_into("ab", counts, BASE_WEIGHTS)
    charclass.count_into("cd 1", counts, BASE_WEIGHTS)
    assert counts[CLASSES.index("lower")] == 4
    assert counts[CLASSES.index("digit")] == 1


def test_packed_counts_are_the_counts_and_value_rk_1():
    text = 'Der Haushalt: 12.500 EUR, "genehmigt" — Привет 上下文 😀 aGVsbG8gd29ybGQgdGhpcyBpcy'
    counts = array("q", NO_COUNTS)
    value = count_py(text, counts, BASE_WEIGHTS)
    assert charclass.count_packed(text, BASE_WEIGHTS) == (pytest.approx(value), counts.tobytes())
