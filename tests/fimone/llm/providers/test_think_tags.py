"""Inline ``<think>…</think>`` split out of streamed content: whatever the chunking, the answer
and the reasoning come out the same; code keeps its tags; an unclosed block is reasoning."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextmgmt.core.messages import ChatMessage
from fimone.llm.providers.openai_client import OpenAIChatLLM
from fimone.llm.providers.think_tags import Split, ThinkSplitter, split_whole
from tests.support.scripted_server import text


def streamed(pieces: list[str], splitter: ThinkSplitter | None = None) -> Split:
    splitter = splitter or ThinkSplitter()
    out = Split()
    for piece in pieces:
        got = splitter.feed(piece)
        out.text += got.text
        out.reasoning += got.reasoning
    last = splitter.flush()
    return Split(out.text + last.text, out.reasoning + last.reasoning)


def chunked(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    edges = [0, *points, len(text)]
    return [text[a:b] for a, b in zip(edges, edges[1:], strict=False)]


@pytest.mark.parametrize(
    ("content", "text", "reasoning"),
    [
        ("<think>\nAdd them.\n</think>\n\n6*7 = 42.", "6*7 = 42.", "Add them.\n"),
        ("<think>Still going when the tokens ran out", "", "Still going when the tokens ran out"),
        ("No thinking here.", "No thinking here.", ""),
        ("Use `<think>` to mark it.", "Use `<think>` to mark it.", ""),
        ("```html\n<think>x</think>\n```\nDone.", "```html\n<think>x</think>\n```\nDone.", ""),
        ("a < b and <thin ice>", "a < b and <thin ice>", ""),
        ("<think>a</think>Answer, then <think>b</think>more.", "Answer, then more.", "ab"),
        ("ends with <thi", "ends with <thi", ""),
    ],
)
def test_content_is_split_into_answer_and_reasoning(content, text, reasoning):
    whole = split_whole(content)
    assert (whole.text, whole.reasoning) == (text, reasoning)


def test_tags_split_over_many_deltas():
    pieces = ["<", "th", "ink>", "Let me ", "see.</", "thi", "nk>", "\n\nIt is", " 42."]
    got = streamed(pieces)
    assert (got.text, got.reasoning) == ("It is 42.", "Let me see.")


def test_nothing_of_a_tag_reaches_the_answer_before_it_is_decided():
    splitter = ThinkSplitter()
    assert splitter.feed("Hello <thi").text == "Hello "
    assert splitter.feed("nk>hmm").text == ""
    assert splitter.thinking


ALPHABET = st.sampled_from(["<think>", "</think>", "<", "th", "ink>", "a", " ", "\n", "`", "```"])


@given(
    st.lists(ALPHABET, max_size=30).map("".join),
    st.lists(st.integers(0, 400), max_size=8),
    st.booleans(),
)
def test_any_chunking_splits_like_the_whole(content, cuts, inside):
    start = ThinkSplitter.inside if inside else ThinkSplitter
    got = streamed(chunked(content, cuts), start())
    whole = streamed([content], start())
    assert (got.text, got.reasoning) == (whole.text, whole.reasoning)


def test_a_block_the_prompt_opened_is_held_until_it_closes():
    splitter = ThinkSplitter.inside()
    assert splitter.feed("Okay, the user wants ").text == ""
    assert splitter.feed("a product.\n</th").reasoning == ""
    got = splitter.feed("ink>\n\n42.")
    assert (got.reasoning, got.text) == ("Okay, the user wants a product.\n", "42.")


def test_a_reply_without_the_closing_tag_was_the_answer():
    got = streamed(["Just ", "the answer."], ThinkSplitter.inside())
    assert (got.text, got.reasoning) == ("Just the answer.", "")


def test_a_closing_tag_without_an_opening_one_is_noticed():
    splitter = ThinkSplitter()
    got = splitter.feed("thinking aloud</think>\n\nAnswer.")
    assert got.text == "thinking aloud\n\nAnswer." and splitter.saw_orphan_close
    whole = split_whole("thinking aloud</think>\n\nAnswer.")  # not streamed: split right
    assert (whole.text, whole.reasoning) == ("Answer.", "thinking aloud")


@given(st.text(alphabet=st.characters(blacklist_characters="<"), max_size=200))
def test_content_without_a_tag_is_left_as_it_is(content):
    assert split_whole(content) == Split(content, "")


async def test_an_endpoint_that_opens_the_block_in_its_prompt_is_learnt(scripted_server):
    scripted_server.use_profile("qwq_closing_only").enqueue(
        text("42.", reasoning="Multiply. "), text("43.", reasoning="Add one. ")
    )
    llm = OpenAIChatLLM(model="m", base_url=scripted_server.base_url, api_key="k", max_retries=0)
    question = [ChatMessage(role="user", content="?")]
    try:
        first = [c async for c in llm.stream_chat(question)]
        second = [c async for c in llm.stream_chat(question)]
    finally:
        await llm.aclose()
    # An unknown name: the first reply's reasoning went out as text up to the closing tag.
    assert "".join(c.text for c in first) == "Multiply. \n\n42."
    assert "".join(c.text for c in second) == "43."
    assert "".join(c.reasoning for c in second) == "Add one. "
