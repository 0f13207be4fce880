"""What a turn reads uses the indexes, never the whole conversation (SQLite; the same
checks on PostgreSQL: tests/scale/test_query_plans_postgres.py).

The history load after a persisted summary reads a range of the conversation's
(created_at, id) index, the pinned messages by their partial index and the messages the
summary left out by id; the messages API's newest page reads the index backwards up to
its limit; the gauge counts the load's history; search checks its hits by id."""

from __future__ import annotations

import pytest

from tests.support import query_plans

pytestmark = pytest.mark.django_db


@pytest.fixture
def plans():
    return query_plans.plans()


def test_every_read_of_a_turn_uses_an_index(plans):
    assert {p["what"] for p in plans} == {"load", "page", "gauge", "search", "recall"}
    whole = {p["sql"][:200]: query_plans.sqlite_whole_reads(p) for p in plans}
    assert not any(whole.values()), {sql: bad for sql, bad in whole.items() if bad}


def test_the_history_load_reads_after_the_summary_and_the_pins_by_index(plans):
    (load,) = [p for p in plans if p["what"] == "load" and "UNION" in p["sql"]]
    plan = load["plan"]
    assert "USING INDEX msg_conv_order (conversation_id=? AND created_at>?)" in plan, plan
    assert "USING INDEX msg_conv_pinned (conversation_id=? AND created_at<?)" in plan, plan
    assert "USING INTEGER PRIMARY KEY (rowid=?)" in plan, plan


def test_the_check_finds_a_load_that_reads_the_whole_conversation():
    """The check itself: the load as it was (one OR of after-the-summary, left-out and
    pinned) is caught."""
    bad = {
        "sql": "SELECT … FROM chat_message WHERE …",
        "plan": "SEARCH chat_message USING INDEX msg_conv_order (conversation_id=?)\n"
        "SCAN chat_message",
    }
    assert len(query_plans.sqlite_whole_reads(bad)) == 2


def test_recall_reads_a_hits_place_in_the_chat_from_the_indexes_alone(plans):
    """RF.10: "14th in this chat" comes from the conversation's ids in (created_at, id)
    order, read from its index alone, less the hidden messages found by their partial
    index; the messages around a hit are a step in the conversation's index each."""
    recall = [p for p in plans if p["what"] == "recall"]
    (order,) = [
        p
        for p in recall
        if p["sql"].startswith('SELECT "chat_message"."id" AS "id" FROM')
        and "IS NOT NULL" not in p["sql"]
    ]
    assert order["plan"] == (
        "SEARCH chat_message USING COVERING INDEX msg_conv_order "
        "(conversation_id=? AND created_at<?)"
    ), order["plan"]
    (hidden,) = [p for p in recall if '"superseded_by_id" IS NOT NULL' in p["sql"]]
    assert "USING INDEX msg_conv_hidden (conversation_id=? AND created_at<?)" in hidden["plan"]
    (around,) = [p for p in recall if '"before_id"' in p["sql"]]
    assert around["plan"].count("USING INDEX msg_conv_order") == 2, around["plan"]
