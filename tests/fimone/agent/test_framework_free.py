"""fimone.agent is framework-free (issue 6, DESIGN §1): no Django, no chat app, no ORM."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_importing_the_agent_imports_no_django_and_no_project_app():
    code = (
        "import sys, fimone.agent, fimone.agent.dag, fimone.agent.react, fimone.agent.tools\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'chat', 'channels')"
        " or m in ('contextmgmt.models', 'contextmgmt.db_memory', 'contextmgmt.budget'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == ""
