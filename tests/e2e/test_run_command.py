"""The README's run command: `bin/run` on a fresh data folder serves the app on
loopback, creates the admin once, and the admin can edit a ModelConfig (RW.2, R5.1).

Each start of `bin/run` costs some 20 s of CPU (six Django commands, then daphne): the
module starts it twice, fresh and again on the same folder, and its tests run on one
worker (``xdist_group``), so that neither start is made twice."""

from __future__ import annotations

import contextlib
import http.cookiejar
import os
import re
import signal
import subprocess
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.live_server import free_port, server_env

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("bin-run")]

ROOT = Path(__file__).resolve().parents[2]


class Browser:
    """A cookie-keeping HTTP client that submits Django forms with their CSRF token."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def get(self, path: str) -> tuple[int, str]:
        with self.opener.open(self.base_url + path, timeout=30) as response:
            return response.status, response.read().decode()

    def post_form(self, path: str, fields: dict[str, str]) -> tuple[int, str, str]:
        token = next(c.value for c in self.jar if c.name == "csrftoken")
        data = urllib.parse.urlencode({"csrfmiddlewaretoken": token, **fields}).encode()
        request = urllib.request.Request(
            self.base_url + path, data=data, headers={"Referer": self.base_url + path}
        )
        with self.opener.open(request, timeout=30) as response:
            return response.status, response.geturl(), response.read().decode()


def wait_for_http(url: str, process: subprocess.Popen, deadline: float = 240.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if process.poll() is not None:
            raise AssertionError(f"bin/run exited with {process.returncode}")
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except OSError:
            time.sleep(0.05)  # daphne answering is noticed within 50 ms
    raise AssertionError(f"{url} did not answer within {deadline} s")


def own_static(data_dir: Path, port: int) -> dict[str, str]:
    """bin/run collects the static files: into a folder of its own, never into the one the
    test session's other servers are serving while it writes."""
    return {"FIMONE_PORT": str(port), "STATIC_ROOT": str(data_dir.parent / "staticfiles")}


@dataclass(frozen=True)
class Started:
    """A `bin/run` serving: its address, what it printed until then, its process (daphne,
    which bin/run execs) and the file its output goes to."""

    base_url: str
    printed: str
    process: subprocess.Popen
    log_path: Path


@contextlib.contextmanager
def bin_run(data_dir: Path, log_path: Path):
    """Start `bin/run` as the README says; yield it once it serves (``Started``); stop it."""
    port = free_port()
    env = server_env(data_dir, own_static(data_dir, port))
    env.pop("FIMONE_ADMIN_PASSWORD", None)  # the generated-password path, as on a fresh clone
    with log_path.open("w+") as log:
        process = subprocess.Popen(
            ["bash", "bin/run"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # bin/run execs daphne: stop the whole group afterwards
        )
        try:
            try:
                wait_for_http(f"http://127.0.0.1:{port}/accounts/login/", process)
            except AssertionError as failed:
                raise AssertionError(
                    f"{failed}; it printed:\n{log_path.read_text()[-4000:]}"
                ) from failed
            log.seek(0)
            yield Started(f"http://127.0.0.1:{port}", log.read(), process, log_path)
        finally:
            with contextlib.suppress(ProcessLookupError):  # a test may have stopped it
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("bin-run") / "data"


@pytest.fixture(scope="module")
def first_start(data_dir, tmp_path_factory):
    """``bin/run`` on a fresh data folder, serving while the module's tests run."""
    with bin_run(data_dir, tmp_path_factory.mktemp("bin-run-log") / "first.log") as app:
        yield app


@pytest.fixture(scope="module")
def second_start(first_start, data_dir, tmp_path_factory):
    """``bin/run`` again on the first start's folder, as a restart: it skips the migrations
    a fresh folder runs. The last test of the module stops it with a SIGTERM."""
    with bin_run(data_dir, tmp_path_factory.mktemp("bin-run-log") / "second.log") as app:
        yield app


def test_bin_run_serves_the_app_and_the_admin_edits_a_model_config(first_start):
    base_url, output = first_start.base_url, first_start.printed
    password = re.search(r"password[^\n]*?:\s*(\S+)", output, re.IGNORECASE)
    assert password, f"bin/run printed no admin password:\n{output}"

    browser = Browser(base_url)
    status, _ = browser.get("/admin/login/")
    assert status == 200
    status, url, _ = browser.post_form(
        "/admin/login/?next=/admin/",
        {"username": "admin", "password": password.group(1), "next": "/admin/"},
    )
    assert url.endswith("/admin/"), "admin login with the printed password failed"

    browser.get("/admin/contextmgmt/modelconfig/add/")
    fields = {
        "name": "Local vLLM",
        "model": "qwen2.5-7b-instruct",
        "role": "main",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key_env": "VLLM_API_KEY",
        "context_size": "32000",
        "max_output_tokens": "8000",
        "supports_vision": "on",
        "is_active": "on",
        # The provider profile as the add form shows it (a browser submits the defaults).
        "profile_auto": "on",
        "token_limit_param": "max_tokens",
        "send_temperature": "on",
        "stream_usage": "on",
        "stream": "on",
    }
    status, url, body = browser.post_form("/admin/contextmgmt/modelconfig/add/", fields)
    assert url.endswith("/admin/contextmgmt/modelconfig/"), body[:2000]
    _, listing = browser.get("/admin/contextmgmt/modelconfig/")
    assert "Local vLLM" in listing
    assert "20,000" in listing or "20000" in listing  # usable input: 32,000 − 8,000 − 4,000

    # Nonsense is refused with a clear message, and nothing is saved.
    browser.get("/admin/contextmgmt/modelconfig/add/")
    bad = {**fields, "name": "Broken", "max_output_tokens": "40000", "is_active": ""}
    _, url, body = browser.post_form("/admin/contextmgmt/modelconfig/add/", bad)
    assert url.endswith("/add/")
    assert "smaller than the context size" in body
    _, listing = browser.get("/admin/contextmgmt/modelconfig/")
    assert "Broken" not in listing


def test_bin_run_prints_the_generated_password_only_on_first_start(first_start, second_start):
    first = first_start.printed
    assert re.search(r"with password: \S+", first)
    assert "http://127.0.0.1:" in first
    assert "password" not in second_start.printed.lower()
    status, _ = Browser(second_start.base_url).get("/accounts/login/")
    assert status == 200


def test_bin_run_cleans_uploads_and_hands_sigterm_to_daphne_which_drains(second_start):
    """RO.1: a SIGTERM sent to bin/run's own pid (not its group) reaches daphne, which
    drains (its log says so) and exits; the start-up ran cleanup_uploads."""
    assert "unsent upload(s) older than 24 hours" in second_start.printed
    second_start.process.send_signal(signal.SIGTERM)
    assert second_start.process.wait(timeout=30) is not None
    output = second_start.log_path.read_text()
    assert "draining: 0 run(s) running" in output and "drained" in output
