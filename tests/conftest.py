"""Shared fixtures. Fixtures are named by the state they build."""

import pytest

pytest_plugins = [
    # Real MCP servers (stdio children, streamable HTTP on loopback) and a closed pool.
    "tests.support.mcp_servers",
    # Websocket runs: a clean channel layer and run registry, replaceable run collaborators,
    # a FakeLLM for every role.
    "tests.support.runs",
    # A real daphne subprocess (browser / end-to-end tests, benchmarks).
    "tests.support.live_server",
    # A scripted OpenAI-compatible server on loopback.
    "tests.support.scripted_server",
    # Session-scoped private PostgreSQL / Redis servers; skip or, under CI, fail.
    "tests.support.services",
]


@pytest.fixture(autouse=True)
def serving_with_fresh_rate_limits():
    """Each test starts with no websocket frames counted and the process not draining."""
    from chat import drain, rate_limit

    rate_limit.reset()
    drain.reset()
    yield
    rate_limit.reset()
    drain.reset()


@pytest.fixture(autouse=True)
def speaking_the_default_language():
    """Each test starts and ends in the default language: a request with Accept-Language
    activates its language in the thread that served it, and would otherwise leak it into
    the next test run on that thread."""
    from django.utils import translation

    translation.deactivate()
    yield
    translation.deactivate()


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
