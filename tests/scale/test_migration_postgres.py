"""The migration that moves the facts relating messages to columns, run forward on a
PostgreSQL database holding rows of the old shape (SQLite:
tests/chat/test_migration_message_relations.py), in a Django subprocess on a database of
its own on the private server."""

from __future__ import annotations

import json
import uuid

import pytest

pytestmark = pytest.mark.scale

_MOVE = """
import json
from django.db import connection
from tests.support import message_relations_migration as moved
assert connection.vendor == "postgresql", connection.vendor
ids = moved.old_shape_rows()
after = moved.rows_after_migrating(ids)
print(json.dumps({"ids": ids, "after": after, "expected": moved.expected_after(ids)}))
"""


def test_the_metadata_keys_become_columns_on_postgresql(postgres_server, tmp_path):
    from tests.scale.django_procs import DjangoSubprocesses, django_env

    url = postgres_server.create_database(f"move_{uuid.uuid4().hex[:12]}")
    procs = DjangoSubprocesses(django_env(tmp_path, DATABASE_URL=url))
    found = json.loads(procs.run(_MOVE, timeout=300).strip().splitlines()[-1])
    assert found["after"] == found["expected"]
