"""Event-loop lag monitor: how late a periodic wake-up is, i.e. how long the loop was stalled.

A task sleeps ``interval`` seconds again and again; when it wakes later than asked, nothing
else could run on the loop meanwhile — every socket of the process waited that long. Stalls
over ``threshold`` are logged at debug level; the largest one is kept for benchmarks, and
with ``report_path`` the figures are written there as JSON about once a second (a bench
reads the file of a daphne it started).

A stall has three causes: the loop's thread computing (code that should not run on the
loop), worker threads of this process holding the GIL meanwhile, or the process not
running at all (the machine's other processes). Each late wake-up also records the CPU time
the loop's thread and the whole process spent over that interval, so a bench on a busy
machine can tell them apart. The latest stalls over the threshold are kept with their
wall-clock time, so a bench can take the largest within each of its phases.

Full garbage collections are recorded too (when, how long, how many objects they freed):
one walks every tracked object, so it is a stall of its own (docs/operations.md).

The ASGI application starts one monitor on its first connection when
``FIMONE_LOOP_MONITOR_INTERVAL_MS`` is above 0 (see docs/operations.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import time
from collections import deque
from pathlib import Path
from typing import Any

from django.conf import settings

logger = logging.getLogger("fimone.loop")

# Stalls over the threshold kept for the report (the latest ones).
RECENT_STALLS = 4096
# Full garbage collections kept for the report (the latest ones).
RECENT_COLLECTIONS = 1024


class LoopLagMonitor:
    def __init__(
        self,
        *,
        interval: float = 0.1,
        threshold: float = 0.05,
        report_path: str | os.PathLike[str] | None = None,
    ) -> None:
        self.interval = interval
        self.threshold = threshold
        self.report_path = Path(report_path) if report_path else None
        self._task: asyncio.Task[None] | None = None
        self.reset()

    def reset(self) -> None:
        """Forget what was measured so far (a bench's warm-up)."""
        self.max_stall = 0.0  # seconds
        self.max_busy = 0.0  # seconds of the loop thread's CPU within one late interval
        self.stalls = 0  # wake-ups later than the threshold
        self.samples = 0
        # (wall-clock time, stall ms, loop-thread CPU ms, process CPU ms) of the latest late
        # wake-ups; the CPU figures cover the stall at most.
        self.recent: deque[tuple[float, ...]] = deque(maxlen=RECENT_STALLS)
        # (wall-clock time, ms, CPU ms of the collecting thread, objects freed) of the latest
        # full garbage collections.
        self.collections: deque[tuple[float, ...]] = deque(maxlen=RECENT_COLLECTIONS)
        self._collection_started: tuple[float, float] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> LoopLagMonitor:
        """Start measuring on the running loop (idempotent)."""
        if not self.running:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="loop-lag")
            if self._on_collection not in gc.callbacks:
                gc.callbacks.append(self._on_collection)
        return self

    async def stop(self) -> None:
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(self._on_collection)
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._write_report()

    def figures(self) -> dict[str, Any]:
        return {
            "max_stall_ms": round(self.max_stall * 1000, 3),
            "max_busy_stall_ms": round(self.max_busy * 1000, 3),
            "stalls_over_threshold": self.stalls,
            "threshold_ms": round(self.threshold * 1000, 3),
            "interval_ms": round(self.interval * 1000, 3),
            "samples": self.samples,
            "recent_stalls": [list(stall) for stall in self.recent],
            "full_collections": [list(c) for c in self.collections],
        }

    def _on_collection(self, phase: str, info: dict[str, int]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._collection_started = (time.perf_counter(), time.thread_time())
        elif self._collection_started is not None:
            (wall, cpu), self._collection_started = self._collection_started, None
            self.collections.append(
                (
                    round(time.time(), 3),
                    round((time.perf_counter() - wall) * 1000, 3),
                    round((time.thread_time() - cpu) * 1000, 3),
                    info.get("collected", 0),
                )
            )

    def record(self, late: float, busy: float | None = None, process: float | None = None) -> None:
        """Count one wake-up that came ``late`` seconds after it was due; ``busy`` and
        ``process`` are the CPU time the loop's thread and the whole process spent since the
        previous wake-up (None: not measured)."""
        self.samples += 1
        if late > self.max_stall:
            self.max_stall = late
        if late > self.threshold:
            self.stalls += 1
            # The CPU of a late interval counts only up to the stall: the rest was the sleep.
            spent = min(busy, late) if busy is not None else late
            if spent > self.max_busy:
                self.max_busy = spent
            ran = min(process, late) if process is not None else spent
            self.recent.append(
                (
                    round(time.time(), 3),
                    round(late * 1000, 3),
                    round(spent * 1000, 3),
                    round(ran * 1000, 3),
                )
            )
            logger.debug(
                "event loop stalled for %.1f ms (%.1f ms computing)", late * 1000, spent * 1000
            )

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        last_report = loop.time()
        while True:
            due = loop.time() + self.interval
            cpu, process = time.thread_time(), time.process_time()
            await asyncio.sleep(self.interval)
            now = loop.time()
            self.record(
                max(0.0, now - due), time.thread_time() - cpu, time.process_time() - process
            )
            if self.report_path is not None and now - last_report >= 1.0:
                last_report = now
                self._write_report()

    def _write_report(self) -> None:
        if self.report_path is None:
            return
        tmp = self.report_path.with_name(self.report_path.name + ".tmp")
        try:
            tmp.write_text(json.dumps(self.figures()), encoding="utf-8")
            os.replace(tmp, self.report_path)
        except OSError:
            logger.warning("cannot write the loop-lag report to %s", self.report_path)


class MonitoredApp:
    """An ASGI app that starts a LoopLagMonitor on the serving loop at its first call."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.monitor: LoopLagMonitor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # one serving loop in daphne; tests may bring others
            self._loop = loop
            self.monitor = monitor_from_settings()
            if self.monitor is not None:
                self.monitor.start()
        return await self.app(scope, receive, send)


def monitor_from_settings() -> LoopLagMonitor | None:
    """A monitor configured by the Django settings, or None when it is switched off."""
    interval_ms = float(getattr(settings, "FIMONE_LOOP_MONITOR_INTERVAL_MS", 0) or 0)
    if interval_ms <= 0:
        return None
    return LoopLagMonitor(
        interval=interval_ms / 1000,
        threshold=float(getattr(settings, "FIMONE_LOOP_STALL_LOG_MS", 50)) / 1000,
        report_path=getattr(settings, "FIMONE_LOOP_MONITOR_REPORT", "") or None,
    )
