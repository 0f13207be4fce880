"""Cutting a text to a token size: splitting loses nothing, every piece fits."""

from hypothesis import given, settings
from hypothesis import strategies as st

from contextmgmt.core.textcut import split_text
from contextmgmt.core.tokens import estimate_tokens


def test_split_text_cuts_on_paragraphs_first():
    text = "\n\n".join(f"paragraph {i} " + "word " * 60 for i in range(10))
    pieces = split_text(text, 200)
    assert "".join(pieces) == text
    assert all(estimate_tokens(p) <= 200 for p in pieces)
    assert all(p.endswith("\n\n") for p in pieces[:-1])


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(list("ab c.\n中é")), max_size=3_000),
    limit=st.integers(1, 300),
)
def test_split_text_loses_nothing_and_every_piece_fits(text, limit):
    pieces = split_text(text, limit)
    assert "".join(pieces) == text
    assert all(estimate_tokens(p) <= limit for p in pieces if p)
