"""Django for a bench script: fimone's settings, a fresh data directory, its migrations.

Each bench starts from an empty SQLite database of its own, so figures never depend on what
an earlier run left behind. ``env`` adds settings a bench needs (read at call time).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup_django(prefix: str = "fimone-bench-", **env: str) -> str:
    """Set Django up on a new data directory and migrate it; returns the directory."""
    data_dir = tempfile.mkdtemp(prefix=prefix)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["FIMONE_DATA_DIR"] = data_dir
    os.environ.setdefault("LOG_LEVEL", "ERROR")
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return data_dir
