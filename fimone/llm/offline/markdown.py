"""Markdown-safe text for the offline model's answers.

The UI renders answers as Markdown (CommonMark + tables + strikethrough). The offline model
quotes what it was given — the user's words, expressions, recalled passages, tool results —
and those must look as typed: "Compute 17*23 and 19*29" must not become "Compute 1723 and
1929" with an italic middle. Expressions are set as inline code (``inline_code``); other
quoted text has its Markdown-significant characters backslash-escaped (``escape_markdown``).

Escaping is selective, because the streamed plain text shows the backslashes until the
rendered HTML replaces it: only characters that can start emphasis, code, links, HTML,
strikethrough or entities anywhere, those that start a block (heading, quote, list, setext
underline) at the start of a line, and the pipes of a line that would make a table. It is
idempotent — an existing backslash escape and an inline code span are left as they are — so
text the offline model wrote earlier (a DAG step's result quoted in the final answer) is
not escaped twice.
"""

from __future__ import annotations

import re

# An inline code span: a run of backticks (not an escaped one), content, the same run
# (CommonMark 6.1).
_CODE_SPAN = re.compile(r"(?<![`\\])(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
# Inline: emphasis/strong (* _), code (`), links and images ([ ]), strikethrough (~),
# HTML and autolinks (< before a letter, / ! ?), entities (&name; &#123;). A character
# already escaped (preceded by a backslash) is skipped.
_INLINE = re.compile(r"(?<!\\)(?:[*_`\[\]~]|<(?=[A-Za-z/!?])|&(?=#?\w+;))")
# Line starts: ATX heading, block quote, bullet list, setext underline / thematic break,
# ordered list marker ("1." / "1)"), after up to three spaces of indentation.
_BLOCK_START = re.compile(r"^( {0,3})(#|>|[-+=](?=\s|[-+=]*$))", re.MULTILINE)
_ORDERED = re.compile(r"^( {0,3}\d{1,9})([.)])(?=\s|$)", re.MULTILINE)
# A table's delimiter row ("---|:-:", "|---|---|"): its pipes escaped, the lines above stay
# text instead of becoming a table header.
_CELL = r"[ \t]*:?-+:?[ \t]*"
_TABLE_DELIMITER = re.compile(rf"^[ \t]*\|?(?:{_CELL}\|)+(?:{_CELL})?$|^[ \t]*\|{_CELL}$", re.M)


def _escape_plain(text: str) -> str:
    text = _INLINE.sub(lambda m: "\\" + m.group(0), text)
    text = _BLOCK_START.sub(lambda m: f"{m.group(1)}\\{m.group(2)}", text)
    text = _ORDERED.sub(lambda m: f"{m.group(1)}\\{m.group(2)}", text)
    return _TABLE_DELIMITER.sub(lambda m: m.group(0).replace("|", "\\|"), text)


def escape_markdown(text: str) -> str:
    """``text`` such that Markdown renders it as written (inline code spans kept as code)."""
    out: list[str] = []
    pos = 0
    for span in _CODE_SPAN.finditer(text):
        out.append(_escape_plain(text[pos : span.start()]))
        out.append(span.group(0))
        pos = span.end()
    out.append(_escape_plain(text[pos:]))
    return "".join(out)


def inline_code(text: str) -> str:
    """``text`` as one inline code span, whatever backticks it contains (CommonMark 6.1)."""
    text = " ".join(text.split())  # a code span is one line; runs of spaces would show
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
