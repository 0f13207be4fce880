"""The reads and updates every run makes, compiled once per connection, return the ORM's
rows and change what the ORM's updates change on PostgreSQL too (a UUID, a datetime and a
JSON value are prepared differently there than on SQLite: the SQLite checks are
tests/chat/test_compiled_reads.py and test_compiled_updates.py). In a Django subprocess on
the private server, inside a transaction that is rolled back."""

from __future__ import annotations

import json

import pytest

from tests.support import compiled_reads, compiled_updates

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


@pytest.mark.parametrize("support", [compiled_reads, compiled_updates], ids=["reads", "updates"])
def test_each_statement_of_a_run_runs_compiled_and_matches_the_orm(on_postgres, support):
    module = support.__name__.rsplit(".", 1)[-1]
    report = json.loads(on_postgres.run(_COMPARE.format(module=module)).strip().splitlines()[-1])
    assert report == support.ALL_COMPILED_AND_EQUAL
