"""The live-server fixture itself: a real daphne that answers, survives restarts and kills."""

import json
import urllib.error
import urllib.request

import pytest

from tests.support.server_shell import ShellFailed


def _get(url: str, cookie: str = "") -> int:
    request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status


@pytest.mark.slow
@pytest.mark.own_server  # kills its daphne and counts every user in its database
def test_live_daphne_serves_login_page_and_keeps_data_across_kill(live_daphne):
    assert _get(live_daphne.base_url + "/admin/login/") == 200
    assert live_daphne.session_cookie

    live_daphne.restart(hard=True)  # SIGKILL, then start on the same port and data

    assert _get(live_daphne.base_url + "/admin/login/") == 200
    out = live_daphne.manage_shell(
        "import json; from django.contrib.auth import get_user_model;"
        "print(json.dumps(list(get_user_model().objects.values_list('username', flat=True))))"
    )
    assert json.loads(out.strip().splitlines()[-1]) == [live_daphne.username]


@pytest.mark.slow
def test_a_shared_daphne_gives_each_test_a_user_who_sees_only_their_own_chats(
    shared_live_servers,
):
    first = shared_live_servers.user_server({})
    second = shared_live_servers.user_server({})
    assert (first.port, first.data_dir) == (second.port, second.data_dir)
    assert first.username != second.username
    assert first.session_cookie != second.session_cookie

    made = first.api("POST", "/api/conversations/", {"title": "First's own"})
    assert made["id"] in [c["id"] for c in first.api("GET", "/api/conversations/")["conversations"]]
    assert second.api("GET", "/api/conversations/")["conversations"] == []
    with pytest.raises(urllib.error.HTTPError) as refused:
        second.api("GET", f"/api/conversations/{made['id']}/")
    assert refused.value.code == 404

    # The process is everyone's: a test that must stop it asks for a server of its own.
    for stop in (first.stop, first.kill, first.restart):
        with pytest.raises(RuntimeError, match="own_server"):
            stop()
    assert _get(second.base_url + "/accounts/login/") == 200


@pytest.mark.slow
def test_a_group_of_tests_shares_a_server_that_no_other_test_gets(shared_live_servers):
    everyone = shared_live_servers.user_server({})
    first = shared_live_servers.user_server({}, group="a module's tests")
    second = shared_live_servers.user_server({}, group="a module's tests")
    assert first.port == second.port != everyone.port
    assert first.username != second.username

    other = shared_live_servers.user_server({}, group="the next module's tests")
    assert other.port not in (first.port, everyone.port)
    assert first.proc.poll() is not None  # the last group's tests are done: closed
    assert everyone.proc.poll() is None
    assert shared_live_servers.user_server({}).port == everyone.port


@pytest.mark.slow
def test_a_browser_test_on_live_daphne_gets_a_shared_server_and_a_user_of_its_own(
    live_daphne, shared_live_servers
):
    assert live_daphne.username != "tester"
    assert live_daphne.api("GET", "/api/conversations/")["conversations"] == []  # logged in
    other = shared_live_servers.user_server({})
    assert other.port == live_daphne.port
    assert other.username != live_daphne.username


@pytest.mark.slow
def test_manage_shell_runs_code_in_one_process_that_reads_the_servers_latest_writes(
    live_daphne,
):
    """One shell process per server (tests/support/server_shell.py) behaves as a fresh
    ``manage.py shell -c`` for every call: models by name, a namespace of its own, the
    server's writes made between two calls seen, a failure raised with its traceback."""
    owner = live_daphne.username
    count = f"print(Conversation.objects.filter(owner__username={owner!r}).count(), os.getpid())"
    with pytest.raises(ShellFailed, match="NameError: name 'os' is not defined"):
        live_daphne.manage_shell(count)  # nothing left over from an earlier call either
    before, pid = live_daphne.manage_shell("import os\n" + count).split()

    live_daphne.api("POST", "/api/conversations/", {"title": "made by the server"})

    after, same_pid = live_daphne.manage_shell("import os\n" + count).split()
    assert (int(before), int(after)) == (0, 1)
    assert same_pid == pid  # no new process per call
