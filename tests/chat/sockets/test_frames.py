"""Outgoing frames stay under the websocket server's limit (RO.2), without losing answer text."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from chat.sockets import frames

ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=400)


@settings(max_examples=200, deadline=None)
@given(text=ANY_TEXT, budget=st.integers(min_value=16, max_value=200))
def test_split_text_pieces_fit_and_join_to_the_original(text, budget):
    pieces = frames.split_text(text, budget)
    assert "".join(pieces) == text
    assert all(len(json.dumps(p)) <= budget for p in pieces)


@settings(max_examples=100, deadline=None)
@given(text=ANY_TEXT, limit=st.integers(min_value=120, max_value=600))
def test_a_large_delta_becomes_deltas_that_fit_and_concatenate(text, limit):
    encoded = frames.encode({"type": "answer.delta", "text": text, "run_id": "r"}, max_bytes=limit)
    decoded = [json.loads(e) for e in encoded]
    assert all(len(e) <= limit for e in encoded)
    assert all(d["type"] == "answer.delta" and d["run_id"] == "r" for d in decoded)
    assert "".join(d["text"] for d in decoded) == text


def test_a_99000_emoji_run_started_is_cut_with_a_marker_under_the_cap():
    content = "😀" * 99_000  # legal: under the 100,000-character limit; 1.2 MB escaped
    event = {"type": "run.started", "run_id": "r", "message_id": 1, "content": content}
    (encoded,) = frames.encode(event)
    assert len(encoded) <= frames.MAX_FRAME_BYTES < len(json.dumps(event))
    frame = json.loads(encoded)
    assert frame["truncated"] is True and frame["run_id"] == "r" and frame["message_id"] == 1
    assert frame["content"].startswith("😀" * 1_000)
    assert "more characters not shown here" in frame["content"]


def test_a_20_mb_run_active_keeps_every_character_over_several_frames():
    text = "word " * 4_000_000
    event = {"type": "run.active", "run_id": "r", "text": text, "steps": []}
    encoded = frames.encode(event)
    assert all(len(e) <= frames.MAX_FRAME_BYTES for e in encoded)
    decoded = [json.loads(e) for e in encoded]
    assert decoded[0]["type"] == "run.active" and decoded[0]["run_id"] == "r"
    assert {d["type"] for d in decoded[1:]} == {"answer.delta"}
    assert "".join(d["text"] for d in decoded) == text


def test_done_with_huge_html_drops_the_html_so_the_client_reads_the_message():
    event = {"type": "done", "message_id": 9, "html": "<p>" + "x" * 2_000_000 + "</p>"}
    frame = json.loads(frames.encode(event)[0])
    assert frame == {"type": "done", "message_id": 9, "html_omitted": True}


def test_small_frames_are_sent_unchanged():
    event = {"type": "injected", "message_id": 3, "content": "hi"}
    assert frames.encode(event) == [json.dumps(event)]
