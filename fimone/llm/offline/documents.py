"""The offline model and documents: when to call ``read_document``, and how to answer
from what it returned.

A user message's documents reach the model as notes in its text (``chat.documents.context``):
``[document: NAME — Kind, N pages, SIZE…]`` followed by the text or an outline, closed by
``[end of document: NAME]`` / ``[end of outline: NAME]``. A question asked with documents
in the conversation (the ones it names, else those sent with the question, else the
newest) becomes one ``read_document`` call per document: ``(file, query)`` with the
question's content words, ``pages`` when it names a page, and every page when it asks for
a summary. The answer quotes the sentences of the returned pages that hold those words, or
for a summary a few sentences spread over all the pages.

A project's files come the same way in a system message (after the instructions): they are
read when no document of the conversation's own is in view, at most ``PROJECT_FILES_READ``
of them (the smallest first, as they are listed).
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
# "Summarise this", "the key points", "fasse … zusammen", "总结": the whole document, not
# the pages matching the request's words ("three points" is in no document).
_SUMMARY = re.compile(
    r"\b(?:summar(?:y|i[sz]e\w*)|overview|outline|key points|main points|gist|"
    r"zusammenfass\w*|zusammen|überblick|kernpunkte)\b|总结|概括|摘要|要点|概述",
    re.I,
)
_POINTS = re.compile(
    r"\b([1-9])\b|\b(one|two|three|four|five|ein|zwei|drei|vier|fünf)\b|([一二三四五])", re.I
)
_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "ein": 1, "zwei": 2, "drei": 3,
    "vier": 4, "fünf": 5, "一": 1, "二": 2, "三": 3, "四": 4, "五": 5,
}  # fmt: skip
_PAGE_COUNT = re.compile(r"\[document: (.+?) — [^,\]\n]*, (\d+) pages?\b", re.M)
# One call reads at most this many pages (fimone.agent.tools.documents).
MAX_SUMMARY_PAGES = 20
# A question about none of them in particular reads at most this many of a project's files.
PROJECT_FILES_READ = 3


def strip_notes(text: str) -> str:
    """``text`` without its documents' notes: the user's own words."""
    return NOTE.sub(" ", text)


def document_names(messages: list[ChatMessage]) -> list[str]:
    """The documents the conversation shows, newest first (each once), then its project's
    files (``project_file_names``)."""
    names: list[str] = []
    for message in reversed(messages):
        if message.role != "user":
            continue
        for name in reversed(_NAME.findall(message.text())):
            if name not in names and not name.endswith(" unavailable"):
                names.append(name)
    return names + [n for n in project_file_names(messages) if n not in names]


def project_file_names(messages: list[ChatMessage]) -> list[str]:
    """The files a system message shows (a project's, after its instructions), in order."""
    names: list[str] = []
    for message in messages:
        if message.role == "system":
            names += [n for n in _NAME.findall(message.text()) if n not in names]
    return names


def is_summary_request(query: str) -> bool:
    return bool(_SUMMARY.search(query))


def summary_points(query: str) -> int:
    """How many points a summary request asks for ("in three points"), else three."""
    m = _POINTS.search(query)
    if not m:
        return QUOTED_SENTENCES
    return int(m.group(1)) if m.group(1) else _NUMBER_WORDS[(m.group(2) or m.group(3)).lower()]


def _page_counts(messages: list[ChatMessage]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for message in messages:
        if message.role in ("user", "system"):
            for name, count in _PAGE_COUNT.findall(message.text()):
                counts[name] = int(count)
    return counts


def _sent_with(message: ChatMessage) -> list[str]:
    names = [n for n in _NAME.findall(message.text()) if not n.endswith(" unavailable")]
    return list(dict.fromkeys(names))


def document_calls(query: str, messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """``read_document``'s arguments for ``query``, one call per document it is about (none
    when it asks nothing of a document)."""
    names = document_names(messages)
    if not names or not query.strip():
        return []
    lowered = query.casefold()
    named = [
        n for n in names if n.casefold() in lowered or n.rsplit(".", 1)[0].casefold() in lowered
    ]
    if not named and not (_QUESTION.search(query) or _ABOUT_DOCUMENT.search(query)):
        return []
    if not named:
        last = next((m for m in reversed(messages) if m.role == "user"), None)
        project = project_file_names(messages)
        own = [n for n in names if n not in project]
        named = (_sent_with(last) if last is not None else []) or (
            own[:1] if own else project[:PROJECT_FILES_READ]
        )
    page = _PAGE.search(query)
    counts = _page_counts(messages)
    calls = []
    for file in named:
        if page:
            calls.append({"file": file, "pages": (page.group(1) or page.group(2)).replace(" ", "")})
            continue
        if is_summary_request(query):
            count = min(counts.get(file, 1), MAX_SUMMARY_PAGES)
            calls.append({"file": file, "pages": f"1-{count}" if count > 1 else "1"})
            continue
        stems = {n.rsplit(".", 1)[0].casefold() for n in names}
        words = [w for w in _WORD.findall(query) if w.casefold() not in _NOISE | stems]
        calls.append(
            {"file": file, "query": " ".join(words)} if words else {"file": file, "pages": "1"}
        )
    return calls


def document_call(query: str, messages: list[ChatMessage]) -> dict[str, Any] | None:
    """The first of ``document_calls`` (None when there is none)."""
    calls = document_calls(query, messages)
    return calls[0] if calls else None


def _pages_of(result: str) -> list[tuple[int, str]]:
    parts = _BLOCK.split(result)
    return [(int(parts[i]), parts[i + 1]) for i in range(1, len(parts) - 1, 2)]


def _sentences(text: str) -> list[str]:
    # PDF lines end mid-sentence: the page's text as one run of words, then sentences.
    flowing = " ".join(text.split())
    return [
        s
        for s in (s.strip() for s in _SENTENCE.split(flowing))
        if s and not (s.startswith("[") and s.endswith("]"))
    ]


def summary_lines(args: dict[str, Any], result: str, lang: str, points: int) -> list[str]:
    """A summary of every page ``read_document`` returned: the pages cut into ``points``
    runs, and from each the sentence that says most (the longest of sensible length), so
    the points come from the whole document rather than its first page."""
    name = str(args.get("file") or "")
    pages = [(page, _sentences(text)) for page, text in _pages_of(result)]
    pages = [(page, sentences) for page, sentences in pages if sentences]
    if not pages:
        return [escape_markdown(result.strip())] if result.strip() else []
    points = max(1, min(points, len(pages) if len(pages) > 1 else points))
    runs = [pages[i * len(pages) // points : (i + 1) * len(pages) // points] for i in range(points)]
    if len(pages) == 1:  # one page: its sentences spread the same way
        page, sentences = pages[0]
        runs = [
            [(page, sentences[i * len(sentences) // points : (i + 1) * len(sentences) // points])]
            for i in range(points)
        ]
    lines = [
        phrase(
            "document_summary", lang, name=escape_markdown(name), count=_page_total(result, pages)
        )
    ]
    seen: set[str] = set()
    for run in runs:
        candidates = [(page, s) for page, sentences in run for s in sentences if s not in seen]
        if not candidates:
            continue
        page, best = max(candidates, key=lambda c: min(len(c[1]), 240))
        seen.add(best)
        lines.append(f"- {escape_markdown(best)} ({_page_label(lang, page)})")
    return lines


def _page_total(result: str, pages: list[tuple[int, list[str]]]) -> int:
    m = re.search(r" of (\d+)\b", result.split("\n", 1)[0])
    return int(m.group(1)) if m else len(pages)


def _page_label(lang: str, page: int) -> str:
    return {"de": f"S. {page}", "zh": f"第 {page} 页"}.get(lang, f"p. {page}")


def answer_lines(args: dict[str, Any], result: str, lang: str, query: str = "") -> list[str]:
    """What the answer says of a ``read_document`` result: the best sentences, by page, or
    for a summary request (``query``) points taken from all its pages."""
    name = str(args.get("file") or "")
    if result.lstrip().startswith("Error") or "--- page" not in result:
        return [escape_markdown(result.strip())] if result.strip() else []
    if query and is_summary_request(query) and args.get("pages"):
        return summary_lines(args, result, lang, summary_points(query))
    wanted = {w.casefold() for w in _WORD.findall(str(args.get("query") or ""))}
    pages = _pages_of(result)
    scored = []
    for order, (page, text) in enumerate(pages):
        for index, sentence in enumerate(_sentences(text)):
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
