"""Documents: upload-to-ready time of a 300-page PDF, and what other requests see meanwhile.

    .venv/bin/python bench/documents.py [--pages 300] [--uploads 3]

Starts a real daphne (tests/support/live_server.py) and posts a generated PDF (fpdf2, about
1,200 characters a page, as tests/support/documents.py makes it) to the attachments
endpoint: the time from sending the request to its 201, when the text is extracted, stored
and its pages ready for ``read_document`` and ``recall`` (a page is indexed when the
message that sends it is stored). While each upload runs, another client asks for the
conversation list every 50 ms: its latencies show whether a long extraction (in the
upload's own thread, never on the event loop) holds other requests up. For reference, the
extraction alone in this process (``fimone.extract``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fimone.extract import extract_document  # noqa: E402
from tests.support.documents import long_pdf  # noqa: E402
from tests.support.live_server import live_server  # noqa: E402


def upload(server, conversation_id: str, name: str, data: bytes) -> tuple[float, dict]:
    boundary = uuid.uuid4().hex
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            "Content-Type: application/pdf\r\n\r\n"
        ).encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    csrf = "c" * 32
    request = urllib.request.Request(
        f"{server.base_url}/api/conversations/{conversation_id}/attachments/",
        data=body,
        method="POST",
        headers={
            "Cookie": f"sessionid={server.session_cookie}; csrftoken={csrf}",
            "X-CSRFToken": csrf,
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "Origin": server.origin,
            "Referer": server.base_url + "/",
        },
    )
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=300) as response:
        raw = response.read()
        status = response.status
    elapsed = time.perf_counter() - start
    assert status == 201, raw
    return elapsed, json.loads(raw)


def watch(server, stop: threading.Event, latencies: list[float]) -> None:
    while not stop.is_set():
        start = time.perf_counter()
        server.api("GET", "/api/conversations/?limit=5")
        latencies.append((time.perf_counter() - start) * 1000)
        stop.wait(0.05)


def main(pages: int, uploads: int) -> int:
    data = long_pdf(pages=pages)
    start = time.perf_counter()
    doc = extract_document(data)
    alone = time.perf_counter() - start
    print(
        f"{pages}-page PDF: {len(data) / 1024:.0f} KB, {doc.chars:,} characters; "
        f"extraction alone {alone:.2f} s"
    )
    with live_server({"FIMONE_MAX_UPLOAD_BYTES": str(50 * 1024 * 1024)}) as server:
        idle: list[float] = []
        for _ in range(20):
            start = time.perf_counter()
            server.api("GET", "/api/conversations/?limit=5")
            idle.append((time.perf_counter() - start) * 1000)
        times: list[float] = []
        during: list[float] = []
        for i in range(uploads):
            conversation = server.api("POST", "/api/conversations/", {"title": f"bench {i}"})
            stop = threading.Event()
            watcher = threading.Thread(target=watch, args=(server, stop, during))
            watcher.start()
            try:
                elapsed, answer = upload(server, conversation["id"], f"long{i}.pdf", data)
            finally:
                stop.set()
                watcher.join()
            assert answer["pages"] == pages, answer
            times.append(elapsed)
        print(
            f"upload to ready ({uploads} uploads): median {statistics.median(times):.2f} s, "
            f"each {', '.join(f'{t:.2f}' for t in times)} s"
        )
        print(
            f"another client's request meanwhile: median {statistics.median(during):.1f} ms, "
            f"max {max(during):.1f} ms over {len(during)} requests "
            f"(idle: median {statistics.median(idle):.1f} ms)"
        )
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--uploads", type=int, default=3)
    args = parser.parse_args()
    sys.exit(main(args.pages, args.uploads))
