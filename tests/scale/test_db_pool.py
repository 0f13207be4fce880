"""PostgreSQL connections of one process are bounded by its pool, not by its threads: after a
burst of parallel requests to a real daphne, the process holds at most FIMONE_DB_POOL_SIZE
connections (before the pool, every worker thread kept one of its own)."""

from __future__ import annotations

import secrets
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

from tests.support.live_server import start_live_server

pytestmark = [pytest.mark.scale, pytest.mark.slow]

POOL_SIZE = 3
PARALLEL = 24


def connections_to(url: str) -> int:
    """Connections the server has open to ``url``'s database, other than this one."""
    parts = urllib.parse.urlsplit(url)
    database = parts.path.lstrip("/")
    with psycopg.connect(
        host=parts.hostname, port=parts.port, user=parts.username, dbname=database
    ) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (database,),
        ).fetchone()
    return row[0]


@pytest.fixture
def pooled_daphne(postgres_server, migrated_template, tmp_path):
    name = f"pool_{secrets.token_hex(6)}"
    url = postgres_server.create_database(name, template=migrated_template)
    server = start_live_server(
        {
            "DATABASE_URL": url,
            # What docs/operations.md recommended before the pool: ignored with it.
            "CONN_MAX_AGE": "60",
            "FIMONE_DB_POOL_SIZE": str(POOL_SIZE),
        },
        data_dir=tmp_path / "daphne",
    )
    try:
        yield server, url
    finally:
        server.stop()


def test_a_burst_holds_no_more_connections_than_the_pool(pooled_daphne):
    server, url = pooled_daphne
    conversation = server.api("POST", "/api/conversations/", {})["id"]

    def read(_: int) -> int:
        listed = server.api("GET", "/api/conversations/")
        server.api("GET", f"/api/conversations/{conversation}/messages/")
        return len(listed["conversations"] if isinstance(listed, dict) else listed)

    with ThreadPoolExecutor(PARALLEL) as pool:
        answers = list(pool.map(read, range(PARALLEL * 4)))
    assert all(count >= 1 for count in answers)  # every request was served
    held = connections_to(url)
    assert 1 <= held <= POOL_SIZE, f"{held} connections open after the burst"
