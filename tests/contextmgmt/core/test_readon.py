"""Read-on lines kept by a summary: the newest distinct lines of the texts it stands for."""

from hypothesis import given, settings
from hypothesis import strategies as st

from contextmgmt.core.readon import newest_read_on_lines, read_on_line, read_on_lines

_LINES = [
    read_on_line(
        part=n,
        parts=4,
        start=n * 100,
        end=n * 100 + 100,
        total=400,
        unit="characters",
        next_call=f'fetch_url(url="https://example.com/{n}", start_index={n * 100 + 100})',
    )  # fmt: skip
    for n in range(1, 4)
]
_PIECES = [*_LINES, "[Part 9: READ ON WITH more()]", "ΣΑΣ", "展位号", "Straße", "\n", "text "]


@settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(st.lists(st.sampled_from(_PIECES), max_size=6).map("".join), max_size=8),
    limit=st.integers(1, 6),
)
def test_rf_12_the_newest_lines_are_those_of_each_text_in_order(texts, limit):
    """RF.12: each text is looked at apart (a text of plain ASCII lowered the fast way);
    the lines are those each text holds, the newest of each kept, oldest first."""
    expected: list[str] = []
    for text in texts:
        for line in read_on_lines(text):
            if line in expected:
                expected.remove(line)
            expected.append(line)
    assert newest_read_on_lines(texts, limit) == expected[-limit:]
