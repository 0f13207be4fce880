"""``read_document``'s page numbers, and the tool as the registry runs it."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fimone.agent.tools import ToolRegistry, read_document_tool
from fimone.agent.tools.documents import MAX_PAGES_PER_CALL, parse_pages


@pytest.mark.parametrize(
    ("spec", "pages"),
    [
        ("7", [7]),
        ("3-5", [3, 4, 5]),
        ("5-3", [3, 4, 5]),
        ("1, 4, 9-10", [1, 4, 9, 10]),
        ("pages 2–3", [2, 3]),
        ("p. 12", [12]),
        ("7,7,7", [7]),
        ("10-99", [10, 11, 12]),
    ],
)
def test_page_specs(spec, pages):
    assert parse_pages(spec, 12) == pages


@pytest.mark.parametrize("spec", ["0", "13", "seven", "", "-"])
def test_bad_page_specs_are_errors(spec):
    with pytest.raises(ValueError):
        parse_pages(spec, 12)


@given(st.integers(1, 10**6), st.integers(1, 10**6))
def test_a_huge_range_stays_bounded(first, last):
    try:
        pages = parse_pages(f"{first}-{last}", 300)
    except ValueError:
        assert min(first, last) > 300
    else:
        assert len(pages) <= MAX_PAGES_PER_CALL * 50 + 1
        assert all(1 <= p <= 300 for p in pages)


async def test_the_tool_hands_file_pages_and_query_to_the_reader():
    calls = []

    async def reader(file, pages, query, start):
        calls.append((file, pages, query, start))
        return "read"

    registry = ToolRegistry([read_document_tool(reader)])
    assert (
        await registry.run("read_document", json.dumps({"file": " a.pdf ", "pages": "7"})) == "read"
    )
    assert (
        await registry.run("read_document", json.dumps({"file": "a.pdf", "query": " x "})) == "read"
    )
    assert calls == [("a.pdf", "7", None, 0), ("a.pdf", None, "x", 0)]
    args = json.dumps({"file": "a.pdf", "pages": "7", "start": 900})
    assert await registry.run("read_document", args) == "read"
    assert calls[-1] == ("a.pdf", "7", None, 900)
    alone = await registry.run("read_document", json.dumps({"file": "a.pdf", "start": 9}))
    assert alone.startswith("Error: start reads on within one page")
    assert (await registry.run("read_document", json.dumps({"file": "  "}))).startswith("Error")
    assert (await registry.run("read_document", "{}")).startswith("Error: bad arguments")
