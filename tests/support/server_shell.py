"""A Python process with a live server's settings that runs test code against its database,
started once per server (``LiveServer.manage_shell``).

``manage.py shell -c`` started Python and Django anew for every call: about 1.5 s of CPU,
and the suite made well over a hundred such calls. This process sets Django up once, then
runs each piece of code as the shell would (its models imported, its own namespace), prints
what the code printed and closes its database connections after each call, so the next one
reads the server's latest writes as a fresh process would.

Each shell is a fork of one warm parent per test process that has imported Django and the
``openai`` package (most of a fresh Python's start with Django set up): a new server's
first call costs the settings and the models, not the imports (docs/testing.md, "How long
it takes").
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

# The warm parent: Python with the heavy libraries Django's setup imports (the ``openai``
# package alone is most of a shell's start, some 2 s of CPU) but no settings. Each shell is a
# fork of it that takes its server's environment, sets Django up and serves one connection.
_ZYGOTE = r"""
import json, os, signal, socket, sys
import django, openai  # noqa: F401 - imported once, for every shell
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # shells that end are reaped by the kernel
listener = socket.socket(socket.AF_UNIX)
listener.bind(sys.argv[1])
listener.listen(16)
sys.stdout.write("ready\n")
sys.stdout.flush()
while True:
    connection, _ = listener.accept()
    if os.fork():
        connection.close()
        continue
    listener.close()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.setsid()
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # what code prints goes to its answer
    stream = connection.makefile("rw", encoding="utf-8", newline="\n")
    request = json.loads(stream.readline())
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    stream.write(json.dumps(os.getpid()) + "\n")
    stream.flush()
    sys.stdin = stream
    sys.argv = ["-c"]
    exec(compile(request["script"], "<server_shell>", "exec"), {"__name__": "__main__"})
    os._exit(0)
"""

_SCRIPT = r"""
import contextlib, io, json, os, sys, traceback
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()
from django.apps import apps
from django.db import connections

answers = sys.stdin  # the connection: questions in, answers out
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


class _Zygote:
    """The warm parent process of this test process's shells, started at the first."""

    def __init__(self, cwd: Path) -> None:
        self._folder = Path(tempfile.mkdtemp(prefix="fimone-shells-"))
        self.path = str(self._folder / "zygote.sock")
        self._process = subprocess.Popen(
            [sys.executable, "-c", _ZYGOTE, self.path],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        if self._process.stdout.readline().strip() != "ready":
            raise RuntimeError("the shells' parent process did not start")

    def alive(self) -> bool:
        return self._process.poll() is None

    def close(self) -> None:
        self._process.kill()
        self._process.wait()
        shutil.rmtree(self._folder, ignore_errors=True)


_zygotes: dict[Path, _Zygote] = {}


@atexit.register
def _close_zygotes() -> None:
    for zygote in _zygotes.values():
        zygote.close()
    _zygotes.clear()


def _zygote(cwd: Path) -> _Zygote:
    zygote = _zygotes.get(cwd)
    if zygote is None or not zygote.alive():
        zygote = _zygotes[cwd] = _Zygote(cwd)
    return zygote


# A fork's script when it stands for ``python -c CODE ARGS``: what it prints goes to two
# files, and its exit status comes back over the connection once it is done.
_ONE_PROGRAM = r"""
import json, os, sys, traceback
request = json.loads(sys.stdin.readline())
for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
    os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
sys.argv = ["-c", *request["args"]]
status = 0
try:
    exec(compile(request["code"], "<string>", "exec"), {"__name__": "__main__"})
except SystemExit as exc:
    status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
except BaseException:
    traceback.print_exc()
    status = 1
sys.stdout.flush()
sys.stderr.flush()
sys.stdin.write(json.dumps(status) + "\n")
sys.stdin.flush()
os._exit(status)
"""


class ForkedPython:
    """``python -c code *args`` as a fork of the warm parent: a process of its own, with
    ``env`` for its environment, that skips the imports a fresh Python makes (some two
    seconds of CPU). ``communicate`` and ``returncode`` as a ``subprocess.Popen``'s."""

    def __init__(self, code: str, *args: str, env: dict[str, str], cwd: Path) -> None:
        self._folder = Path(tempfile.mkdtemp(prefix="fimone-forked-"))
        self._socket = socket.socket(socket.AF_UNIX)
        self._socket.connect(_zygote(cwd).path)
        self._stream = self._socket.makefile("rw", encoding="utf-8", newline="\n")
        start = {"env": env, "cwd": str(cwd), "script": _ONE_PROGRAM}
        self._stream.write(json.dumps(start) + "\n")
        self._stream.flush()
        self.pid = json.loads(self._stream.readline())
        program = {
            "code": code,
            "args": list(args),
            "stdout": str(self._folder / "stdout"),
            "stderr": str(self._folder / "stderr"),
        }
        self._stream.write(json.dumps(program) + "\n")
        self._stream.flush()
        self.returncode: int | None = None

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        """Wait for the end; what it printed to stdout and stderr. Killed after
        ``timeout`` seconds (``subprocess.TimeoutExpired``)."""
        self._socket.settimeout(timeout)
        try:
            line = self._stream.readline()
        except TimeoutError:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            raise subprocess.TimeoutExpired(f"forked python {self.pid}", timeout or 0) from None
        finally:
            with contextlib.suppress(OSError, ValueError):
                self._stream.close()
                self._socket.close()
        self.returncode = json.loads(line) if line else -signal.SIGKILL
        out, err = (
            (self._folder / name).read_text(errors="replace")
            if (self._folder / name).exists()
            else ""
            for name in ("stdout", "stderr")
        )
        shutil.rmtree(self._folder, ignore_errors=True)
        return out, err


class ShellFailed(RuntimeError):
    """The code raised; the message holds what it printed and its traceback."""


class ServerShell:
    def __init__(self, *, env: dict[str, str], cwd: Path) -> None:
        self._socket = socket.socket(socket.AF_UNIX)
        self._socket.connect(_zygote(cwd).path)
        self._stream = self._socket.makefile("rw", encoding="utf-8", newline="\n")
        request = {"env": env, "cwd": str(cwd), "script": _SCRIPT}
        self._stream.write(json.dumps(request) + "\n")
        self._stream.flush()
        self._pid = json.loads(self._stream.readline())
        self._lock = threading.Lock()  # one call at a time, whichever thread asks

    def alive(self) -> bool:
        try:
            os.kill(self._pid, 0)
        except OSError:
            return False
        return not self._stream.closed

    def _kill(self) -> None:
        with contextlib.suppress(OSError):
            os.kill(self._pid, signal.SIGKILL)

    def run(self, code: str, timeout: float) -> str:
        """What ``code`` printed; ``ShellFailed`` when it raised."""
        with self._lock:
            timer = threading.Timer(timeout, self._kill)
            timer.start()
            try:
                self._stream.write(json.dumps(code) + "\n")
                self._stream.flush()
                line = self._stream.readline()
            finally:
                timer.cancel()
        if not line:
            raise ShellFailed(f"the shell process ended (timeout {timeout} s?) running:\n{code}")
        answer = json.loads(line)
        if not answer["ok"]:
            raise ShellFailed(f"{code}\n---\n{answer['out']}")
        return answer["out"]

    def close(self) -> None:
        """End of input: the shell's loop ends and its process exits."""
        with contextlib.suppress(OSError, ValueError):
            self._stream.close()
            self._socket.close()
