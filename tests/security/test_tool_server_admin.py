"""Who may do what with tool servers: only the operator's file defines a stdio server (a
command this machine runs), a header's secret must be on the key allow-list, and changing a
server's connection needs a permission of its own; view-only staff change nothing."""

from __future__ import annotations

import json
import sys

import pytest
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.urls import reverse

from chat.models import ToolServer
from chat.tool_servers import pool as tool_servers

pytestmark = pytest.mark.django_db

ADD_URL = reverse("admin:chat_toolserver_add")
LIST_URL = reverse("admin:chat_toolserver_changelist")


def change_url(row) -> str:
    return reverse("admin:chat_toolserver_change", args=[row.pk])


def http_form(**overrides) -> dict:
    form = {
        "name": "docs",
        "url": "https://mcp.example.com/mcp",
        "headers": "{}",
        "enabled": "on",
        "allowed_tools": "",
        "approval_tools": "",
        "timeout_seconds": "60",
    }
    form.update(overrides)
    return form


@pytest.fixture
def config_file(tmp_path, settings):
    path = tmp_path / "mcp.json"
    entry = {
        "command": sys.executable,
        "args": ["-m", "tests.support.mcp_server", "stdio"],
        "env": {"LOCAL_TOKEN": "literal-token-from-the-file"},
    }
    path.write_text(json.dumps({"mcpServers": {"local": entry}}))
    settings.FIMONE_MCP_CONFIG = str(path)
    tool_servers.forget_cached_servers()
    yield path
    tool_servers.forget_cached_servers()


@pytest.fixture
def staff(django_user_model):
    def make(*codenames: str):
        user = django_user_model.objects.create_user(
            username=f"staff{len(codenames)}", password="pw", is_staff=True
        )
        user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
        return user

    return make


def test_the_admin_adds_a_streamable_http_server_only(admin_client):
    form = http_form(transport="stdio", source="file", command="/bin/sh", args='["-c", "id"]')
    response = admin_client.post(ADD_URL, form)
    assert response.status_code == 302, response.content.decode()[:2000]
    row = ToolServer.objects.get(name="docs")
    assert (row.source, row.transport) == ("admin", "http")
    assert not hasattr(row, "command")  # there is nowhere to put a command


def test_no_row_can_be_a_stdio_server_whoever_writes_it():
    with pytest.raises(ValueError, match="configuration file"):
        ToolServer.objects.create(name="sneaky", transport="stdio")


def test_a_file_server_is_listed_with_its_command_and_cannot_be_redefined(
    admin_client, config_file
):
    listing = admin_client.get(LIST_URL)
    assert listing.status_code == 200
    row = ToolServer.objects.get(name="local")
    assert (row.source, row.transport) == ("file", "stdio")
    page = listing.content.decode()
    assert "tests.support.mcp_server" in page and "LOCAL_TOKEN" in page  # shown, read-only
    assert "literal-token-from-the-file" not in page  # an environment value may be a secret
    form = http_form(
        name="local", url="https://evil.example/mcp", command="/bin/sh", allowed_tools="echo"
    )
    response = admin_client.post(change_url(row), form)
    assert response.status_code == 302
    row.refresh_from_db()
    assert (row.transport, row.url, row.allowed_tools) == ("stdio", "", "echo")
    (spec,) = [s for s in tool_servers.configured_servers() if s.name == "local"]
    assert spec.command == sys.executable and spec.allowed_tools == frozenset({"echo"})
    delete = admin_client.post(
        reverse("admin:chat_toolserver_delete", args=[row.pk]), {"post": "yes"}
    )
    assert delete.status_code == 403 and ToolServer.objects.filter(name="local").exists()


def test_a_header_naming_a_variable_off_the_allow_list_is_refused_with_the_reason(admin_client):
    form = http_form(headers=json.dumps({"Authorization": "Bearer ${SECRET_KEY}"}))
    response = admin_client.post(ADD_URL, form)
    assert response.status_code == 200  # the form again
    page = response.content.decode()
    assert "SECRET_KEY" in page and "never sent to another server" in page
    other = http_form(headers=json.dumps({"X-Token": "${HOME}"}))
    page = admin_client.post(ADD_URL, other).content.decode()
    assert "HOME" in page and "FIMONE_SECRET_ENV_ALLOWLIST" in page
    assert not ToolServer.objects.exists()
    allowed = http_form(headers=json.dumps({"Authorization": "Bearer ${DOCS_API_KEY}"}))
    assert admin_client.post(ADD_URL, allowed).status_code == 302


def test_view_only_staff_change_nothing_and_run_no_action(client, staff):
    row = ToolServer.objects.create(name="docs", url="https://mcp.example.com/mcp")
    client.force_login(staff("view_toolserver"))
    assert client.get(change_url(row)).status_code == 200  # may look
    assert client.post(change_url(row), http_form(enabled="")).status_code == 403
    assert client.post(ADD_URL, http_form(name="other")).status_code == 403
    action = {"action": "switch_off", "_selected_action": [row.pk]}
    client.post(LIST_URL, action)
    row.refresh_from_db()
    assert row.enabled and row.url == "https://mcp.example.com/mcp"
    assert list(ToolServer.objects.values_list("name", flat=True)) == ["docs"]


def test_the_connection_needs_its_own_permission(client, staff):
    row = ToolServer.objects.create(name="docs", url="https://mcp.example.com/mcp")
    client.force_login(staff("view_toolserver", "change_toolserver", "add_toolserver"))
    assert client.post(ADD_URL, http_form(name="other")).status_code == 403
    form = http_form(url="https://elsewhere.example/mcp", enabled="", allowed_tools="search")
    assert client.post(change_url(row), form).status_code == 302
    row.refresh_from_db()
    assert row.url == "https://mcp.example.com/mcp" and row.enabled  # not theirs to change
    assert row.allowed_tools == "search"  # the tools are
    client.post(LIST_URL, {"action": "switch_off", "_selected_action": [row.pk]})
    row.refresh_from_db()
    assert row.enabled


def test_with_the_connection_permission_staff_may_switch_a_server_off(client, staff):
    row = ToolServer.objects.create(name="docs", url="https://mcp.example.com/mcp")
    user = staff("view_toolserver", "change_toolserver", "change_tool_server_connection")
    client.force_login(user)
    client.post(LIST_URL, {"action": "switch_off", "_selected_action": [row.pk]})
    row.refresh_from_db()
    assert not row.enabled


@pytest.mark.django_db(transaction=True)
def test_the_api_cannot_create_or_change_a_tool_server(client, user, config_file):
    from chat import services

    client.force_login(user)
    conversation = services.conversation_create(owner=user, title="t")
    tool_servers.configured_servers()  # the file's server has its row
    # What the rows define (their health is written by the listings a request makes).
    defined = [f.name for f in ToolServer._meta.fields if f.editable or f.name == "source"]
    rows = list(ToolServer.objects.values(*defined))
    definition = {"transport": "stdio", "command": "/bin/sh", "args": ["-c", "id"]}
    for path in ("/api/tools/", f"/api/conversations/{conversation.pk}/tools/"):
        for method in (client.post, client.put):
            response = method(path, json.dumps({"name": "evil", **definition}), "application/json")
            assert response.status_code == 405
    switch = {"source": "mcp:local", "enabled": False, "url": "https://evil.example", **definition}
    response = client.patch(
        f"/api/conversations/{conversation.pk}/tools/", json.dumps(switch), "application/json"
    )
    assert response.status_code in (200, 400)  # a switch of this conversation at most
    assert list(ToolServer.objects.values(*defined)) == rows  # no server row made or changed
    (spec,) = [s for s in tool_servers.configured_servers() if s.name == "local"]
    assert spec.command == sys.executable and spec.transport == "stdio"


def test_the_stricter_of_the_file_and_the_admin_wins_also_after_the_row_exists(config_file):
    """RO.12: ``needsApproval`` or ``"disabled": true`` added to the operator's file once the
    server's row exists still holds (the file is the emergency switch); the admin may add
    approvals or switch it off, not take the file's away."""
    entry = json.loads(config_file.read_text())["mcpServers"]["local"]

    def file_says(**changes) -> list:
        config_file.write_text(json.dumps({"mcpServers": {"local": {**entry, **changes}}}))
        tool_servers.forget_cached_servers()
        return [s for s in tool_servers.configured_servers() if s.name == "local"]

    (spec,) = file_says()  # the row is made from this
    assert not spec.needs_approval("echo")
    (spec,) = file_says(needsApproval=["echo"])
    assert spec.needs_approval("echo") and not spec.needs_approval("add")
    row = ToolServer.objects.get(name="local")
    row.approval_tools, row.enabled = "add", True
    row.save()
    (spec,) = file_says(needsApproval=["echo"])
    assert spec.approval_tools == frozenset({"echo", "add"})
    assert file_says(needsApproval=["echo"], disabled=True) == []  # the row says on
    (spec,) = file_says()
    assert spec.approval_tools == frozenset({"add"})
    row.enabled = False
    row.save()
    assert file_says() == []  # the admin's switch still switches it off


def test_test_connection_lists_the_tools_as_checkboxes_and_keeps_the_health(
    admin_client, config_file
):
    """RU.12: the admin's "test connection" starts the file's stdio server (the `mcp`
    package's own), keeps its tools and health; the rules become a checkbox per tool."""
    admin_client.get(LIST_URL)  # the file's server gets its row
    row = ToolServer.objects.get(name="local")
    response = admin_client.post(
        LIST_URL, {"action": "test_connection", "_selected_action": [row.pk]}
    )
    assert any("local answers:" in str(m) for m in get_messages(response.wsgi_request))
    row.refresh_from_db()
    names = {tool["name"] for tool in row.listed_tools}
    assert {"echo", "add"} <= names and row.tool_count == len(names)
    assert row.last_listed_at is not None and not row.last_error

    page = admin_client.get(change_url(row)).content.decode()
    assert 'type="checkbox" name="allowed_tools" value="echo"' in page
    assert 'type="checkbox" name="approval_tools" value="add"' in page
    assert "listed" in page  # the health, read-only
    form = {"enabled": "on", "timeout_seconds": "30"}
    response = admin_client.post(
        change_url(row), {**form, "allowed_tools": ["echo", "add"], "approval_tools": ["add"]}
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    row.refresh_from_db()
    assert (row.allowed_tools, row.approval_tools) == ("add\necho", "add")
    every = admin_client.post(change_url(row), {**form, "allowed_tools": sorted(names)})
    assert every.status_code == 302
    row.refresh_from_db()
    assert row.allowed_tools == ""  # all checked: the tools the server adds later too


def test_test_connection_of_a_missing_program_shows_staff_the_error(
    admin_client, tmp_path, settings
):
    """RU.12: staff read the detail the users are spared, and the row keeps it."""
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"orders": {"command": "/nonexistent/mcp-server"}}}))
    settings.FIMONE_MCP_CONFIG = str(path)
    tool_servers.forget_cached_servers()
    admin_client.get(LIST_URL)
    row = ToolServer.objects.get(name="orders")
    response = admin_client.post(
        LIST_URL, {"action": "test_connection", "_selected_action": [row.pk]}
    )
    assert any("orders does not answer:" in str(m) for m in get_messages(response.wsgi_request))
    row.refresh_from_db()
    assert row.last_error and row.last_error_at is not None
    assert "last error" in admin_client.get(LIST_URL).content.decode()
    tool_servers.forget_cached_servers()
