"""The offline model's tool decisions: which tool calls a user's query asks for.

Arithmetic → ``calculator`` ``{"expression"}``, the time or date → ``current_time`` ``{}``,
something said earlier → ``recall`` ``{"query"}``, a URL to read → ``fetch_url``
``{"url"}``, any other offered tool the query names ("call <tool> {json}") → that tool with
those arguments (a tool not offered → ``find_tools`` with its name first, then the tool
once found); several at once when the query asks for several (parallel tool calls).
English, Chinese and a little German.
"""

from __future__ import annotations

import json
import re
from typing import Any

from contextmgmt.core.messages import ToolCall
from fimone.llm.offline.ops import continue_from, has_operation, spell_out

_WORD_OPS = [
    (re.compile(r"\bto the power of\b", re.I), "**"),
    (re.compile(r"\bmultiplied by\b|\btimes\b", re.I), "*"),
    (re.compile(r"\bdivided by\b|\bover\b", re.I), "/"),
    (re.compile(r"\bplus\b", re.I), "+"),
    (re.compile(r"\bminus\b", re.I), "-"),
    (re.compile(r"乘以|乘"), "*"),
    (re.compile(r"除以"), "/"),
    (re.compile(r"加上|加"), "+"),
    (re.compile(r"减去|减"), "-"),
]
_NUM = r"-?\d+(?:\.\d+)?"
# "that result", "the previous answer", "das Ergebnis", "这个结果": a value an earlier step
# produced, which a step reads from the dependency results it is given.
BACK_REFERENCE = re.compile(
    r"\b(?:that|the|this|its|previous|last)\s+(?:previous\s+|last\s+)?"
    r"(?:result|number|value|answer|sum|product|total)\b"
    r"|\b(?:das|dies(?:es|em)?|dem|den|diesen)\s+(?:vorigen?\s+|letzten?\s+)?"
    r"(?:Ergebnis|Resultat|Wert|Zahl)\b|\bdie(?:se)?\s+(?:Summe|Zahl)\b|\bdas\s+Produkt\b"
    r"|(?:这个|那个|上一步的|上面的|该)?结果",
    re.I,
)
# "zum Ergebnis", "vom Ergebnis": the preposition stays ("addiere 4 zu 7", "ziehe 3 von 7 ab").
_CONTRACTED = re.compile(r"\b(zu|vo)m\s+(?=(?:Ergebnis|Resultat|Wert)\b)", re.I)
# "`3+4` = 7" (this model's calculator lines), "= 7", or failing that any number.
_GIVEN_VALUE = re.compile(rf"=\s*\**({_NUM})\b")
_ANY_NUMBER = re.compile(rf"(?<![\w.]){_NUM}(?![\w.])")


def given_value(given: str) -> str | None:
    """The value the material given to a step ends with: its last "= N", else its last
    number."""
    found = _GIVEN_VALUE.findall(given) or _ANY_NUMBER.findall(given)
    return found[-1] if found else None


def resolve_references(query: str, given: str) -> str:
    """``query`` with "that result" (and the like) replaced by the value ``given`` holds,
    and an operation without its first operand ("then double it", "dann addiere 4")
    applied to that value."""
    value = given_value(given) if given else None
    if value is None:
        return query
    if BACK_REFERENCE.search(query):
        query = _CONTRACTED.sub(
            lambda m: f"{'zu' if m.group(1).lower() == 'zu' else 'von'} dem ", query
        )
        query = BACK_REFERENCE.sub(f" {value} ", query)
    return continue_from(query, value)


def builds_on_previous(part: str) -> bool:
    """Whether a part of a request works on the part before's result: it names it ("that
    result", "das Ergebnis", "结果") or is an operation without an operand of its own."""
    if BACK_REFERENCE.search(part):
        return True
    return has_operation(part) and find_expression(part) is None


MAX_CALCULATIONS = 5
_DATE_LIKE = re.compile(r"\b\d{4}-\d{1,2}-\d{1,2}\b|\b\d{1,2}:\d{2}\b")
_PERCENT_OF = re.compile(r"(\d+(?:\.\d+)?)\s*%\s*of\s*(\d+(?:\.\d+)?)", re.I)
_FUNC = r"(?:sqrt|log|ln|exp|abs|round|sin|cos|tan|floor|ceil)"
_OPERAND = rf"(?:{_FUNC}\s*)?[(\s]*-?\d+(?:\.\d+)?\)*"
_EXPRESSION = re.compile(rf"{_OPERAND}(?:\s*(?:\*\*|[-+*/%^])\s*{_OPERAND})+|{_FUNC}\s*\([^()]*\)")
_CALC_INTENT = re.compile(
    r"\b(?:calculate|compute|what(?:'s| is)|how much|evaluate|solve|sum|berechne\w*|rechne"
    r"|wie ?viel|ergibt)\b|=|算|等于|多少|是几",
    re.I,
)
_TIME_INTENT = re.compile(
    r"\bwhat time\b|\bcurrent (?:time|date)\b|\btime is it\b|\btime now\b|\bthe time\b"
    r"|\bwhat(?:'s| is) the date\b|\btoday'?s date\b|\bwhat day\b|\bdate today\b"
    r"|几点|时间|日期|几号|星期几|wie spät|uhrzeit|welches datum|welcher tag",
    re.I,
)
_RECALL_INTENT = re.compile(
    r"\bwhat did i (?:say|tell|mention|write|ask)\b|\bdid i (?:say|mention|tell)\b|\bearlier\b"
    r"|\bpreviously\b|\b(?:do|did|can|could|would)\s+you\s+(?:still\s+)?remember\b"
    r"|\bremember\s+(?:what|when|where|which|who|how)\b|\brecall\b|\byou said\b"
    r"|\bi (?:told|mentioned|said)\b"
    r"|\bwe (?:discussed|talked)\b|之前|刚才|先前|以前|上次|我说过|记得|vorhin|erinnerst",
    re.I,
)
_RECALL_TOPIC = re.compile(
    r"\b(?:about|regarding)\s+(.+?)[\s?.!]*$|关于(.+?)(?:的(?:什么|事|内容|话))?[？?。！]*$", re.I
)
_RECALL_NOISE = re.compile(
    r"\b(?:what|did|do|you|i|say|said|tell|told|me|mention(?:ed)?|earlier|previously"
    r"|remember|recall|we|discussed|talked|can|could|please)\b|[?？。.!！,，]|之前|刚才|我说过|记得",
    re.I,
)


def find_expression(query: str) -> str | None:
    """The query's arithmetic: its longest expression, or None."""
    found = find_expressions(query)
    return max(found, key=len) if found else None


def find_expressions(query: str) -> list[str]:
    """Every distinct arithmetic expression in the query, in order ("17*23 and 19*29")."""
    text = _DATE_LIKE.sub(" ", query)
    text = _PERCENT_OF.sub(r"\1/100*\2", text)
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    spelled = spell_out(text)
    # An operation asked in words ("ziehe 3 von 5 ab") is asked, as "calculate" is.
    intent = _CALC_INTENT.search(query) is not None or spelled != text
    text = spelled
    text = text.replace("×", "*").replace("÷", "/").replace("（", "(").replace("）", ")")
    text = re.sub(r"(?<=\d)\s*[xX]\s*(?=\d)", "*", text)
    for pattern, op in _WORD_OPS:
        text = pattern.sub(f" {op} ", text)
    expressions: list[str] = []
    for found in _EXPRESSION.findall(text):
        expr = re.sub(r"\s+", " ", found.replace("^", "**")).strip()
        while expr.count("(") > expr.count(")") and expr.startswith("("):
            expr = expr[1:].strip()
        while expr.count(")") > expr.count("(") and expr.endswith(")"):
            expr = expr[:-1].strip()
        # "-" or "/" alone between two numbers is often a range or a date: ask for intent.
        if not re.search(r"\*|\+|%|[a-z]\(", expr) and not intent:
            continue
        if expr not in expressions:
            expressions.append(expr)
    return expressions


# "fetch https://…", "lies https://…", "获取 https://…". Any scheme is taken, so that the
# tool's refusal of file:// or ftp:// reaches the user instead of silence.
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s<>\"'`）」】，。、；！？]+", re.I)
_URL_END = ".,;:!?)]}'\""
_FETCH_INTENT = re.compile(
    r"\b(?:fetch|open|read|get|load|visit|browse|summari[sz]e|look at|check)\b"
    r"|\bwhat does\b.*\bsay\b|\b(?:lies|lese|öffne|hole|lade|abrufen|zusammenfassen)\b"
    r"|获取|打开|读取|抓取|访问|阅读|看看|总结",
    re.I,
)
MAX_FETCHES = 3


def find_urls(query: str) -> list[str]:
    """The URLs in the query, in order, without the punctuation that ends a sentence."""
    urls: list[str] = []
    for found in _URL.findall(query):
        url = found.rstrip(_URL_END)
        if url not in urls and "://" in url and not url.endswith("://"):
            urls.append(url)
    return urls


def without_urls(text: str) -> str:
    return _URL.sub(" ", text)


def _fetch_urls(query: str) -> list[str]:
    """The URLs the query asks to read: with a word asking so, or a message that is only
    URLs (pasting a link is asking about it)."""
    urls = find_urls(query)
    rest = _URL.sub(" ", query).strip(" \t\n" + _URL_END)
    if urls and (_FETCH_INTENT.search(rest) or not rest):
        return urls[:MAX_FETCHES]
    return []


def _recall_query(query: str) -> str:
    m = _RECALL_TOPIC.search(query)
    if m:
        topic = " ".join(_RECALL_NOISE.sub(" ", m.group(1) or m.group(2)).split())
        if topic:
            return topic
    rest = " ".join(_RECALL_NOISE.sub(" ", query).split())
    return rest or query.strip()


# "call send_note {"text": "hi"}": any other offered tool, named by the user, with the JSON
# arguments they give (an operator's or an MCP server's tool; the tools with their own
# rules above are asked for in plain words instead).
_NAMED_CALL = re.compile(
    r"\b(?:call|use|run)\s+(?:the\s+)?`?([A-Za-z0-9_-]{1,64})`?(?:\s+tool)?"
    r"(?:\s+with)?\s*(\{.*\})?",
    re.I | re.S,
)
_OWN_RULES = {"calculator", "current_time", "recall", "fetch_url", "read_document"}
# The tool that finds tools whose definitions were not sent (fimone.agent.tools.finder;
# docs/tools.md, "Many tools").
FINDER = "find_tools"


def named_calls(query: str, offered: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """Calls of offered tools the query names ("call <tool> {json arguments}"). A named
    tool that is not offered while ``find_tools`` is (its definition was not sent) is
    looked for first: ``find_tools`` with its name. Only a name that looks like a tool's
    (an underscore in it, or JSON arguments after it): "use python" is no tool."""
    calls: list[tuple[str, dict[str, Any]]] = []
    for match in _NAMED_CALL.finditer(query):
        name = match.group(1)
        if name in _OWN_RULES or name == FINDER or any(n == name for n, _ in calls):
            continue
        if name not in offered:
            looks_like_a_tool = "_" in name or match.group(2) is not None
            if FINDER in offered and looks_like_a_tool:
                calls.append((FINDER, {"query": name}))
            continue
        try:
            args = json.loads(match.group(2)) if match.group(2) else {}
        except ValueError:
            args = {}
        calls.append((name, args if isinstance(args, dict) else {}))
    return calls


def decide_tool_calls(query: str, offered: set[str], call_prefix: str) -> list[ToolCall]:
    """The tool calls a query asks for, among the tools offered; several run in parallel."""
    calls: list[tuple[str, dict[str, Any]]] = named_calls(query, offered)
    if "fetch_url" in offered:
        calls.extend(("fetch_url", {"url": url}) for url in _fetch_urls(query))
    query = without_urls(query)  # a URL's digits and slashes are no arithmetic
    if "calculator" in offered:
        # Several calculations asked at once run as parallel calls, a handful at most.
        for expr in find_expressions(query)[:MAX_CALCULATIONS]:
            calls.append(("calculator", {"expression": expr}))
    if "current_time" in offered and _TIME_INTENT.search(query):
        calls.append(("current_time", {}))
    if "recall" in offered and _RECALL_INTENT.search(query):
        calls.append(("recall", {"query": _recall_query(query)}))
    return [
        ToolCall(
            id=f"{call_prefix}_{i}_{name}",
            name=name,
            arguments=json.dumps(args, ensure_ascii=False),
        )
        for i, (name, args) in enumerate(calls)
    ]
