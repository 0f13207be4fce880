"""The configured tool servers are read again when a row or the file changes, in whichever
process the change was made, and not read again while nothing changed (RD.5)."""

import json

import pytest
from django.core.cache import cache

from chat.models.tool_servers import ToolServer
from chat.tool_servers import pool as tool_servers


@pytest.fixture
def servers_forgotten_around_the_test():
    tool_servers.forget_cached_servers()
    yield
    tool_servers.forget_cached_servers()


@pytest.fixture
def admin_server(db, servers_forgotten_around_the_test) -> ToolServer:
    return ToolServer.objects.create(
        name="search", source=ToolServer.Source.ADMIN, transport="http", url="https://mcp.test/"
    )


def current_names() -> list[str]:
    tool_servers.warm()
    return [spec.name for spec in tool_servers._validated["specs"]]


def test_a_row_saved_is_seen_by_the_next_run_rd_5(admin_server, django_capture_on_commit_callbacks):
    assert current_names() == ["search"]
    admin_server.enabled = False
    with django_capture_on_commit_callbacks(execute=True):
        admin_server.save()
    assert current_names() == []


def test_a_row_deleted_is_seen_by_the_next_run_rd_5(
    admin_server, django_capture_on_commit_callbacks
):
    assert current_names() == ["search"]
    with django_capture_on_commit_callbacks(execute=True):
        admin_server.delete()
    assert current_names() == []


def test_a_change_made_through_another_process_is_seen_rd_5(admin_server):
    # Another process's save: the row changes under this one and the shared generation
    # (Django's cache; Redis when several processes serve) moves on.
    assert current_names() == ["search"]
    ToolServer.objects.filter(pk=admin_server.pk).update(enabled=False)
    cache.set(tool_servers.GENERATION_KEY, "another process's save", timeout=None)
    assert current_names() == []


def test_unchanged_servers_are_not_read_again(admin_server, django_assert_num_queries):
    current_names()
    with django_assert_num_queries(0):
        assert current_names() == ["search"]


def test_a_changed_file_is_read_again(db, tmp_path, settings, servers_forgotten_around_the_test):
    path = tmp_path / "mcp.json"

    def write(names: list[str]) -> None:
        servers = {name: {"type": "http", "url": f"https://{name}.test/"} for name in names}
        path.write_text(json.dumps({"mcpServers": servers}))

    write(["one"])
    settings.FIMONE_MCP_CONFIG = str(path)
    assert current_names() == ["one"]
    write(["one", "second"])  # another size: another stamp
    assert current_names() == ["one", "second"]


class ListedNothing:
    """A pool that has listed no tools yet."""

    def cached_tools(self, specs) -> list:
        return []


def test_the_pages_gauge_reads_unchanged_servers_once_rd_5(
    admin_server, django_assert_num_queries, monkeypatch
):
    # Before any run of this process warmed them: the page's gauge asks for the servers.
    monkeypatch.setattr(tool_servers._pool, "pool", ListedNothing())
    tool_servers.cached_server_tools()
    with django_assert_num_queries(0):
        tool_servers.cached_server_tools()
