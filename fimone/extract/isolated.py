"""``extract_document`` in worker processes: a hard time limit and a memory limit.

In the caller's process the time limit is cooperative (checked between pages): one
pathological page runs as long as it runs, a parser's memory is the server's, and its CPU
work competes with the server's threads for one interpreter. Here each extraction runs in
a worker process (``python -m fimone.extract.worker``) started on first use and kept for
the next file (starting one and importing the PDF library costs most of a second); at most
``workers`` run at once per server process, more callers wait for one. A worker gets an
address-space limit, and is killed when it overruns the time limit by ``GRACE_SECONDS``
(the next call starts a fresh one); one that dies (out of memory) is replaced too. It ends
by itself when its parent goes (its stdin closes).

The workers are shared fairly (``FairShares``): every call names its owner (the caller
passes a key, a user's id; this layer knows nothing of users), no owner holds more than
``per_owner`` workers at once (one less than all of them, so one user's slow files always
leave a worker for the others), and a free worker goes to the waiting owner who holds the
fewest, the earliest among equals. A call waits for a worker at most ``QUEUE_FACTOR``
times its own time limit. docs/operations.md ("Round 4") says why.
"""

from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import IO, Any

from .html import HtmlText
from .types import (
    DamagedDocument,
    DocumentTooLarge,
    ExtractedDocument,
    ExtractionError,
    ExtractionTimeout,
    ExtractLimits,
    Heading,
    Page,
    UnsupportedDocument,
)
from .worker import _LENGTH

logger = logging.getLogger(__name__)

GRACE_SECONDS = 5.0
# How long a call may wait for a worker, in multiples of what it may take once it has one.
QUEUE_FACTOR = 2.0
DEFAULT_MEMORY_BYTES = 2 * 1024**3
_ERRORS = {
    cls.__name__: cls
    for cls in (
        ExtractionError,
        UnsupportedDocument,
        DamagedDocument,
        DocumentTooLarge,
        ExtractionTimeout,
    )
}


class _Worker:
    def __init__(self, memory_bytes: int) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "fimone.extract.worker", str(memory_bytes)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        )
        assert self.process.stdin is not None and self.process.stdout is not None  # pipes
        self._to_worker: IO[bytes] = self.process.stdin
        self._from_worker: IO[bytes] = self.process.stdout

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.alive():
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()

    def ask(self, header: dict, data: bytes, deadline: float) -> dict | None:
        """The worker's answer, or None when it died or the deadline passed."""
        body = json.dumps(header).encode()
        try:
            self._to_worker.write(_LENGTH.pack(len(body)) + body + _LENGTH.pack(len(data)))
            self._to_worker.write(data)
            self._to_worker.flush()
        except (BrokenPipeError, OSError):
            return None
        head = self._read(_LENGTH.size, deadline)
        if head is None:
            return None
        answer = self._read(_LENGTH.unpack(head)[0], deadline)
        return None if answer is None else json.loads(answer)

    def _read(self, size: int, deadline: float) -> bytes | None:
        fd = self._from_worker.fileno()
        chunks: list[bytes] = []
        while size > 0:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                return None
            chunk = os.read(fd, min(size, 1 << 20))
            if not chunk:
                return None
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)


class NoWorkerFree(Exception):
    """No worker came free for a call within its wait."""


class FairShares:
    """Who gets the next free worker: the waiting owner who holds the fewest, the earliest
    among equals, and never one who already holds ``per_owner`` (module docstring)."""

    def __init__(self, workers: int, per_owner: int) -> None:
        self._free = workers
        self._per_owner = per_owner
        self._held: Counter[str] = Counter()
        self._waiting: list[tuple[int, str]] = []  # (ticket, owner), oldest first
        self._tickets = 0
        self._changed = threading.Condition()

    @contextmanager
    def share(self, owner: str, *, wait_seconds: float) -> Iterator[None]:
        """Hold one worker for ``owner`` in the ``with`` block; ``NoWorkerFree`` when none
        came within ``wait_seconds``."""
        with self._changed:
            self._tickets += 1
            ticket = (self._tickets, owner)
            self._waiting.append(ticket)
            try:
                if not self._changed.wait_for(lambda: self._next() == ticket, wait_seconds):
                    raise NoWorkerFree
            finally:
                self._waiting.remove(ticket)
                self._changed.notify_all()  # the next in line may be someone else now
            self._free -= 1
            self._held[owner] += 1
        try:
            yield
        finally:
            with self._changed:
                self._free += 1
                self._held[owner] -= 1
                if not self._held[owner]:
                    del self._held[owner]
                self._changed.notify_all()

    def _next(self) -> tuple[int, str] | None:
        """The waiting call a free worker goes to, or None (none free, or no one may)."""
        if self._free <= 0:
            return None
        allowed = [t for t in self._waiting if self._held[t[1]] < self._per_owner]
        return min(allowed, key=lambda t: (self._held[t[1]], t[0]), default=None)


class ExtractionPool:
    """Worker processes of one server process (module docstring)."""

    def __init__(
        self,
        *,
        workers: int = 2,
        memory_bytes: int = DEFAULT_MEMORY_BYTES,
        per_owner: int | None = None,
    ) -> None:
        self.memory_bytes = memory_bytes
        workers = max(1, workers)
        if per_owner is None:
            per_owner = max(1, workers - 1)
        self._shares = FairShares(workers, max(1, per_owner))
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def extract(
        self,
        data: bytes,
        *,
        filename: str | None = None,
        mime_type: str | None = None,
        limits: ExtractLimits | None = None,
        owner: str = "",
    ) -> ExtractedDocument:
        """As ``extract_document``, as ``owner``'s share of the workers; blocks the calling
        thread (call it from a thread)."""
        limits = limits or ExtractLimits()
        header = {"filename": filename, "mime_type": mime_type, "limits": asdict(limits)}
        reply = self._ask(header, data, limits.seconds, what="the document", owner=owner)
        return _document(reply["document"])

    def html(
        self,
        markup: bytes,
        *,
        charset: str | None = None,
        url: str | None = None,
        raw: bool = False,
        seconds: float = 15.0,
        owner: str = "",
    ) -> HtmlText:
        """As ``fimone.extract.html.html_text``, as ``owner``'s share; blocks the thread."""
        header = {"kind": "html", "charset": charset, "url": url, "raw": raw}
        page = self._ask(header, markup, seconds, what="the page", owner=owner)["page"]
        return HtmlText(page["text"], page["title"], tuple(page["notes"]))

    def _ask(self, header: dict, data: bytes, seconds: float, *, what: str, owner: str) -> dict:
        queued = QUEUE_FACTOR * (seconds + GRACE_SECONDS)
        try:
            with self._shares.share(owner, wait_seconds=queued):
                return self._answer(header, data, seconds, what=what)
        except NoWorkerFree:
            logger.warning("extraction waited %.0f s for a worker: refused", queued)
            raise ExtractionTimeout(
                f"Reading {what} took longer than {seconds:g} seconds: every reader was busy.",
                seconds=seconds,
            ) from None

    def _answer(self, header: dict, data: bytes, seconds: float, *, what: str) -> dict:
        worker = self._take()
        started = time.monotonic()
        reply = worker.ask(header, data, started + seconds + GRACE_SECONDS)
        if reply is None or not worker.alive():
            worker.kill()
        else:
            with self._lock:
                self._idle.append(worker)
        if reply is None:
            elapsed = time.monotonic() - started
            logger.warning("extraction worker gave no answer (%.1f s): killed", elapsed)
            if elapsed >= seconds:
                raise ExtractionTimeout(
                    f"Reading {what} took longer than {seconds:g} seconds.", seconds=seconds
                )
            raise DocumentTooLarge(f"Reading {what} needs more memory than allowed.")
        if "error" in reply:
            cls = _ERRORS.get(reply["error"], ExtractionError)
            raise cls(reply["message"], code=reply["code"])
        return reply

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()

    def _take(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive():
                    return worker
                worker.kill()
        return _Worker(self.memory_bytes)


def _document(raw: dict[str, Any]) -> ExtractedDocument:
    return ExtractedDocument(
        **{
            **raw,
            "pages": tuple(Page(**page) for page in raw["pages"]),
            "headings": tuple(Heading(**heading) for heading in raw["headings"]),
            "warnings": tuple(raw["warnings"]),
        }
    )
