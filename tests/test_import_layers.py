"""The layer contracts in pyproject.toml (``lint-imports``, run by bin/test) hold, and they
catch an upward import wherever it is written: at module level or inside a function.

Each check runs on a copy of the project's packages in a temporary folder, so the
deliberately wrong import never touches the real tree.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
PACKAGES = ("config", "chat", "contextmgmt", "fimone")


def lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def project_copy(tmp_path) -> Path:
    """The project's packages and its pyproject.toml, copied."""
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def append(path: Path, code: str) -> None:
    path.write_text(path.read_text() + "\n\n" + code + "\n")


def test_the_project_keeps_every_contract():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "code", "broken"),
    [
        # contextmgmt reaching up into chat, at module level.
        (
            "contextmgmt/budget.py",
            "from chat.models import Message  # noqa",
            "contextmgmt is not allowed to import chat",
        ),
        # ... and inside a function, where a subprocess import check cannot see it.
        (
            "contextmgmt/db_memory.py",
            "def _load():\n    from chat.history import load_history\n\n    return load_history",
            "contextmgmt is not allowed to import chat",
        ),
        # the LLM clients reaching up into chat, inside a method-level function.
        (
            "fimone/llm/registry.py",
            "def _runs():\n    import chat.runs\n\n    return chat.runs",
            "fimone.llm is not allowed to import chat",
        ),
        # the pure core reaching into its Django half.
        (
            "contextmgmt/core/tokens.py",
            "def _budget():\n    from contextmgmt.budget import resolve_budget\n\n"
            "    return resolve_budget",
            "contextmgmt.core is not allowed to import contextmgmt.budget",
        ),
        # two siblings that must stay independent.
        (
            "fimone/agent/calls.py",
            "from fimone.llm.offline.model import OfflineLLM  # noqa",
            "fimone.agent is not allowed to import fimone.llm",
        ),
        # the runs reaching into the websocket, an edge only the ASGI wiring imports.
        (
            "chat/runs/events.py",
            "def _frames():\n    from chat.sockets import frames\n\n    return frames",
            "Illegal imports of protected package chat.sockets",
        ),
    ],
    ids=[
        "module-level",
        "function-level",
        "llm-to-chat",
        "core-to-django-half",
        "siblings",
        "runs-to-sockets",
    ],
)
def test_an_upward_import_breaks_a_contract(project_copy, module, code, broken):
    append(project_copy / module, code)
    result = lint_imports(project_copy)
    assert result.returncode != 0
    assert broken in result.stdout, result.stdout


def test_an_import_cycle_breaks_the_acyclic_contract(project_copy):
    # chat.compaction.summaries is imported by chat.runs; importing chat.runs back closes a cycle.
    append(
        project_copy / "chat/compaction/summaries.py", "def _runs():\n    import chat.runs  # noqa"
    )
    result = lint_imports(project_copy)
    assert result.returncode != 0
    assert "No cycles are allowed in chat" in result.stdout, result.stdout
