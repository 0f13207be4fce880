"""Shared fixtures. Fixtures are named by the state they build."""

import pytest

# Websocket runs (issue 7): a clean channel layer and run registry, a FakeLLM for every role.
from tests.chat.test_runs_support import clean_runs, ws_fake_llm  # noqa: F401

# A real daphne subprocess (browser / end-to-end tests, benchmarks): see that module.
from tests.support.live_server import (  # noqa: F401
    live_daphne,
    live_daphne_env,
    live_daphne_factory,
)

# A scripted OpenAI-compatible server on loopback (issue 4): see that module.
from tests.support.scripted_server import (  # noqa: F401
    scripted_server,
    scripted_server_session,
)

# Session-scoped private PostgreSQL / Redis servers (issue 10); skip or, under CI, fail.
from tests.support.services import postgres_server, redis_server  # noqa: F401


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user(username="alice", password="pw-alice-123!")


@pytest.fixture
def other_user(django_user_model):
    return django_user_model.objects.create_user(username="mallory", password="pw-mallory-123!")


def pytest_collection_modifyitems(config, items):
    """Browser tests run last.

    Playwright's sync API keeps an event loop running in the main thread for as long as its
    session-scoped browser lives; any pytest-asyncio test after it would fail with "cannot be
    called from a running event loop". Moving browser tests to the end keeps the one browser.
    """
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)
