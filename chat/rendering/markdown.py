"""Markdown for assistant answers: markdown-it-py renders, nh3 sanitises.

Raw HTML in the source is escaped by the renderer (``html`` off) and nh3 removes anything
outside a small allowlist anyway. Fenced code blocks are highlighted here with Pygments
(through markdown-it's ``highlight`` hook): spans with ``tok-*`` classes that the stylesheet
colours for light and dark, so the browser runs no highlighter. Images are rendered as
links, not ``<img>``: an answer must not make the browser fetch attacker-chosen URLs by
itself (a prompt-injected model could otherwise leak conversation data in an image URL).
"""

from __future__ import annotations

import asyncio
import re
from functools import lru_cache
from html import escape

import nh3
from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

ALLOWED_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "s", "del",
    "code", "pre", "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr",
    "th", "td", "span",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "ol": {"start"},
    "code": {"class"},
    "span": {"class"},
    "th": {"class"},
    "td": {"class"},
}
URL_SCHEMES = {"http", "https", "mailto"}
_LANGUAGE_CLASS = re.compile(r"language-[\w+#.-]{1,40}")
_ALIGN_STYLE = re.compile(r"text-align:(left|right|center)")
_ALIGN_CLASS = re.compile(r"align-(left|right|center)")
# Pygments' short token classes ("k", "s2", "nf", …) behind our prefix.
_TOKEN_CLASS = re.compile(r"tok-[A-Za-z0-9]{1,4}")
TOKEN_PREFIX = "tok-"
# A code block this long is shown plain: highlighting it would cost more than it helps.
MAX_HIGHLIGHT_CHARS = 100_000
# Stored with each rendered answer (Message.html_version): raise it whenever the HTML this
# module makes changes, and stored answers are rendered again on their next read.
RENDERER_VERSION = 2


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt(
        "commonmark",
        {"html": False, "linkify": False, "typographer": False, "highlight": _highlight},
    )
    md.enable(["table", "strikethrough"])
    md.add_render_rule("image", _render_image_as_link)
    md.core.ruler.push("align_classes", _align_classes)
    return md


def _align_classes(state) -> None:
    """Table alignment as a class (``align-right``) instead of markdown-it's ``style``
    attribute: the page's Content-Security-Policy allows no inline style."""
    for token in state.tokens:
        if token.type != "inline" and token.type not in ("th_open", "td_open"):
            continue
        if token.type in ("th_open", "td_open"):
            match = _ALIGN_STYLE.fullmatch(str(token.attrGet("style") or "").replace(" ", ""))
            token.attrs.pop("style", None)
            if match:
                token.attrSet("class", f"align-{match.group(1)}")


@lru_cache(maxsize=1)
def _formatter() -> HtmlFormatter:
    return HtmlFormatter(nowrap=True, classprefix=TOKEN_PREFIX)


def _highlight(code: str, lang: str, _attrs: str) -> str:
    """Highlighted HTML for a fenced block with a known language; "" leaves it plain."""
    if not lang or len(code) > MAX_HIGHLIGHT_CHARS:
        return ""
    try:
        lexer = get_lexer_by_name(lang.lower(), stripnl=False, ensurenl=False)
    except ClassNotFound:
        return ""
    return highlight(code, lexer, _formatter())


def _render_image_as_link(self, tokens, idx, options, env) -> str:
    token = tokens[idx]
    src = token.attrGet("src") or ""
    alt = self.renderInlineAsText(token.children or [], options, env) or src
    return f'<a href="{escape(str(src))}">{escape(alt)}</a>'


def _keep_attribute(tag: str, attr: str, value: str) -> str | None:
    # Only syntax-highlighting hints and table alignment survive; no other class, no style.
    if attr == "class" and tag == "span":
        return value if _TOKEN_CLASS.fullmatch(value) else None
    if attr == "class" and tag in ("th", "td"):
        return value if _ALIGN_CLASS.fullmatch(value) else None
    if attr == "class":
        return value if _LANGUAGE_CLASS.fullmatch(value) else None
    return value


@lru_cache(maxsize=1)
def _cleaner() -> nh3.Cleaner:
    # Built once: ``nh3.clean`` builds its allowlists anew on every call, five times the
    # CPU of sanitising a short answer.
    return nh3.Cleaner(
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        attribute_filter=_keep_attribute,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer",
        strip_comments=True,
    )


def render_markdown(text: str) -> str:
    """Safe HTML for ``text`` (CommonMark + tables), links with rel="noopener noreferrer"."""
    if not text:
        return ""
    return _cleaner().clean(_parser().render(text))


# Longer answers are rendered in a worker thread: rendering and sanitising a very long
# answer takes tens of milliseconds, during which the event loop would serve no socket.
OFF_LOOP_CHARS = 20_000


async def render_markdown_async(text: str) -> str:
    """:func:`render_markdown` from async code, off the event loop when ``text`` is long."""
    if len(text) > OFF_LOOP_CHARS:
        return await asyncio.to_thread(render_markdown, text)
    return render_markdown(text)
