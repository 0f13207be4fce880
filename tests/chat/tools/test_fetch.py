"""``fetch_url`` as the settings configure it (chat/tools/fetch.py) and in a run's tools."""

from __future__ import annotations

import ipaddress

import pytest
from django.core.exceptions import ImproperlyConfigured

from chat.documents.extraction import extraction_pool
from chat.runs.deps import make_tools
from chat.tools.fetch import check_settings, fetch_config


def test_a_run_gets_fetch_url_by_default(settings):
    settings.FIMONE_FETCH_ALLOWED_HOSTS = []
    assert "fetch_url" in make_tools(None, before_id=0)


def test_an_operator_can_switch_it_off(settings):
    settings.FIMONE_FETCH_ENABLED = False
    assert "fetch_url" not in make_tools(None, before_id=0)
    assert fetch_config() is None


def test_the_settings_make_the_tools_limits_and_allow_list(settings):
    settings.FIMONE_FETCH_ALLOWED_HOSTS = ["wiki.intranet", "10.8.0.0/16"]
    settings.FIMONE_FETCH_MAX_BYTES = 1000
    settings.FIMONE_FETCH_TIMEOUT_SECONDS = 3.0
    settings.FIMONE_FETCH_MAX_CHARS = 500
    config = fetch_config()
    assert config.policy.host_allowed("wiki.intranet")
    assert config.policy.address_allowed(ipaddress.ip_address("10.8.1.1"))
    assert not config.policy.address_allowed(ipaddress.ip_address("10.9.1.1"))
    assert config.limits.max_bytes == 1000 and config.max_chars == 500
    assert config.limits.total_seconds == 3.0 and config.limits.connect_seconds == 3.0


@pytest.mark.parametrize(
    "name,value,message",
    [
        (
            "FIMONE_FETCH_ALLOWED_HOSTS",
            ["10.0.0.0/40"],
            "FIMONE_FETCH_ALLOWED_HOSTS: '10.0.0.0/40'",
        ),
        ("FIMONE_FETCH_MAX_BYTES", 0, "FIMONE_FETCH_MAX_BYTES must be more than 0"),
        ("FIMONE_FETCH_TIMEOUT_SECONDS", -1.0, "FIMONE_FETCH_TIMEOUT_SECONDS must be more"),
    ],
)
def test_bad_settings_stop_start_up_with_their_name(settings, name, value, message):
    setattr(settings, name, value)
    with pytest.raises(ImproperlyConfigured, match=message.replace("(", r"\(")):
        check_settings()


def test_pages_are_read_by_the_document_workers(settings):
    """HTML and PDF pages go to the same worker processes as uploaded documents: their
    parsers' C calls would otherwise hold the server's GIL (docs/tools.md)."""
    settings.FIMONE_DOCUMENT_WORKERS = 2
    assert fetch_config().pool is extraction_pool() is not None
    settings.FIMONE_DOCUMENT_WORKERS = 0
    assert fetch_config().pool is None
