"""The reads and updates every run makes as plain SQL return the ORM's rows and change what
the ORM's updates change on PostgreSQL too (a UUID, a datetime, a truth value and a JSON
value are prepared and read back differently there than on SQLite: the SQLite checks are
tests/chat/test_row_reads.py and test_row_updates.py). In a Django subprocess on
the private server, inside a transaction that is rolled back."""

from __future__ import annotations

import json

import pytest

from tests.support import compiled_updates, run_reads

pytestmark = pytest.mark.scale

_COMPARE = """
import json
from django.db import connection, transaction
from tests.support.{module} import compare
assert connection.vendor == "postgresql", connection.vendor
with transaction.atomic():
    report = compare()
    transaction.set_rollback(True)
print(json.dumps(report))
"""


@pytest.mark.parametrize(
    ("support", "expected"),
    [(run_reads, run_reads.ALL_EQUAL), (compiled_updates, compiled_updates.ALL_COMPILED_AND_EQUAL)],
    ids=["reads", "updates"],
)
def test_each_statement_of_a_run_matches_the_orm_rd_2(on_postgres, support, expected):
    module = support.__name__.rsplit(".", 1)[-1]
    report = json.loads(on_postgres.run(_COMPARE.format(module=module)).strip().splitlines()[-1])
    assert report == expected
