"""Generation tokens: how a process learns that rows it keeps derived values of changed.

A token lives in Django's cache under a name of its own; whatever writes the rows replaces
it (once the write commits), and a reader keys what it derived from the rows by the token
(a ``functools.lru_cache`` whose argument is the token), so the next read after a change
misses and reads the rows again. With ``REDIS_URL`` the cache is Redis, shared by every
server process and by ``manage.py`` commands: a change made in one reaches every other's
next read. Without it the cache is the process's own memory (one server process; the
admin is served by it). Reading a token is one cache get, no database query.
"""

from __future__ import annotations

import uuid

from django.core.cache import cache
from django.db import transaction

# The ModelConfig rows: which models and budgets runs use (chat/runs/preparation.py).
MODEL_CONFIGS = "fimone:model-configs:generation"


def current(key: str) -> str:
    """The token under ``key`` (one is made when the cache has none: after a restart of
    Redis or an eviction, every reader reads its rows again once)."""
    token = cache.get(key)
    if token is None:
        cache.add(key, uuid.uuid4().hex, timeout=None)
        token = cache.get(key)
    return str(token)


def replace(key: str) -> None:
    """A new token under ``key``: every reader reads its rows again."""
    cache.set(key, uuid.uuid4().hex, timeout=None)


def replace_on_commit(key: str) -> None:
    """``replace`` once the current transaction commits (at once outside one): replaced
    before, another process could read the old rows again and keep them under the new token."""
    transaction.on_commit(lambda: replace(key))
