"""The updates every run makes, compiled once per connection and shape, change what the
ORM's updates change on PostgreSQL too (a UUID, a datetime and a JSON value are prepared
differently there than on SQLite: the SQLite check is tests/chat/test_compiled_updates.py).
In a Django subprocess on the private server, inside a transaction that is rolled back."""

from __future__ import annotations

import json

import pytest

from tests.support import compiled_updates

pytestmark = pytest.mark.scale

_COMPARE = """
import json
from django.db import connection, transaction
from tests.support.compiled_updates import compare
assert connection.vendor == "postgresql", connection.vendor
with transaction.atomic():
    report = compare()
    transaction.set_rollback(True)
print(json.dumps(report))
"""


def test_each_update_of_a_run_runs_compiled_and_changes_what_the_orm_changes(on_postgres):
    report = json.loads(on_postgres.run(_COMPARE).strip().splitlines()[-1])
    assert report == compiled_updates.ALL_COMPILED_AND_EQUAL
