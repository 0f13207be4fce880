"""Waiting, in a test, until some process or thread is blocked on a file's ``flock``: the
kernel lists the waiters in /proc/locks, which is observable where a sleep is not."""

from __future__ import annotations

import os
import time
from pathlib import Path


def wait_until_someone_waits_on(lock_file: Path, *, timeout: float = 30.0) -> None:
    inode = f":{os.stat(lock_file).st_ino} "
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with Path("/proc/locks").open() as locks:
            if any("->" in line and inode in line for line in locks):
                return
        time.sleep(0.01)
    raise AssertionError(f"nothing waits on {lock_file}")
