"""Where an admin-added tool server may be (RO.12): under ``fetch_url``'s address policy, so
no admin URL reaches loopback, this machine, a private network or a metadata service unless
the operator allowed that host or network in ``FIMONE_FETCH_ALLOWED_HOSTS``. Refused on save
in the admin form, and on every connection (a row saved before, or a name that resolves
elsewhere later). The operator's own file is not under the policy: it may run anything."""

from __future__ import annotations

import pytest
from django.urls import reverse

from chat.models import ToolServer
from chat.tool_servers import pool as tool_servers
from tests.security.test_tool_server_admin import http_form

pytestmark = pytest.mark.django_db

ADD_URL = reverse("admin:chat_toolserver_add")


@pytest.fixture
def servers_read_afresh():
    tool_servers.forget_cached_servers()
    yield
    tool_servers.forget_cached_servers()


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1:8000/mcp", "a loopback address"),
        ("http://localhost/mcp", "localhost (which resolves to 127.0.0.1) is a loopback address"),
        ("http://[::1]:9000/mcp", "a loopback address"),
        ("http://169.254.169.254/latest", "the address of a cloud metadata service"),
        ("http://10.1.2.3/mcp", "a private address"),
        ("http://0.0.0.0:8000/mcp", "an unspecified address"),
    ],
)
def test_the_admin_form_refuses_a_url_that_is_not_public_and_says_why(admin_client, url, reason):
    response = admin_client.post(ADD_URL, http_form(url=url))
    assert response.status_code == 200  # the form again
    page = response.content.decode()
    assert "This URL cannot be used" in page and reason in page
    assert "FIMONE_FETCH_ALLOWED_HOSTS" in page
    assert not ToolServer.objects.exists()


def test_a_host_or_network_the_operator_allowed_is_saved(admin_client, settings):
    settings.FIMONE_FETCH_ALLOWED_HOSTS = ["127.0.0.1", "intranet-mcp.local", "10.8.0.0/16"]
    for name, url in [
        ("loop", "http://127.0.0.1:8000/mcp"),
        ("named", "http://intranet-mcp.local/mcp"),
        ("office", "http://10.8.3.4/mcp"),
        ("public", "https://mcp.example.com/mcp"),  # does not resolve here: checked on use
    ]:
        response = admin_client.post(ADD_URL, http_form(name=name, url=url))
        assert response.status_code == 302, (url, response.content.decode()[:3000])
    assert ToolServer.objects.count() == 4


@pytest.mark.slow
@pytest.mark.usefixtures("servers_read_afresh")
@pytest.mark.django_db(transaction=True)
async def test_a_row_on_loopback_is_refused_on_use_unless_the_operator_allowed_it(
    http_mcp, settings
):
    """A row saved before the check (or written around the form) still never connects."""
    url, _ = http_mcp
    await ToolServer.objects.acreate(name="inside", url=url)
    try:
        refused = await tool_servers.server_tools(vision=False)
        assert refused.tools == []
        [problem] = refused.problems
        assert problem.server == "inside" and "a loopback address" in problem.reason
        assert "FIMONE_FETCH_ALLOWED_HOSTS" in problem.reason

        await tool_servers.close()  # a new pool: the failure is not remembered
        settings.FIMONE_FETCH_ALLOWED_HOSTS = ["127.0.0.1"]
        allowed = await tool_servers.server_tools(vision=False)
        assert allowed.problems == []
        echo = next(t for t in allowed.tools if t.name == "inside__echo")
        assert (await echo.func(text="through the checked address")).text == (
            "echo: through the checked address"
        )
    finally:
        await tool_servers.close()


@pytest.mark.slow
async def test_an_allowed_name_is_connected_to_the_address_it_was_checked_at(http_mcp):
    """The connection goes to the address the check saw, the name in the Host header."""
    from fimone.agent.tools.mcp_client import McpPool
    from fimone.agent.tools.mcp_config import McpServerSpec
    from fimone.agent.tools.netpolicy import AddressPolicy
    from tests.support.mcp_servers import no_secrets

    url, _ = http_mcp
    pool = McpPool(no_secrets, policy=lambda: AddressPolicy.from_entries(["localhost"]))
    named = McpServerSpec(
        name="named", transport="http", url=url.replace("127.0.0.1", "localhost"), source="admin"
    )
    try:
        toolset = await pool.toolset([named], vision=False)
    finally:
        await pool.aclose()
    assert toolset.problems == [] and "named__echo" in {t.name for t in toolset.tools}


def test_a_metadata_address_is_refused_though_a_network_around_it_is_allowed(
    admin_client, settings
):
    settings.FIMONE_FETCH_ALLOWED_HOSTS = ["169.254.0.0/16"]
    response = admin_client.post(ADD_URL, http_form(url="http://169.254.169.254/latest"))
    page = response.content.decode()
    assert response.status_code == 200 and "the address of a cloud metadata service" in page
    assert admin_client.post(ADD_URL, http_form(url="http://169.254.1.2/mcp")).status_code == 302
