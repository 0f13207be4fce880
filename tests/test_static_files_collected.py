"""The test processes' collected static files (tests/support/static_files.py): collected
once, by one process, while the others starting beside it wait and reuse them (RD.6)."""

from __future__ import annotations

import fcntl
import os
import tempfile
import threading
from pathlib import Path

import pytest

from tests.support.lock_waiters import wait_until_someone_waits_on
from tests.support.static_files import collected_static_root

# collectstatic runs once in a subprocess (some 6 s of CPU).
pytestmark = pytest.mark.slow


def test_rd6_a_process_starting_while_another_collects_waits_and_reuses_its_folder(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    (folder,) = [collected_static_root()]  # the one of this checkout, collected here
    (folder / "staticfiles.json").rename(folder / "kept.json")  # as if not collected yet
    lock = os.open(f"{folder}.lock", os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)  # another process is collecting
    found: list[Path] = []
    waiting = threading.Thread(target=lambda: found.append(collected_static_root()))
    waiting.start()
    try:
        wait_until_someone_waits_on(Path(f"{folder}.lock"))
        (folder / "kept.json").rename(folder / "staticfiles.json")  # its collection done
    finally:
        os.close(lock)
        waiting.join(timeout=60)

    assert found == [folder]
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder.name, f"{folder.name}.lock"]
