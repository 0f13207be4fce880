"""The database's plans for what a turn reads, on SQLite and on PostgreSQL: used by
``tests/chat/test_query_plans.py`` and, in a Django subprocess on PostgreSQL, by
``tests/scale/test_query_plans_postgres.py``.

``plans()`` builds a conversation whose summary covers all but its newest messages (a
pinned message and one left out among those it covers), runs the history load, the
messages API's newest page, the context gauge, a search and a recall in it, and returns each one's
queries on ``chat_message`` with the plan the database chose for them (EXPLAIN). The checks
say whether a plan reads the whole conversation.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import asdict, dataclass
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from chat.history import load_history
from chat.models import ContextSummary, Conversation, Message, SearchDocument
from chat.recall.lookup import recall_passages
from chat.search.conversations import search
from chat.search.text import index_text

MESSAGES = 120
TAIL = 10  # messages after the summary's end


@dataclass
class Plan:
    what: str
    sql: str
    plan: str


def conversation_with_a_summary() -> tuple[Conversation, list[int]]:
    owner = get_user_model().objects.create_user(
        username=f"plan-{uuid.uuid4().hex[:10]}", password="pw-plan-123!"
    )
    conversation = Conversation.objects.create(owner=owner, title="plans")
    start = timezone.now() - timedelta(days=1)
    ids = []
    for i in range(MESSAGES):
        role = "user" if i % 2 == 0 else "assistant"
        message = Message.objects.create(
            conversation=conversation,
            role=role,
            kind="query" if role == "user" else "answer",
            content=f"message {i} about herons" if i % 10 == 0 else f"message {i}",
            pinned=i == 7,
        )
        ids.append(message.pk)
    # Distinct stamps a second apart, as a chat has (one statement per row is slow only here).
    for i, pk in enumerate(ids):
        Message.objects.filter(pk=pk).update(created_at=start + timedelta(seconds=i))
    SearchDocument.objects.bulk_create(
        SearchDocument(
            conversation=conversation,
            message_id=pk,
            kind=SearchDocument.Kind.MESSAGE,
            body="about herons",
            terms=index_text("about herons"),
            created_at=start,
        )
        for i, pk in enumerate(ids)
        if i % 10 == 0
    )
    ContextSummary.objects.create(
        conversation=conversation,
        covers_through_id=ids[-TAIL - 1],
        content="The conversation so far.",
        covered_count=MESSAGES - TAIL,
        uncovered_ids=[ids[20]],
    )
    return conversation, ids


def _explain(sql: str, params) -> str:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("EXPLAIN " + sql, params)
            return "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
        return "\n".join(row[-1] for row in cursor.fetchall())


def _plans_of(what: str, run) -> list[Plan]:
    with CaptureQueriesContext(connection) as captured:
        run()
    plans = []
    for query in captured.captured_queries:
        sql = query["sql"]
        if '"chat_message"' not in sql or not sql.lstrip("( ").upper().startswith(
            ("SELECT", "WITH")
        ):
            continue
        # The captured SQL has its parameters inlined; the database plans it as it is.
        plans.append(Plan(what=what, sql=sql, plan=_explain(sql, None)))
    return plans


def plans() -> list[dict]:
    """Every query on messages of a turn's reads, with its plan (as dicts, for JSON)."""
    conversation, ids = conversation_with_a_summary()
    client = Client(HTTP_HOST="localhost")
    client.force_login(conversation.owner)
    found: list[Plan] = []
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # The table is small here: without this PostgreSQL would read it whole whatever
            # the indexes, and the test could not tell a query that cannot use them.
            cursor.execute("ANALYZE chat_message")  # as autovacuum keeps it
            cursor.execute("SET enable_seqscan = off")

    loaded: list = []
    found += _plans_of("load", lambda: loaded.append(load_history(conversation.pk)))
    history = [m.metadata["id"] for m in loaded[0].messages]
    assert history == [ids[7], ids[20], *ids[-TAIL:]], history

    def page():
        response = client.get(f"/api/conversations/{conversation.pk}/messages/?limit=20")
        assert response.status_code == 200
        assert [m["id"] for m in response.json()["messages"]] == ids[-20:]

    found += _plans_of("page", page)

    def gauge():
        response = client.get(f"/api/conversations/{conversation.pk}/context/")
        assert response.status_code == 200

    found += _plans_of("gauge", gauge)
    hits: list = []
    found += _plans_of(
        "search", lambda: hits.extend(search(query="herons", conversation_id=conversation.pk))
    )
    assert len(hits) == MESSAGES // 10, hits
    # recall names each hit by its place in the chat and looks at the messages around it.
    passages: list = []
    found += _plans_of(
        "recall",
        lambda: passages.extend(recall_passages(conversation_id=conversation.pk, query="herons")),
    )
    assert "in this chat" in passages[0], passages
    return [asdict(p) for p in found]


# --- what a plan that reads the whole conversation looks like --------------------------------


# SQLite: a SCAN of the messages table, or a SEARCH of it by the conversation alone (every
# row of the conversation) rather than by a range of its (created_at, id) index, by id or by
# the pinned messages' index. A SEARCH bounded by ORDER BY … LIMIT on the index reads only
# the page: allowed where the query has a LIMIT.
_SQLITE_SCAN = re.compile(r"^SCAN (chat_message|U\d)\b(?!.*VIRTUAL TABLE)")
_SQLITE_WHOLE = re.compile(r"USING (COVERING )?INDEX \w+ \(conversation_id=\?\)$")


def sqlite_whole_reads(plan: dict) -> list[str]:
    lines = [line.strip() for line in plan["plan"].splitlines()]
    bad = [line for line in lines if _SQLITE_SCAN.search(line)]
    limited = re.search(r"\bLIMIT \d+( OFFSET \d+)?\s*$", plan["sql"], re.IGNORECASE)
    bad += [line for line in lines if _SQLITE_WHOLE.search(line) and not limited]
    return bad


def postgres_whole_reads(plan: dict) -> list[str]:
    """A sequential scan of messages, or an index scan on messages by the conversation
    alone (no created_at / id bound) without a LIMIT above it."""
    lines = plan["plan"].splitlines()
    bad = [line for line in lines if re.search(r"Seq Scan on chat_message", line)]
    limited = any(line.lstrip().startswith("Limit") for line in lines)
    for i, line in enumerate(lines):
        if "Index" not in line or "on chat_message" not in line:
            continue
        cond = next(
            (c for c in lines[i + 1 : i + 4] if "Index Cond" in c or "Recheck Cond" in c), ""
        )
        by_conversation_only = "conversation_id" in cond and not re.search(
            r"created_at|\bid\b", cond
        )
        if by_conversation_only and "msg_conv_pinned" not in line and not limited:
            bad.append(f"{line.strip()} / {cond.strip()}")
    return bad
