"""Django in processes of their own, the way a deployment runs it: backends chosen by
environment. Each is a fork of the test process's warm parent (tests/support/server_shell.py,
``ForkedPython``), which has made the imports a fresh Python would: the process sets
Django up with its own environment and connects to the database itself."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tests.support.server_shell import ForkedPython

REPO_ROOT = Path(__file__).resolve().parents[2]


def django_env(data_dir: Path | str, **extra: str) -> dict[str, str]:
    """The environment of a Django subprocess: the caller's, minus any backend choice."""
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings", "FIMONE_DATA_DIR": str(data_dir)})
    env.update(extra)
    return env


@dataclass
class DjangoSubprocesses:
    """Runs Python with Django set up against one shared database (and channel layer)."""

    env: dict[str, str]

    def start(self, code: str, *args: str) -> ForkedPython:
        script = "import django; django.setup()\n" + code
        return ForkedPython(script, *args, env=self.env, cwd=REPO_ROOT)

    def run(self, code: str, *args: str, timeout: float = 120) -> str:
        """Run ``code`` to completion; returns its stdout, fails the test on an error."""
        proc = self.start(code, *args)
        out, err = proc.communicate(timeout=timeout)
        assert proc.returncode == 0, f"subprocess failed:\n{out}\n{err}"
        return out

    def run_parallel(self, code: str, argv_list: list[list[str]], timeout: float = 180) -> list:
        """Start one process per argv at once, wait for all; returns their stdouts."""
        procs = [self.start(code, *argv) for argv in argv_list]
        outs = []
        for proc in procs:
            out, err = proc.communicate(timeout=timeout)
            assert proc.returncode == 0, f"subprocess failed:\n{out}\n{err}"
            outs.append(out)
        return outs
