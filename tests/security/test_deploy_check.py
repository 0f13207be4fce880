"""``manage.py check --deploy`` is clean with production settings (issue 9).

Run in a subprocess so the settings module reads the production environment from scratch:
DEBUG off, a long random SECRET_KEY, HSTS, secure cookies and the SSL redirect, all through
the environment variables documented in the README. And the other way round: the development
defaults do raise the deploy warnings, so the check is not silently passing everything.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PRODUCTION = {
    "DEBUG": "false",
    "SECRET_KEY": secrets.token_urlsafe(64),
    "ALLOWED_HOSTS": "chat.example.com",
    "CSRF_TRUSTED_ORIGINS": "https://chat.example.com",
    "SECURE_SSL_REDIRECT": "true",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "SECURE_HSTS_PRELOAD": "true",
    "SESSION_COOKIE_SECURE": "true",
    "CSRF_COOKIE_SECURE": "true",
    "BEHIND_TLS_PROXY": "true",
}


def _check(tmp_path, extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in PRODUCTION and not k.startswith(("LLM_", "FAST_LLM_"))
    }
    env.update(FIMONE_DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="config.settings", **extra)
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_check_deploy_is_clean_with_production_settings(tmp_path):
    result = _check(tmp_path, PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


@pytest.mark.slow
def test_check_deploy_flags_the_development_defaults(tmp_path):
    result = _check(tmp_path, {})
    assert result.returncode != 0
    output = result.stdout + result.stderr
    for check_id in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert check_id in output  # HSTS, SSL redirect, session and CSRF cookies
