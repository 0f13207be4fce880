"""Read-on lines: where a part of a long text stands and how to read the rest.

A tool that returns a long page or document in parts ends each part with one line of this
form, and so does the guard when it cuts a result too large for the room left:

    [Part 2 of 7: characters 8,000–16,000 of 51,234; read on with fetch_url(url="…",
    start_index=16000)]

(on one line).

The line is what lets the model go on reading where it stopped, so it must outlive the text
it ends: a masking stub carries the read-on lines of the result it replaces, and a summary
of messages holding such lines keeps the newest of them (docs/architecture.md, "Reading in
parts"). Plain Python; one format, found again by its marker.
"""

from __future__ import annotations

import json
import re

READ_ON = "read on with "
# A read-on line: a bracketed note naming how to read on (the marker, any case).
_LINE = re.compile(r"^\[[^\n]*\bread on with [^\n]*\]$", re.IGNORECASE | re.MULTILINE)
# A stub or summary keeps at most this many read-on lines (the newest).
MAX_READ_ON_LINES = 6
# A read-on line longer than this is not one (a paste that happens to match).
MAX_LINE_CHARS = 600


def call_text(tool: str, arguments: dict[str, object]) -> str:
    """``tool(name=value, …)`` as the model would write the call, values as JSON."""
    args = ", ".join(
        f"{name}={json.dumps(value, ensure_ascii=False)}" for name, value in arguments.items()
    )
    return f"{tool}({args})"


def read_on_line(
    *, part: int, parts: int, start: int, end: int, total: int, unit: str, next_call: str
) -> str:
    """The line ending one part: ``part`` of ``parts``, ``unit`` ``start``–``end`` of
    ``total``, and the call that reads the next part."""
    return (
        f"[Part {part:,} of {parts:,}: {unit} {start:,}–{end:,} of {total:,}; {READ_ON}{next_call}]"
    )


def parts_of(start: int, length: int, total: int) -> tuple[int, int]:
    """(this part's number, how many parts) for the part from ``start`` of a text of
    ``total``, read ``length`` at a time."""
    length = max(1, length)
    end = min(total, start + length)
    before = -(-start // length)
    after = -(-(total - end) // length)
    return before + 1, before + 1 + after


def read_on_lines(text: str) -> list[str]:
    """The read-on lines of ``text``, in order, each once."""
    if READ_ON not in text.lower():
        return []
    return _lines_of(text)


def _lines_of(text: str) -> list[str]:
    found: list[str] = []
    for match in _LINE.finditer(text):
        line = match.group(0)
        if len(line) <= MAX_LINE_CHARS and line not in found:
            found.append(line)
    return found


def newest_read_on_lines(texts: list[str], limit: int = MAX_READ_ON_LINES) -> list[str]:
    """The newest ``limit`` distinct read-on lines of ``texts`` (oldest first)."""
    # Most conversations hold none: one look at each text says so. (Each lowered apart: a
    # text of plain ASCII takes the fast way, which a joined text of several scripts
    # would not.)
    found: list[str] = []
    for text in texts:
        if READ_ON not in text.lower():
            continue
        for line in _lines_of(text):
            if line in found:
                found.remove(line)
            found.append(line)
    return found[-limit:]
