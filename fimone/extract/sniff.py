"""What a file is, told by its bytes (never by its name or the client's content type)."""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile

from .types import DamagedDocument, UnsupportedDocument

MIME_TYPES: dict[str, str] = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "text": "text/plain",
    "markdown": "text/markdown",
    "csv": "text/csv",
    "json": "application/json",
    "html": "text/html",
}
EXTENSIONS: dict[str, str] = {
    "pdf": "pdf",
    "docx": "docx",
    "pptx": "pptx",
    "xlsx": "xlsx",
    "text": "txt",
    "markdown": "md",
    "csv": "csv",
    "json": "json",
    "html": "html",
}
# The main part of each OOXML kind, as [Content_Types].xml names it.
_OOXML_MAIN = {
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml": "docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml": "pptx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml": "xlsx",
}
_MACRO_ENABLED = re.compile(rb"macroEnabled", re.I)
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # .doc, .xls, .ppt (and .msg): the old binary formats
# What may open an HTML document, after any comments and white space (see _opens_as_html).
_HTML_START = re.compile(rb"<(?:!doctype\s+html|html|head|body)\b", re.I)
_SPACE = re.compile(rb"\s*")
# Every repeat in these patterns stops at a character its start cannot be (no white space
# run crosses a line, link text and address stop at the next bracket): each match attempt
# reads at most to the next such character, so the search is linear in the text.
_MARKDOWN = re.compile(
    r"^(?:#{1,6}[ \t]+\S|```|[ \t]*[-*+][ \t]+\S|[ \t]*\d+\.[ \t]+\S|>\s)"
    r"|\[[^\[\]\n]+\]\([^()\[\]\s]+\)|\*\*[^*\n]+\*\*",
    re.M,
)
# The delimiters a table may use, in the order they are preferred when several fit.
CSV_DELIMITERS = ",\t;|"


def decode_text(data: bytes) -> str | None:
    """``data`` as text when it is text (UTF-8, or UTF-16 with its byte-order mark, or a
    single-byte Western encoding without control bytes); None for binary data."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            return None
    if b"\x00" in data[:65536]:
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("cp1252", errors="replace")
    # Control bytes are binary data, whatever encoding lets them decode: more than one in a
    # hundred characters (so a stray escape in a log still reads as text).
    head = text[:65536]
    controls = sum(1 for ch in head if ord(ch) < 32 and ch not in "\t\n\r\f")
    return None if controls > len(head) // 100 else text


def sniff(data: bytes) -> str:
    """The document kind of ``data`` (a key of ``MIME_TYPES``); raises
    ``UnsupportedDocument`` for anything else."""
    head = data[:1024]
    if b"%PDF-" in head:
        return "pdf"
    if data.startswith(b"PK\x03\x04"):
        return _ooxml_kind(data)
    if data.startswith(_OLE):
        raise UnsupportedDocument(
            "This is an old binary Office file (.doc, .xls or .ppt); save it as .docx, "
            ".xlsx or .pptx first.",
            code="legacy_office",
        )
    text = decode_text(data)
    if text is None:
        raise UnsupportedDocument("The file is neither a supported document nor text.")
    return text_kind(text)


def text_kind(text: str) -> str:
    """json, html, csv, markdown or text, by the content."""
    stripped = text.lstrip()
    if stripped[:1] in "{[":
        try:
            json.loads(text)
            return "json"
        except ValueError:
            pass
    if _opens_as_html(text[:4096].encode("utf-8", "replace")):
        return "html"
    if _looks_like_csv(text):
        return "csv"
    if len(_MARKDOWN.findall(text[:20000])) >= 2:
        return "markdown"
    return "text"


def _opens_as_html(head: bytes) -> bool:
    """Whether ``head`` starts with an HTML document's first tag, after any number of
    comments and white space. A scan that only moves forward (each comment's end is found
    once): as one pattern with a repeated lazy comment, a failed match tried every way of
    splitting a run of comments, twice the work for each comment more."""
    position = 0
    while True:
        space = _SPACE.match(head, position)
        assert space is not None  # it matches the empty string too
        position = space.end()
        if not head.startswith(b"<!--", position):
            return _HTML_START.match(head, position) is not None
        end = head.find(b"-->", position + 4)
        if end < 0:
            return False
        position = end + 3


def csv_delimiter(lines: list[str]) -> str | None:
    """The delimiter that splits every one of ``lines`` (at least two) into the same number
    of fields, at least two; None when none does. The csv module's reader (linear in the
    text) does the splitting: ``csv.Sniffer`` guesses quotes with patterns whose work grows
    with the square of a line."""
    if len(lines) < 2:
        return None
    best: tuple[int, str] | None = None
    for delimiter in CSV_DELIMITERS:
        try:
            rows = list(csv.reader(lines, delimiter=delimiter, skipinitialspace=True))
        except csv.Error:
            continue
        widths = {len(row) for row in rows}
        if len(widths) == 1 and (width := widths.pop()) >= 2 and (best is None or width > best[0]):
            best = (width, delimiter)
    return None if best is None else best[1]


def head_lines(text: str) -> list[str]:
    """The first non-blank lines of ``text``: what tells whether it is a table."""
    return [line for line in text[:20000].splitlines() if line.strip()][:20]


def _looks_like_csv(text: str) -> bool:
    # Every line the same number of fields, at least two: a table, not prose with commas.
    return csv_delimiter(head_lines(text)) is not None


def _ooxml_kind(data: bytes) -> str:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            try:
                info = archive.getinfo("[Content_Types].xml")
            except KeyError:
                raise UnsupportedDocument(
                    "This zip archive is not a Word, PowerPoint or Excel document."
                ) from None
            if info.file_size > 1_000_000:
                raise UnsupportedDocument("The Office file's list of parts is implausibly large.")
            types = archive.read(info)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError) as exc:
        raise DamagedDocument(f"The Office file is damaged: {exc}.") from exc
    if _MACRO_ENABLED.search(types):
        raise UnsupportedDocument(
            "Macro-enabled Office files (.docm, .xlsm, .pptm) are not accepted; save it "
            "without macros.",
            code="macro_enabled",
        )
    for content_type, kind in _OOXML_MAIN.items():
        if content_type.encode() in types:
            return kind
    raise UnsupportedDocument("This zip archive is not a Word, PowerPoint or Excel document.")
