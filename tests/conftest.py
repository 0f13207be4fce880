"""Shared fixtures. Fixtures are named by the state they build."""

from pathlib import Path

import pytest

pytest_plugins = [
    # Real MCP servers (stdio children, streamable HTTP on loopback) and a closed pool.
    "tests.support.mcp_servers",
    # Websocket runs: a clean channel layer and run registry, replaceable run collaborators,
    # a FakeLLM for every role.
    "tests.support.runs",
    # A real daphne subprocess (browser / end-to-end tests, benchmarks).
    "tests.support.live_server",
    # Daphne servers shared by browser tests, a fresh user for each test.
    "tests.support.shared_servers",
    # A scripted OpenAI-compatible server on loopback.
    "tests.support.scripted_server",
    # Session-scoped private PostgreSQL / Redis servers; skip or, under CI, fail.
    "tests.support.services",
]


@pytest.fixture(scope="session", autouse=True)
def hashing_passwords_cheaply():
    """Django's advice for test suites: a fast password hasher. The default one is meant to
    be slow (0.4 s of CPU per hash here), and most tests create a user with a password.
    Only this process: the live daphnes a test starts hash as in production."""
    from django.test.utils import override_settings

    cheap = override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"])
    cheap.enable()
    yield
    cheap.disable()


@pytest.fixture(scope="session", autouse=True)
def static_files_collected():
    """Pages name their static files through collectstatic's manifest (DEBUG=False), so
    this process and the live daphnes it starts serve a collected STATIC_ROOT."""
    import os

    from django.test.utils import override_settings

    from tests.support.static_files import collected_static_root

    root = collected_static_root()
    os.environ["STATIC_ROOT"] = str(root)
    # WhiteNoise finds a static file when it is asked for, instead of reading the whole
    # STATIC_ROOT (some 700 files) each time a test client loads its middleware: 0.06 to
    # 0.08 s of CPU per client, and most tests make one. The same files are served with
    # the same headers. Only this process: the live daphnes read it once, as deployed.
    collected = override_settings(STATIC_ROOT=root, WHITENOISE_AUTOREFRESH=True)
    collected.enable()
    yield root
    collected.disable()


@pytest.fixture(scope="session")
def django_db_keepdb(
    django_db_keepdb, django_db_createdb, django_db_use_migrations, django_db_modify_db_settings
):
    """The test database starts as a copy of one migrated once for every process
    (tests/support/migrated_database.py): pytest-django keeps it instead of creating it."""
    from tests.support.migrated_database import (
        place_test_database,
        remove_test_database,
        sqlite_test_database,
    )

    target = sqlite_test_database()
    if target is None or django_db_keepdb or django_db_createdb or not django_db_use_migrations:
        yield django_db_keepdb  # --reuse-db, --create-db, --nomigrations: as asked
        return
    placed = place_test_database(target)
    yield placed
    if placed:
        remove_test_database(target)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, and a copy of it as migrated: the other test
    processes start from it (tests/support/migrated_database.py), and the live servers'
    seeded template does instead of migrating an empty file again
    (tests/support/live_server.py, ``keep_migrated_database``)."""
    from django.db import connection

    from tests.support.live_server import keep_migrated_database
    from tests.support.migrated_database import publish_template

    with django_db_blocker.unblock():
        publish_template(Path(connection.settings_dict["NAME"]))
        keep_migrated_database()


@pytest.fixture(autouse=True)
def serving_with_fresh_rate_limits():
    """Each test starts with no websocket frames counted and the process not draining."""
    from chat import drain
    from chat.sockets import rate_limit

    rate_limit.reset()
    drain.reset()
    yield
    rate_limit.reset()
    drain.reset()


@pytest.fixture(autouse=True)
def looking_the_models_up_afresh():
    """Each test's runs look the models and budgets up in its own database: an earlier
    test's rows went with a rollback or a flush, which tells no process (chat/signals.py),
    so what its runs looked up would otherwise be reused."""
    from chat.runs import preparation

    preparation.forget_models()
    yield
    preparation.forget_models()


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


@pytest.fixture
def conversation(user):
    """Alice's conversation, as the API creates it (builders: ``tests/support/factories.py``)."""
    from tests.support.factories import make_conversation

    return make_conversation(user, title="Alice's chat")


@pytest.fixture
def foreign_conversation(other_user):
    from tests.support.factories import make_conversation

    return make_conversation(other_user, title="Mallory's secret")


@pytest.fixture
def logged_in_client(user):
    """A test client logged in as Alice."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def media_root(settings, tmp_path):
    """Uploads go to the test's own empty media folder."""
    root = tmp_path / "media"
    root.mkdir()
    settings.MEDIA_ROOT = root
    return root


@pytest.fixture
async def socket(user, conversation):
    """An accepted websocket on ``conversation``, as its owner; closed after the test."""
    from tests.support.runs import connect

    comm = await connect(user, conversation.id)
    yield comm
    await comm.disconnect()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Browser tests run last; browser and scale tests are slow; scale tests share a worker.

    Playwright's sync API keeps an event loop running in the main thread for as long as its
    session-scoped browser lives; any pytest-asyncio test after it would fail with "cannot be
    called from a running event loop". Moving browser tests to the end keeps the one browser
    (bin/test keeps this order on each parallel worker: docs/testing.md).

    Runs before pytest-xdist reads the ``xdist_group`` marks and before ``-m`` selects.
    """
    for item in items:
        if item.get_closest_marker("browser") or item.get_closest_marker("scale"):
            item.add_marker(pytest.mark.slow)  # Chromium, PostgreSQL, Redis: not the fast part
        if item.get_closest_marker("scale") and not item.get_closest_marker("xdist_group"):
            # Several processes on one PostgreSQL and Redis: one worker runs them one after
            # another, as the serial suite did, while the other worker runs the rest.
            item.add_marker(pytest.mark.xdist_group("servers"))
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)
