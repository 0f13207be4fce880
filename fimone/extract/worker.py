"""The extraction worker process: ``python -m fimone.extract.worker [memory bytes]``.

Reads requests from stdin and writes answers to stdout, one at a time, until stdin closes
(its parent exited or let it go). A request is a JSON header (file name, type hint,
limits) and the file's bytes; an answer is JSON: the document, or an error's class, code
and message. Only JSON comes back: the parent never unpickles what a parser of untrusted
files produced. The address-space limit is set before anything is read.
"""

from __future__ import annotations

import json
import resource
import struct
import sys
from dataclasses import asdict
from typing import BinaryIO

from fimone.extract import ExtractionError, ExtractLimits, extract_document
from fimone.extract.html import html_text

_LENGTH = struct.Struct(">I")


def read_frame(stream: BinaryIO) -> bytes | None:
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (size,) = _LENGTH.unpack(head)
    body = stream.read(size)
    return body if len(body) == size else None


def write_frame(stream: BinaryIO, body: bytes) -> None:
    stream.write(_LENGTH.pack(len(body)) + body)
    stream.flush()


def answer(header: dict, data: bytes) -> dict:
    if header.get("kind") == "html":
        return _page(header, data)
    try:
        doc = extract_document(
            data,
            filename=header.get("filename"),
            mime_type=header.get("mime_type"),
            limits=ExtractLimits(**header["limits"]),
        )
    except ExtractionError as exc:
        return {"error": type(exc).__name__, "code": exc.code, "message": exc.message}
    return {"document": asdict(doc)}


def _page(header: dict, data: bytes) -> dict:
    options = {key: header.get(key) for key in ("charset", "url")}
    try:
        page = html_text(data, raw=bool(header.get("raw")), **options)
    except Exception as exc:  # a page the parsers choke on is unreadable, not a dead worker
        return {"error": "ExtractionError", "code": "damaged", "message": str(exc)}
    return {"page": asdict(page)}


def warm_up() -> None:
    """Import what extraction imports lazily, before the memory limit: the limit is for the
    documents, and a library failing to load under it would look like a damaged file."""
    import io

    import docx  # noqa: F401
    import openpyxl  # noqa: F401
    import pptx  # noqa: F401
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(width=72, height=72)
    buffer = io.BytesIO()
    writer.write(buffer)
    try:
        extract_document(buffer.getvalue())
    except ExtractionError:
        pass  # a blank page holds no text: only the imports matter


def main() -> int:
    memory = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    warm_up()
    if memory:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a library's print() must not corrupt the answers
    while True:
        header = read_frame(stdin)
        data = read_frame(stdin) if header is not None else None
        if header is None or data is None:
            return 0
        try:
            reply = answer(json.loads(header), data)
        except MemoryError:
            write_frame(
                stdout,
                b'{"error": "DocumentTooLarge", "code": "document_too_large", '
                b'"message": "Reading the document needs more memory than allowed."}',
            )
            return 1  # a process that ran out of memory is not trusted with the next file
        write_frame(stdout, json.dumps(reply, ensure_ascii=False).encode())


if __name__ == "__main__":
    sys.exit(main())
