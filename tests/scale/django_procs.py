"""Django in subprocesses, the way a deployment runs it: backends chosen by environment."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

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

    def start(self, code: str, *args: str) -> subprocess.Popen:
        script = "import django; django.setup()\n" + code
        return subprocess.Popen(
            [sys.executable, "-c", script, *args],
            cwd=REPO_ROOT,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

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
