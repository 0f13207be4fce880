"""CPU time of each database thread hop, for ``bench/ws_load.py --hop-cpu``.

Python imports ``sitecustomize`` at start-up from the path; ws_load puts this directory on
the server's ``PYTHONPATH`` and names an output directory in ``FIMONE_BENCH_HOP_CPU``. Each
``database_sync_to_async`` call is then timed with ``time.thread_time`` (the CPU of the
thread that ran it, not the wall clock), per function. ``SIGUSR1`` starts the count afresh
(ws_load sends it when the load begins, so the warm-up's imports are left out); at exit
the process writes ``hops.<pid>.json`` if it made any hop. Nothing of this runs unless the
variable is set.

With ``FIMONE_BENCH_HOP_PROFILE`` naming a file as well, the hops also run under
``cProfile`` timed by ``time.thread_time`` (one profile over all of them, reset with the
count; CPU, so a wait for the GIL or the disk is not counted) and the process writes
its ``pstats`` there at exit: where a hop's CPU goes, function by function.
"""

from __future__ import annotations

import atexit
import cProfile
import json
import os
import signal
import time
from collections import defaultdict

_OUT = os.environ.get("FIMONE_BENCH_HOP_CPU")
_PROFILE = os.environ.get("FIMONE_BENCH_HOP_PROFILE")


def _install(out: str) -> None:
    from channels import db

    spent: dict[str, list] = defaultdict(lambda: [0, 0.0])
    original = db.DatabaseSyncToAsync.thread_handler
    profile = [cProfile.Profile(time.thread_time)] if _PROFILE else None

    def timed(self, loop, *args, **kwargs):
        start = time.thread_time()
        if profile:
            profile[0].enable()
        try:
            return original(self, loop, *args, **kwargs)
        finally:
            if profile:
                profile[0].disable()
            func = getattr(self.func, "func", self.func)  # a functools.partial's function
            name = f"{getattr(func, '__module__', '')}.{getattr(func, '__qualname__', func)}"
            entry = spent[name]
            entry[0] += 1
            entry[1] += time.thread_time() - start

    def write() -> None:
        if spent:
            path = os.path.join(out, f"hops.{os.getpid()}.json")
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(dict(spent), handle)
        if profile:
            profile[0].dump_stats(f"{_PROFILE}.{os.getpid()}")

    def restart(*_: object) -> None:
        spent.clear()
        if profile:
            profile[0] = cProfile.Profile(time.thread_time)

    db.DatabaseSyncToAsync.thread_handler = timed
    signal.signal(signal.SIGUSR1, restart)
    atexit.register(write)


if _OUT:
    _install(_OUT)
