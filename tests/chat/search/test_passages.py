"""Long texts cut into passages for the full-text index (chat/search/passages.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from chat.search.passages import PASSAGE_MAX_CHARS, passages


def test_a_short_text_is_one_passage():
    assert [(p.offset, p.text) for p in passages("Kurz und gut.")] == [(0, "Kurz und gut.")]


def test_a_paste_is_cut_at_line_breaks_into_verbatim_slices():
    text = "\n".join(f"2026-03-{i % 28 + 1:02d} worker-{i} took {i}ms" for i in range(900))
    cut = passages(text)
    assert len(cut) > 10
    assert all(len(p.text) <= PASSAGE_MAX_CHARS for p in cut)
    assert all(text[p.offset : p.offset + len(p.text)] == p.text for p in cut)
    assert all(p.offset == 0 or text[p.offset - 1] == "\n" for p in cut)
    assert "".join(p.text for p in cut) == text


def test_one_long_chinese_line_is_cut_too():
    text = "展位号是B1-05，联系人是王芳。" * 300
    cut = passages(text)
    assert len(cut) > 3 and all(len(p.text) <= PASSAGE_MAX_CHARS for p in cut)
    assert "".join(p.text for p in cut) == text


def test_rows_below_a_table_header_carry_it_as_context():
    header = "| Standort | Telefon | Miete |"
    rows = [f"| Halle {i} | 030 {1000 + i} | {800 + i},00 € |" for i in range(150)]
    text = "Die Hallen:\n" + "\n".join([header, "|---|---|---|", *rows]) + "\nEnde."
    cut = passages(text)
    assert cut[0].context == ""
    assert all(p.context == header for p in cut[1:] if p.text.startswith("| Halle"))
    assert any(p.context == header for p in cut)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab 。\n\t|.x"), max_size=5_000))
def test_passages_cover_the_text_in_order(text):
    cut = passages(text)
    assert all(text[p.offset : p.offset + len(p.text)] == p.text for p in cut)
    offsets = [p.offset for p in cut]
    assert offsets == sorted(offsets)
    assert all(len(p.text) <= PASSAGE_MAX_CHARS for p in cut)
