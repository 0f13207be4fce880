"""The service fixtures skip locally but fail under CI when binaries are missing (issue 10)."""

import pytest

from tests.support import services


@pytest.fixture
def binaries_missing(monkeypatch):
    monkeypatch.setattr(services, "find_postgres_bindir", lambda: None)
    monkeypatch.setattr(services.shutil, "which", lambda name: None)


def test_missing_binaries_skip_outside_ci(binaries_missing, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    for start in (services.start_postgres, services.start_redis):
        with pytest.raises(services.ServiceUnavailable) as unavailable:
            start()
        with pytest.raises(pytest.skip.Exception, match="bin/setup dev"):
            services._unavailable(unavailable.value)


def test_missing_binaries_fail_under_ci(binaries_missing, monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(services.ServiceUnavailable) as unavailable:
        services.start_redis()
    with pytest.raises(pytest.fail.Exception, match="CI must run the scale tests"):
        services._unavailable(unavailable.value)


def test_servers_listen_on_loopback_and_clean_up_after_stop():
    try:
        redis = services.start_redis()
    except services.ServiceUnavailable as exc:
        services._unavailable(exc)
    with redis:
        assert redis.url.startswith("redis://127.0.0.1:")
        assert redis.base_dir.is_dir()
    assert redis.process.poll() is not None
    assert not redis.base_dir.exists()
