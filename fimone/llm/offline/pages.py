"""The offline model's answer from a ``fetch_url`` result: what the page says.

The tool's result is a few header lines (``URL:``, ``Title:``), a blank line, the page's
text (Markdown) and bracketed notes. The answer names the page and quotes it: the
paragraphs that share words with the user's question when some do, else the page's
beginning. The page's own Markdown is kept (it is the page's formatting, not the user's
words) inside a block quote; a refusal is said as a refusal.
"""

from __future__ import annotations

import re

from fimone.llm.offline.markdown import escape_markdown, inline_code
from fimone.llm.offline.phrases import phrase

MAX_QUOTED_CHARS = 1500
MAX_MATCHING_PARAGRAPHS = 3
_NOTE = re.compile(r"^\[.*\]$")
_WORD = re.compile(r"\w{4,}", re.U)
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.I)
# Words of a request to fetch that say nothing about what to look for on the page.
_REQUEST_WORDS = frozenset(
    "fetch open read load visit browse check what does page site tell that this from with "
    "about please summarise summarize lies öffne hole lade abrufen seite".split()
)


def page_lines(result: str, question: str, lang: str) -> list[str]:
    """The answer's lines for one ``fetch_url`` result."""
    text = result.strip()
    header, _, rest = text.partition("\n\n")
    fields = dict(
        line.split(": ", 1) for line in header.splitlines() if ": " in line and line[0] != " "
    )
    if "URL" not in fields:  # a refusal or a failure: no page
        error = text.removeprefix("Error:").strip()
        return [phrase("page_error", lang, error=escape_markdown(error))]
    url = inline_code(fields["URL"])
    title = fields.get("Title", "")
    title = f" ({escape_markdown(title)})" if title else ""
    lines = [phrase("page", lang, url=url, title=title)]
    if "Error" in fields:
        lines.insert(0, phrase("page_status", lang, error=escape_markdown(fields["Error"])))
    body = "\n".join(line for line in rest.splitlines() if not _NOTE.match(line.strip()))
    quoted = _quoted_paragraphs(body, question)
    if not quoted:
        lines.append(phrase("empty", lang))
        return lines
    lines.append("\n>\n".join("\n".join(f"> {line}" for line in p.splitlines()) for p in quoted))
    return lines


def _quoted_paragraphs(body: str, question: str) -> list[str]:
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", body) if p.strip()]
    wanted = {w.lower() for w in _WORD.findall(_URL.sub(" ", question))} - _REQUEST_WORDS
    if wanted:
        matching = [p for p in paragraphs if wanted & {w.lower() for w in _WORD.findall(p)}]
        if matching:
            return [_clip(p) for p in matching[:MAX_MATCHING_PARAGRAPHS]]
    chosen: list[str] = []
    used = 0
    for paragraph in paragraphs:
        if chosen and used + len(paragraph) > MAX_QUOTED_CHARS:
            break
        chosen.append(_clip(paragraph))
        used += len(paragraph)
    return chosen


def _clip(paragraph: str) -> str:
    if len(paragraph) <= MAX_QUOTED_CHARS:
        return paragraph
    return paragraph[:MAX_QUOTED_CHARS].rsplit(" ", 1)[0] + " …"
