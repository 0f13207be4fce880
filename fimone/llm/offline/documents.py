"""The offline model and documents: when to call ``read_document``, and how to answer
from what it returned.

A user message's documents reach the model as notes in its text (``chat.document_context``):
``[document: NAME — Kind, N pages, SIZE…]`` followed by the text or an outline, closed by
``[end of document: NAME]`` / ``[end of outline: NAME]``. A question asked with a document
in the conversation (the newest one, or the one it names) becomes
``read_document(file, query)`` with the question's content words, or ``pages`` when it
names a page; the answer quotes the sentences of the returned pages that hold those words.
"""

from __future__ import annotations

import re
from typing import Any

from contextmgmt.core.messages import ChatMessage
from fimone.llm.offline.markdown import escape_markdown
from fimone.llm.offline.phrases import phrase

NOTE = re.compile(
    r"\[document: [^\n]*?\](?:\n.*?\n\[end of (?:document|outline): [^\]\n]*\])?", re.S
)
_NAME = re.compile(r"\[document: (.+?)(?: — [^\n]*)?\]", re.M)
_QUESTION = re.compile(
    r"\?|？|\b(?:what|which|who|whom|when|where|why|how|does|do|is|are|summari[sz]e|tell|"
    r"find|show|list|explain|was|wer|wie|welche[rsn]?|wo|wann|warum|fasse)\b|什么|哪|吗|谁|怎么|多少|总结",
    re.I,
)
_ABOUT_DOCUMENT = re.compile(
    r"\b(?:document|file|pdf|docx?|slides?|sheet|spreadsheet|attachment|page|dokument|datei|"
    r"seite|anhang)\b|文档|文件|附件|页",
    re.I,
)
_PAGE = re.compile(r"\b(?:page|seite|p\.)\s*(\d+(?:\s*[-–]\s*\d+)?)|第\s*(\d+)\s*页", re.I)
_NOISE = frozenset(
    """a an and are as at be by can could did do does for from how i in is it its me my of on
    or please say says tell that the their there this to was what when where which who why
    with you your according document file pdf attached attachment page pages find show give
    list explain summarise summarize about mentioned written stated der die das ist was wie
    welche welcher im in dem den des steht laut dokument datei seite und""".split()
)
_WORD = re.compile(r"[\w-]+", re.U)
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_BLOCK = re.compile(r"^--- page (\d+) ---$", re.M)
QUOTED_SENTENCES = 3


def strip_notes(text: str) -> str:
    """``text`` without its documents' notes: the user's own words."""
    return NOTE.sub(" ", text)


def document_names(messages: list[ChatMessage]) -> list[str]:
    """The documents the conversation shows, newest first (each once)."""
    names: list[str] = []
    for message in reversed(messages):
        if message.role != "user":
            continue
        for name in reversed(_NAME.findall(message.text())):
            if name not in names and not name.endswith(" unavailable"):
                names.append(name)
    return names


def document_call(query: str, messages: list[ChatMessage]) -> dict[str, Any] | None:
    """``read_document``'s arguments for ``query``, or None when it asks nothing of a
    document."""
    names = document_names(messages)
    if not names or not query.strip():
        return None
    lowered = query.casefold()
    named = [
        n for n in names if n.casefold() in lowered or n.rsplit(".", 1)[0].casefold() in lowered
    ]
    if not named and not (_QUESTION.search(query) or _ABOUT_DOCUMENT.search(query)):
        return None
    file = (named or names)[0]
    page = _PAGE.search(query)
    if page:
        return {"file": file, "pages": (page.group(1) or page.group(2)).replace(" ", "")}
    stem = file.rsplit(".", 1)[0].casefold()
    words = [w for w in _WORD.findall(query) if w.casefold() not in _NOISE | {stem}]
    if not words:
        return {"file": file, "pages": "1"}
    return {"file": file, "query": " ".join(words)}


def answer_lines(args: dict[str, Any], result: str, lang: str) -> list[str]:
    """What the answer says of a ``read_document`` result: the best sentences, by page."""
    name = str(args.get("file") or "")
    if result.lstrip().startswith("Error") or "--- page" not in result:
        return [escape_markdown(result.strip())] if result.strip() else []
    wanted = {w.casefold() for w in _WORD.findall(str(args.get("query") or ""))}
    parts = _BLOCK.split(result)
    pages = [(int(parts[i]), parts[i + 1]) for i in range(1, len(parts) - 1, 2)]
    scored = []
    for order, (page, text) in enumerate(pages):
        # PDF lines end mid-sentence: the page's text as one run of words, then sentences.
        flowing = " ".join(text.split())
        for index, sentence in enumerate(s.strip() for s in _SENTENCE.split(flowing)):
            if not sentence or sentence.startswith("[") and sentence.endswith("]"):
                continue
            words = {w.casefold() for w in _WORD.findall(sentence)}
            score = len(wanted & words) if wanted else 0
            scored.append((-score, order, index, page, sentence))
    if wanted and not any(s[0] for s in scored):
        return [phrase("document_none", lang, name=escape_markdown(name))]
    if wanted:
        best = [s for s in sorted(scored) if s[0]][:QUOTED_SENTENCES]
    else:
        best = scored[:QUOTED_SENTENCES]
    best.sort(key=lambda s: (s[1], s[2]))
    lines: list[str] = []
    page_shown = None
    for _score, _order, _index, page, sentence in best:
        if page != page_shown:
            lines.append(phrase("document", lang, name=escape_markdown(name), page=page))
            page_shown = page
        lines.append(f"> {escape_markdown(sentence)}")
    return lines
