"""The reads every run makes, compiled once per connection, return the ORM's rows on
PostgreSQL too (a UUID and a datetime are prepared differently there than on SQLite: the
SQLite check is tests/chat/test_compiled_reads.py). In a Django subprocess on the private
server, inside a transaction that is rolled back."""

from __future__ import annotations

import json

import pytest

from tests.support import compiled_reads

pytestmark = pytest.mark.scale

_COMPARE = """
import json
from django.db import connection, transaction
from tests.support.compiled_reads import compare
assert connection.vendor == "postgresql", connection.vendor
with transaction.atomic():
    report = compare()
    transaction.set_rollback(True)
print(json.dumps(report))
"""


def test_each_read_of_a_run_runs_compiled_and_returns_the_orms_rows(on_postgres):
    report = json.loads(on_postgres.run(_COMPARE).strip().splitlines()[-1])
    assert report == compiled_reads.ALL_COMPILED_AND_EQUAL
