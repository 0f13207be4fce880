"""What a turn reads uses the indexes on PostgreSQL too (the SQLite checks:
tests/chat/test_query_plans.py), in a Django subprocess on the private server. Sequential
scans are switched off for the plans: on a table this small PostgreSQL would otherwise read
it whole whatever the indexes, and a query that cannot use them could not be told apart."""

from __future__ import annotations

import json

import pytest

from tests.support import query_plans

pytestmark = pytest.mark.scale

_PLANS = """
import json
from django.db import connection
from tests.support.query_plans import plans
assert connection.vendor == "postgresql", connection.vendor
print(json.dumps(plans()))
"""


@pytest.fixture(scope="module")
def postgres_plans(own_migrated_postgres, tmp_path_factory):
    """The plans on a database of their own: on the shared one the rows other modules left
    (other dates, other sizes) change the statistics, and with them the planner's choice
    between the conversation's index and the one on its dates."""
    from tests.scale.django_procs import DjangoSubprocesses, django_env

    procs = DjangoSubprocesses(
        django_env(tmp_path_factory.mktemp("plans"), DATABASE_URL=own_migrated_postgres)
    )
    return json.loads(procs.run(_PLANS).strip().splitlines()[-1])


def test_every_read_of_a_turn_uses_an_index(postgres_plans):
    assert {p["what"] for p in postgres_plans} == {"load", "page", "gauge", "search", "recall"}
    whole = {p["sql"][:200]: query_plans.postgres_whole_reads(p) for p in postgres_plans}
    assert not any(whole.values()), {sql: bad for sql, bad in whole.items() if bad}


def test_the_history_load_reads_after_the_summary_and_the_pins_by_index(postgres_plans):
    (load,) = [p for p in postgres_plans if p["what"] == "load" and "UNION" in p["sql"]]
    plan = load["plan"]
    # After the summary: a range on created_at (the conversation's index, or the one on
    # created_at alone, whichever the statistics favour); the pins by their partial index.
    conds = [line for line in plan.splitlines() if "Index Cond" in line or "Recheck Cond" in line]
    assert any("created_at >=" in line for line in conds), plan
    assert "msg_conv_pinned" in plan and "chat_message_pkey" in plan, plan
    assert "Seq Scan on chat_message" not in plan, plan
    assert not query_plans.postgres_whole_reads(load), plan
