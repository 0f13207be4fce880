"""Text skills of the offline model: language detection and extractive summaries.

Extractive on purpose: the offline model never writes a fact it was not given, so a summary
made of the transcript's own sentences keeps numbers, names, identifiers and URLs verbatim
and stays in the conversation's language. Sentences are scored by the facts they carry —
quantities with units, ids, URLs, paths, dates, names, decisions and the user's constraints
— the best ones kept within a token cap, and put back in order. Facts as each language
writes them count too, rows an export or a long table repeats count as a log's lines do,
and a sentence stating a value a later correction replaced is left out
(``offline_facts``). Machine output that
repeats one template (log lines, listings) and sentences the conversation keeps repeating
score low: each adds little that its neighbours did not.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from contextmgmt.core.factscan import SHAPE, repeated_templates, template_of
from contextmgmt.core.messages import SUMMARY_PREFIX
from contextmgmt.core.tokens import estimate_tokens
from fimone.llm.offline.facts import (
    drop_superseded,
    language_facts,
    language_facts_of,
    repeated_rows,
    row_shape,
)

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")
_LETTER = re.compile(r"[^\W\d_]")
_GERMAN = re.compile(
    r"\b(?:und|der|die|das|ist|nicht|ich|wir|mit|für|auf|eine?n?|bitte|danke|zuerst|dann"
    r"|danach|anschließend|berechne|rechne|ergebnis|verdopple|halbiere|multipliziere"
    r"|addiere|ziehe|teile|davon|dazu)\b",
    re.IGNORECASE,
)

_ENGLISH = re.compile(
    r"\b(?:the|an?|is|are|was|what|which|who|how|why|when|where|of|and|to|in|for|it|that|"
    r"this|you|me|my|can|do|does|from|with|then|please|thanks)\b",
    re.IGNORECASE,
)

LABELS = {
    "en": {"user": "User", "assistant": "Assistant", "tool": "Tool", "system": "Note"},
    "zh": {"user": "用户", "assistant": "助手", "tool": "工具", "system": "备注"},
    "de": {"user": "Nutzer", "assistant": "Assistent", "tool": "Werkzeug", "system": "Notiz"},
}


def detect_language(text: str, default: str = "en") -> str:
    """``"zh"`` (CJK script dominant), ``"de"`` (German function words) or ``"en"``.

    ``default``: the language to assume when the text does not show one ("3+4", a name);
    with another default than English, English too must show in its function words.
    """
    letters = len(_LETTER.findall(text))
    if letters and len(_CJK.findall(text)) / letters > 0.3:
        return "zh"
    words = max(1, len(text.split()))
    if len(_GERMAN.findall(text)) / words > 0.08:
        return "de"
    if default == "en" or len(_ENGLISH.findall(text)) / words > 0.08:
        return "en"
    return default


# --- transcript parsing ---------------------------------------------------------------------

# "user: …", "assistant (tool call): …", "tool (calculator): …" — one block per message.
_BLOCK_START = re.compile(
    r"^\s*\[?(system|user|assistant|tool)\]?(?:\s*\([^)\n]{0,60}\))?\s*[:：]\s?",
    re.IGNORECASE | re.MULTILINE,
)
_SENTENCE_END = re.compile(
    r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9\u00c0-\u024f\u0400-\u04ff¿¡«])|(?<=[。！？；])"
)
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


@dataclass(frozen=True, slots=True)
class Unit:
    order: int
    role: str  # user / assistant / tool / system / summary
    text: str
    templated: bool = False  # a line of a template its message repeats (a log)


# The header a compaction in rounds puts before each piece: not part of the conversation.
_PART_HEADER = re.compile(r"^\[Part \d+ of \d+ of the conversation\]\s*", re.MULTILINE)


def transcript_units(transcript: str) -> list[Unit]:
    """Sentences of a "role: text" transcript, in order, each with its speaker."""
    transcript = _PART_HEADER.sub("", transcript)
    blocks: list[tuple[str, str]] = []
    starts = list(_BLOCK_START.finditer(transcript))
    if not starts:
        blocks.append(("user", transcript))
    else:
        if transcript[: starts[0].start()].strip():
            blocks.append(("user", transcript[: starts[0].start()]))
        for i, m in enumerate(starts):
            end = starts[i + 1].start() if i + 1 < len(starts) else len(transcript)
            blocks.append((m.group(1).lower(), transcript[m.end() : end]))
    units: list[Unit] = []
    # Summaries being folded (of the pieces of one long log, of earlier rounds) each hold
    # only a couple of a log's lines — too few for their own block to show the template —
    # but together as many as the log had: their templates are counted over all of them.
    summaries = [
        body.strip()[len(SUMMARY_PREFIX) :]
        for _, body in blocks
        if body.strip().startswith(SUMMARY_PREFIX)
    ]
    across = repeated_templates("\n".join(summaries)) if len(summaries) > 1 else set()
    for role, body in blocks:
        body = body.strip()
        templates_across: set[str] = set()
        if body.startswith(SUMMARY_PREFIX):
            role, body = "summary", body[len(SUMMARY_PREFIX) :]
            templates_across = across
        templates = repeated_templates(body) | templates_across
        rows = repeated_rows(body)
        for line in body.splitlines():
            templated = bool(templates) and template_of(line) in templates
            templated = templated or (bool(rows) and row_shape(line) in rows)
            line = _BULLET.sub("", line).strip()
            if role == "summary":
                # A bullet of an earlier summary is one fact; keep it whole. A log line an
                # earlier summary kept is still a log line.
                if line:
                    units.append(Unit(len(units), role, line, templated))
                continue
            for sentence in _SENTENCE_END.split(line):
                sentence = sentence.strip()
                if sentence:
                    units.append(Unit(len(units), role, sentence, templated))
    return units


# --- scoring --------------------------------------------------------------------------------

_UNIT_WORDS = (
    r"%|‰|°[CF]?|[kKMGT]?B|[kKMGT]i?B|bytes?|bits?|[mµn]?s|sec(?:onds?)?|min(?:utes?)?"
    r"|h(?:ours?|rs?)?|days?|weeks?|months?|years?|k?m|cm|mm|km/h|mph|kg|g|mg|t|tons?|lbs?"
    r"|l|ml|pcs|pieces?|units?|items?|crates?|boxes|pallets?|parcels?|nights?|people|seats?"
    r"|rows?|users?|requests?|rpm|rps|qps|cores?|vCPUs?|GHz|MHz|W|kW|kWh|V|A"
    r"|EUR|USD|GBP|CHF|JPY|CNY|RMB|euros?|dollars?"
)
_QUANTITY = re.compile(
    r"[$€£¥]\s?\d[\d,.]*|\d[\d,.]*\s?(?:" + _UNIT_WORDS + r")\b"
    r"|\d[\d,.]*\s?(?:万元|万|元|块|个|件|台|箱|公斤|千克|克|米|公里|天|小时|分钟|秒|人|次|%)"
)
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*%?")
_URL = re.compile(r"https?://\S+|www\.\S+")
_PATH = re.compile(r"(?<![\w/])(?:~|\.{1,2})?/[\w.-]+(?:/[\w.-]+)+|\b[\w-]+\.[a-z]{2,5}\b")
_IDENT = re.compile(
    r"`[^`]+`|\b\w+(?:_\w+)+\b|\b[a-z]+[A-Z]\w*\b"
    r"|\b(?=[A-Za-z0-9-]*\d)(?=[A-Za-z0-9-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+\b"
    r"|\b[A-Z]{2,}\d+\b"
)
_DATE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}\b|\d{4}年\d{1,2}月\d{1,2}日|\d{1,2}月\d{1,2}日"
    r"|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.? \d{1,2}\b"
    r"|\b(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day\b|\b\d{1,2}:\d{2}\b"
)
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}")
_FULL_NAME = re.compile(r"(?<!^)(?<![.!?] )\b[A-Z][a-z]+ [A-Z][a-z]{2,}\b")  # Amelia Novak
_DECISION = re.compile(
    r"\b(?:decid\w*|agree\w*|approv\w*|chose|choose|settled|confirm\w*|deadline|budget)\b"
    r"|决定|同意|批准|确认|预算|截止|约定|entschieden|vereinbart|Budget|Frist",
    re.IGNORECASE,
)
_CONSTRAINT = re.compile(
    r"\b(?:must|never|always|only|at (?:most|least)|no more than|not (?:more|less) than"
    r"|under|below|above|limit\w*|require\w*|need\w*|prefer\w*|don't|do not|avoid|without"
    r"|please (?:keep|use|remember|note))\b"
    r"|必须|不要|不能|只|最多|至少|不超过|需要|要求|偏好|请用|muss|nie|immer|höchstens|mindestens",
    re.IGNORECASE,
)
_FILLER = re.compile(
    r"^(?:hi|hello|hey|thanks|thank you|ok|okay|sure|great|cool|bye|good (?:morning|night)"
    r"|你好|您好|谢谢|好的|嗯|再见|hallo|danke|gut)\b[\s!.,。！，]*$",
    re.IGNORECASE,
)
_ROLE_BONUS = {"user": 1.5, "tool": 0.5, "assistant": 0.0, "system": 0.5}
# A line of an earlier summary is scored as what it quotes ("User: …"), plus this: it was
# judged worth keeping once already. Its Key facts line carries what the summariser lost.
_SUMMARY_BONUS = 1.0
_KEY_FACTS_BONUS = 8.0
_QUOTED = {label.casefold(): role for labels in LABELS.values() for role, label in labels.items()}
_QUOTE = re.compile(r"^([^\W\d_]{1,12})[:：]\s*")


def _quoted_role(text: str) -> str:
    """The role a summary line quotes ("User: …" → user); "summary" if none."""
    match = _QUOTE.match(text)
    return _QUOTED.get(match.group(1).casefold(), "summary") if match else "summary"


def _key_facts_items(text: str) -> list[str]:
    """The items of a Key facts line."""
    return [item.strip() for item in text[len("Key facts:") :].split(";") if item.strip()]


def _key_facts_score(text: str, shapes: Counter[str] | None) -> float:
    """A Key facts line's score: by how many of its items are one of a kind. An item whose
    shape (``factscan.SHAPE``) many items of the transcript's Key facts lines share — the
    serial numbers and prices of a pasted export the check put back piece by piece — counts
    1 / (1 + log2 of their number), as the check's own ranking damps it, and the line's
    score is scaled by the share of its items that count whole: a line of such items no
    longer outranks the sentences that state the user's facts."""
    items = _key_facts_items(text)
    if not items:
        return 0.0
    if shapes is None:
        distinct = float(len(items))
    else:
        distinct = sum(
            1.0 / (1.0 + math.log2(max(1, shapes[item.translate(SHAPE)]))) for item in items
        )
    # Scaled by the share of one-of-a-kind items: a line of an export's values is mostly
    # noise however many of them it lists.
    return (_KEY_FACTS_BONUS + 3.0 * min(distinct, 5.0)) * distinct / len(items)


def score(
    unit: Unit, stated: int | None = None, key_fact_shapes: Counter[str] | None = None
) -> float:
    """How much hard information a sentence carries (negative: filler, never kept);
    ``stated``: how many facts of the language tables it states, when already counted;
    ``key_fact_shapes``: how many items of the transcript's Key facts lines have each
    shape (:func:`_key_facts_score`)."""
    text = unit.text
    role = unit.role
    bonus = 0.0
    if role == "summary":
        if text.startswith("Key facts:"):
            return _key_facts_score(text, key_fact_shapes)
        role, bonus = _quoted_role(text), _SUMMARY_BONUS
        text = _QUOTE.sub("", text, count=1) if role != "summary" else text
    if _FILLER.match(text):
        return -1.0
    quantities = len(_QUANTITY.findall(text))
    numbers = max(0, len(_NUMBER.findall(text)) - quantities)
    value = bonus + _ROLE_BONUS.get(role, 0.0)
    value += 4.0 * min(quantities, 3)
    value += 1.0 * min(numbers, 3)
    value += 5.0 * min(len(_URL.findall(text)), 2)
    value += 3.0 * min(len(_PATH.findall(text)) + len(_IDENT.findall(text)), 3)
    value += 3.0 * min(len(_DATE.findall(text)), 2)
    value += 1.0 * min(len(_NAME.findall(text)), 3)
    value += 3.0 * min(len(_FULL_NAME.findall(text)), 2)
    value += 2.5 * min(language_facts(text) if stated is None else stated, 3)
    value += 2.5 * bool(_DECISION.search(text))
    if _CONSTRAINT.search(text):
        value += 3.0 if role in ("user", "summary") else 1.0
    value += min(len(text) / 80.0, 1.0)
    if unit.templated:
        value = min(value, 0.5)  # one of a log's many lines: kept only if room is left
    return value


def _speaker(unit: Unit) -> str:
    return _quoted_role(unit.text) if unit.role == "summary" else unit.role


def scores(units: list[Unit]) -> dict[int, float]:
    """Each unit's score. A sentence the assistant or a tool keeps repeating (same words,
    other numbers) is damped after its first two occurrences; a log line after the first
    two of its template is left out (two show what the log looked like)."""
    seen: Counter[str] = Counter()
    out = {}
    # The language tables' facts of all sentences counted in one scan (a pass per pattern
    # over all of them, not per sentence).
    stated = language_facts_of([unit.text for unit in units])
    key_fact_shapes: Counter[str] = Counter(
        item.translate(SHAPE)
        for unit in units
        if unit.role == "summary" and unit.text.startswith("Key facts:")
        for item in _key_facts_items(unit.text)
    )
    for unit, count in zip(units, stated, strict=True):
        # A row of machine output is known by its row shape (its letters may differ too).
        shape = row_shape(unit.text) if unit.templated else template_of(unit.text)
        seen[shape] += 1
        value = score(unit, count, key_fact_shapes)
        if value > 0 and seen[shape] > 2:
            if unit.templated:
                value = -1.0
            elif _speaker(unit) in ("assistant", "tool"):  # the user's words are never noise
                value = min(value, 0.5)
        out[unit.order] = value
    return out


def _line(unit: Unit, lang: str) -> str:
    if unit.role == "summary":
        return f"- {unit.text}"
    colon = "：" if lang == "zh" else ": "
    return f"- {LABELS[lang].get(unit.role, unit.role)}{colon}{unit.text}"


def _clip(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def extractive_summary(transcript: str, max_tokens: int | None = None) -> str:
    """The most informative sentences of ``transcript``, in order, within ``max_tokens``.

    Without a cap the summary aims at about a third of the transcript (at least 120 and at
    most 1,500 tokens), so compaction really shrinks what it is given.
    """
    lang = detect_language(transcript)
    units = transcript_units(transcript)
    # A sentence stating a value that a later one corrected is left out (and the value is
    # taken out of an earlier Key facts line): the summary never presents it as current.
    current = drop_superseded([u.text for u in units])
    units = [
        # A Key facts line is a list of facts: clipping it would drop the last ones.
        Unit(
            kept,
            u.role,
            text if text.startswith("Key facts:") else _clip(text),
            u.templated,
        )
        for kept, (u, text) in enumerate((u, t) for u, t in zip(units, current, strict=True) if t)
    ]
    if max_tokens is None:
        max_tokens = min(max(estimate_tokens(transcript) // 3, 120), 1500)
    scored = scores(units)
    ranked = sorted(units, key=lambda u: (-scored[u.order], u.order))
    chosen: list[Unit] = []
    used = 0
    seen: set[str] = set()
    for unit in ranked:
        if used >= max_tokens:
            break
        if scored[unit.order] < 0 or unit.text in seen:
            continue
        cost = estimate_tokens(_line(unit, lang)) + 1
        if used + cost > max_tokens:
            continue
        chosen.append(unit)
        seen.add(unit.text)
        used += cost
    if not chosen and ranked:
        # Nothing fits whole: a clipped version of the best sentence beats an empty summary.
        best = ranked[0]
        room = max(8, (max_tokens * 3 // 2 if lang == "zh" else max_tokens * 4) - 8)
        clipped = Unit(best.order, best.role, _clip(best.text, room))
        # Characters per token vary with the kind of text (digits cost more than letters).
        while room > 8 and estimate_tokens(_line(clipped, lang)) > max_tokens:
            room = max(8, room * 3 // 4)
            clipped = Unit(best.order, best.role, _clip(best.text, room))
        chosen = [clipped]

    def joined() -> str:
        return "\n".join(_line(u, lang) for u in sorted(chosen, key=lambda u: u.order))

    # Line estimates are rounded one by one: the whole can come out a token or two above
    # their sum. Drop the least informative lines until it fits.
    while len(chosen) > 1 and estimate_tokens(joined()) > max_tokens:
        chosen.pop()
    return joined()
