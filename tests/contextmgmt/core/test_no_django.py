"""contextmgmt.core is framework-free: importing it pulls in no Django (DESIGN §1)."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
MODULES = [
    "contextmgmt.core",
    "contextmgmt.core.messages",
    "contextmgmt.core.llm",
    "contextmgmt.core.charclass",
    "contextmgmt.core.tokens",
    "contextmgmt.core.compact",
    "contextmgmt.core.prompts",
    "contextmgmt.core.factpatterns",
    "contextmgmt.core.factscan",
    "contextmgmt.core.factcheck",
    "contextmgmt.core.textcut",
    "contextmgmt.core.transcript",
    "contextmgmt.core.summarise",
    "contextmgmt.core.guard",
    "contextmgmt.core.memory",
    "contextmgmt.core.budget",
]


@pytest.mark.parametrize("module", MODULES)
def test_importing_core_module_imports_no_django(module):
    code = (
        f"import sys, importlib; importlib.import_module({module!r}); "
        "print(sorted(m for m in sys.modules if m == 'django' or m.startswith('django.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_the_check_would_notice_django():
    code = "import sys, django; print('django' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "True"
