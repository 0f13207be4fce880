"""A Python process with a live server's settings that runs test code against its database,
started once per server (``LiveServer.manage_shell``).

``manage.py shell -c`` started Python and Django anew for every call: about 1.5 s of CPU,
and the suite made well over a hundred such calls. This process sets Django up once, then
runs each piece of code as the shell would (its models imported, its own namespace), prints
what the code printed and closes its database connections after each call, so the next one
reads the server's latest writes as a fresh process would.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from pathlib import Path

_SCRIPT = r"""
import contextlib, io, json, os, sys, traceback
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()
from django.apps import apps
from django.db import connections

answers = sys.stdout
for line in sys.stdin:
    code = json.loads(line)
    # As `manage.py shell` does: every model under its name.
    namespace = {"__name__": "__main__"}
    namespace.update((model.__name__, model) for model in apps.get_models())
    printed = io.StringIO()
    ok = True
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(code, "<manage_shell>", "exec"), namespace)
    except BaseException:
        ok = False
        printed.write(traceback.format_exc())
    finally:
        connections.close_all()
    answers.write(json.dumps({"ok": ok, "out": printed.getvalue()}) + "\n")
    answers.flush()
"""


class ShellFailed(RuntimeError):
    """The code raised; the message holds what it printed and its traceback."""


class ServerShell:
    def __init__(self, *, env: dict[str, str], cwd: Path) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-c", _SCRIPT],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        self._lock = threading.Lock()  # one call at a time, whichever thread asks

    def alive(self) -> bool:
        return self._process.poll() is None

    def run(self, code: str, timeout: float) -> str:
        """What ``code`` printed; ``ShellFailed`` when it raised."""
        with self._lock:
            timer = threading.Timer(timeout, self._process.kill)
            timer.start()
            try:
                self._process.stdin.write(json.dumps(code) + "\n")
                self._process.stdin.flush()
                line = self._process.stdout.readline()
            finally:
                timer.cancel()
        if not line:
            raise ShellFailed(f"the shell process ended (timeout {timeout} s?) running:\n{code}")
        answer = json.loads(line)
        if not answer["ok"]:
            raise ShellFailed(f"{code}\n---\n{answer['out']}")
        return answer["out"]

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._process.stdin.close()
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
