"""The static files as ``collectstatic`` leaves them (hashed names, compressed copies, a
manifest), collected once per version of the sources and shared by test sessions: under
DEBUG=False every page names its scripts by the manifest, in this process and in the live
daphnes alike (config/static_files.py)."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import django
import whitenoise

ROOT = Path(__file__).resolve().parents[2]


def _sources_key() -> str:
    digest = hashlib.sha256(f"{django.__version__} {whitenoise.__file__}".encode())
    for path in sorted([*(ROOT / "static").rglob("*"), ROOT / "config" / "static_files.py"]):
        if path.is_file():
            digest.update(str(path.relative_to(ROOT)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def collected_static_root() -> Path:
    """A STATIC_ROOT collected from this checkout's sources (reused while they are the
    same; collected into a scratch folder and renamed, so parallel sessions never see half
    of one)."""
    target = Path(tempfile.gettempdir()) / f"fimone-static-{_sources_key()}"
    if (target / "staticfiles.json").exists():
        return target
    # One process collects (some 6 s of CPU) while the others starting beside it, the
    # workers of a run, wait for it and reuse its folder.
    lock = os.open(f"{target}.lock", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / "staticfiles.json").exists():
            _collect_into(target)
    finally:
        os.close(lock)
    return target


def _collect_into(target: Path) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="fimone-static-", dir=target.parent))
    env = {
        **os.environ,
        "STATIC_ROOT": str(scratch),
        "FIMONE_DATA_DIR": str(scratch / "data"),
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"],
        cwd=ROOT,
        env=env,
        check=True,
    )
    shutil.rmtree(scratch / "data", ignore_errors=True)
    try:
        scratch.rename(target)
    except OSError:  # another session got there first
        shutil.rmtree(scratch, ignore_errors=True)
