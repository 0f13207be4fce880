"""The live-server fixture itself: a real daphne that answers, survives restarts and kills."""

import json
import urllib.request

import pytest


def _get(url: str, cookie: str = "") -> int:
    request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status


@pytest.mark.slow
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
