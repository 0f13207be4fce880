"""Extraction in worker processes: the same result, a hard time limit, a memory limit,
workers reused and replaced, shared fairly between their owners."""

from __future__ import annotations

import fcntl
import struct
import termios
import threading
import time

import pytest

from fimone.extract import (
    DamagedDocument,
    DocumentTooLarge,
    ExtractionTimeout,
    ExtractLimits,
    extract_document,
    isolated,
)
from fimone.extract.isolated import ExtractionPool, FairShares
from tests.support import documents

pytestmark = pytest.mark.slow  # extraction worker processes, one killed (not in bin/test --fast)


@pytest.fixture
def pool():
    made = ExtractionPool(workers=1)
    yield made
    made.close()


def test_the_same_document_as_in_process(pool):
    data = documents.pdf_with_fact()
    assert pool.extract(data, filename="review.pdf") == extract_document(data)
    assert pool.extract(documents.docx_bytes()) == extract_document(documents.docx_bytes())


def test_errors_keep_their_class_code_and_message(pool):
    with pytest.raises(DamagedDocument) as caught:
        pool.extract(documents.malformed_pdf())
    assert caught.value.code == "damaged_document" and "damaged" in caught.value.message


def test_a_worker_is_reused(pool):
    pool.extract(documents.csv_bytes())
    [worker] = pool._idle
    pool.extract(documents.csv_bytes())
    assert pool._idle == [worker] and worker.alive()


def test_an_overrun_is_killed_and_the_next_call_gets_a_fresh_worker(pool, monkeypatch):
    monkeypatch.setattr(isolated, "GRACE_SECONDS", 0.0)
    with pytest.raises(ExtractionTimeout):
        pool.extract(documents.long_pdf(pages=30), limits=ExtractLimits(seconds=0.0))
    assert pool._idle == []
    monkeypatch.setattr(isolated, "GRACE_SECONDS", 5.0)
    assert pool.extract(documents.csv_bytes()).kind == "csv"


@pytest.mark.parametrize(
    "document",
    [
        # Fits the pipe: the caller has handed it over and waits for the answer.
        pytest.param(documents.csv_bytes, id="while-the-caller-waits-for-the-answer"),
        # Larger than the pipe's buffer: the caller is still writing it.
        pytest.param(lambda: documents.long_pdf(pages=300), id="while-the-caller-writes"),
    ],
)
def test_a_worker_that_dies_is_a_clear_error_and_is_replaced(pool, document):
    """What a worker killed by the kernel (over its memory limit) looks like to the caller."""
    import signal
    import threading

    pool.extract(documents.csv_bytes())
    [worker] = pool._idle
    errors = []
    data = document()
    # Stopped, the worker is still alive to the pool but does no work: it dies with the
    # job in hand however fast the machine (a timed kill raced the job's end).
    worker.process.send_signal(signal.SIGSTOP)

    def extract():
        try:
            pool.extract(data)
        except DocumentTooLarge as exc:
            errors.append(exc)

    caller = threading.Thread(target=extract)
    caller.start()
    # Killed only once the caller has taken this worker (killed before, the worker would
    # just be replaced and the call succeed).
    # The document is in the stopped worker's pipe: whole (the caller waits for the answer)
    # or a page of it (the caller is still writing the rest).
    wait_until(lambda: bytes_in_pipe(worker.process.stdin) >= min(len(data), 4096))
    worker.process.kill()
    caller.join(timeout=60)
    assert [e.code for e in errors] == ["document_too_large"]
    assert pool._idle == [] and not worker.alive()
    assert pool.extract(documents.csv_bytes()).kind == "csv"


def test_a_worker_ends_when_its_parent_lets_go(pool):
    pool.extract(documents.csv_bytes())
    [worker] = pool._idle
    worker.process.stdin.close()
    assert worker.process.wait(timeout=30) == 0


# --- fair shares of the workers (RO.10) --------------------------------------------------------


def holding(shares: FairShares, owner: str, entered: list[str]):
    """A thread that takes a share for ``owner``, notes it in ``entered``, and holds it
    until its ``release`` event is set."""
    release = threading.Event()

    def hold() -> None:
        with shares.share(owner, wait_seconds=60):
            entered.append(owner)
            release.wait(60)

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    thread.release = release
    return thread


def bytes_in_pipe(stream) -> int:
    """What was written to the pipe and is not read yet (Linux FIONREAD)."""
    return struct.unpack("i", fcntl.ioctl(stream.fileno(), termios.FIONREAD, bytes(4)))[0]


def wait_until(condition) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_one_owner_never_holds_every_worker_and_another_gets_the_free_one():
    """RO.10: an owner's second call waits while another owner's call takes the free worker."""
    shares = FairShares(workers=2, per_owner=1)
    entered: list[str] = []
    first = holding(shares, "alice", entered)
    wait_until(lambda: entered == ["alice"])
    second = holding(shares, "alice", entered)
    other = holding(shares, "bob", entered)
    wait_until(lambda: entered == ["alice", "bob"])
    assert second.is_alive() and entered.count("alice") == 1
    first.release.set()
    wait_until(lambda: entered == ["alice", "bob", "alice"])
    for thread in (second, other):
        thread.release.set()
        thread.join(30)


def test_a_free_worker_goes_to_the_owner_holding_the_fewest():
    """RO.10: alice asked first for a second worker, but bob holds none: bob goes first."""
    shares = FairShares(workers=2, per_owner=2)
    entered: list[str] = []
    held = [holding(shares, "alice", entered), holding(shares, "carol", entered)]
    wait_until(lambda: len(entered) == 2)
    alice_again = holding(shares, "alice", entered)
    wait_until(lambda: len(shares._waiting) == 1)
    bob = holding(shares, "bob", entered)
    wait_until(lambda: len(shares._waiting) == 2)
    held[1].release.set()  # carol's worker comes free
    wait_until(lambda: len(entered) == 3)
    assert entered[-1] == "bob"
    for thread in (held[0], alice_again, bob):
        thread.release.set()
        thread.join(30)
    assert entered.count("alice") == 2


def test_a_call_that_gets_no_worker_in_time_is_a_clear_error(monkeypatch):
    """RO.10: the wait for a worker is bounded; the caller gets ``ExtractionTimeout``."""
    monkeypatch.setattr(isolated, "GRACE_SECONDS", 0.0)
    pool = ExtractionPool(workers=1)
    entered: list[str] = []
    blocker = holding(pool._shares, "alice", entered)
    wait_until(lambda: entered == ["alice"])
    try:
        with pytest.raises(ExtractionTimeout) as caught:
            pool.extract(documents.csv_bytes(), limits=ExtractLimits(seconds=0.05), owner="bob")
        assert "busy" in caught.value.message
    finally:
        blocker.release.set()
        blocker.join(30)
        pool.close()
