"""Static files as served with DEBUG=False: hashed names, the page's ES module imports
rewritten to them, compressed copies, cacheable forever (config/static_files.py)."""

import gzip
import re
from posixpath import dirname, normpath

import pytest
from django.test import Client
from django.urls import reverse

HASHED_MODULE = re.compile(r"\.[0-9a-f]{12}\.js$")
MODULE_SCRIPT = re.compile(r'<script type="module" src="([^"]+)"')
IMPORT = re.compile(r'(?:import|export)\s[^;]*?\sfrom\s*"([^"]+)"\s*;')


def _body(response) -> bytes:
    return b"".join(response.streaming_content)


@pytest.fixture(autouse=True)
def static_files_read_as_deployed(settings):
    """WhiteNoise reads STATIC_ROOT once, when its middleware starts, as in production (the
    other tests let it find each file when asked: tests/conftest.py)."""
    settings.WHITENOISE_AUTOREFRESH = False


@pytest.fixture
def logged_in_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_every_module_the_page_loads_is_fetched_by_its_hashed_name_rd_5(logged_in_client):
    page = logged_in_client.get(reverse("chat:index")).content.decode()
    pending = MODULE_SCRIPT.findall(page)
    assert pending, "the page loads its script as ES modules"
    seen: set[str] = set()
    while pending:
        url = pending.pop()
        if url in seen:
            continue
        seen.add(url)
        assert HASHED_MODULE.search(url), f"{url} is not a hashed name"
        response = logged_in_client.get(url)
        assert response.status_code == 200, url
        assert "immutable" in response["Cache-Control"], url
        source = _body(response).decode()
        for imported in IMPORT.findall(source):
            pending.append(normpath(f"{dirname(url)}/{imported}"))
    assert any("/chat/js/dom." in url for url in seen), "imports were followed"
    assert len(seen) >= 10


@pytest.mark.django_db
def test_static_files_are_served_compressed_to_clients_that_take_gzip_rd_5(logged_in_client):
    page = logged_in_client.get(reverse("chat:index")).content.decode()
    app = MODULE_SCRIPT.findall(page)[0]
    plain = _body(logged_in_client.get(app))
    response = logged_in_client.get(app, headers={"accept-encoding": "gzip"})
    assert response["Content-Encoding"] == "gzip"
    assert gzip.decompress(_body(response)) == plain
