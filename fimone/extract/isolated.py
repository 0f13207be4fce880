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
from dataclasses import asdict
from typing import Any

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
            self.process.stdin.write(_LENGTH.pack(len(body)) + body + _LENGTH.pack(len(data)))
            self.process.stdin.write(data)
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            return None
        head = self._read(_LENGTH.size, deadline)
        if head is None:
            return None
        body = self._read(_LENGTH.unpack(head)[0], deadline)
        return None if body is None else json.loads(body)

    def _read(self, size: int, deadline: float) -> bytes | None:
        fd = self.process.stdout.fileno()
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


class ExtractionPool:
    """Worker processes of one server process (module docstring)."""

    def __init__(self, *, workers: int = 2, memory_bytes: int = DEFAULT_MEMORY_BYTES) -> None:
        self.memory_bytes = memory_bytes
        self._slots = threading.BoundedSemaphore(max(1, workers))
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def extract(
        self,
        data: bytes,
        *,
        filename: str | None = None,
        mime_type: str | None = None,
        limits: ExtractLimits | None = None,
    ) -> ExtractedDocument:
        """As ``extract_document``; blocks the calling thread (call it from a thread)."""
        limits = limits or ExtractLimits()
        header = {"filename": filename, "mime_type": mime_type, "limits": asdict(limits)}
        reply = self._ask(header, data, limits.seconds, what="the document")
        return _document(reply["document"])

    def html(
        self,
        markup: bytes,
        *,
        charset: str | None = None,
        url: str | None = None,
        raw: bool = False,
        seconds: float = 15.0,
    ) -> HtmlText:
        """As ``fimone.extract.html.html_text``; blocks the calling thread."""
        header = {"kind": "html", "charset": charset, "url": url, "raw": raw}
        page = self._ask(header, markup, seconds, what="the page")["page"]
        return HtmlText(page["text"], page["title"], tuple(page["notes"]))

    def _ask(self, header: dict, data: bytes, seconds: float, *, what: str) -> dict:
        with self._slots:
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
