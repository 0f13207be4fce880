import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_system_checks_pass():
    call_command("check")


@pytest.mark.django_db
def test_migrations_are_complete():
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


def test_a_start_without_a_dot_env_logs_nothing_about_it(tmp_path):
    """A fresh checkout has no .env: starting says nothing about a missing one (RU.9).

    daphne configures logging before it imports the settings, as this subprocess does."""
    repo = Path(__file__).resolve().parent.parent
    if (repo / ".env").exists():
        pytest.skip("this checkout has a .env file")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import logging; logging.basicConfig(level=logging.INFO); import config.settings",
        ],
        cwd=repo,
        env={"PATH": os.environ["PATH"], "FIMONE_DATA_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "/.env" not in done.stdout + done.stderr
