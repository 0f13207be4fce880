"""Text skills of the offline model: language detection and extractive summaries (issue 4).

Extractive on purpose: the offline model never writes a fact it was not given, so a summary
made of the transcript's own sentences keeps numbers, names, identifiers and URLs verbatim
and stays in the conversation's language. Sentences are scored by how much hard
information they carry, the best ones kept within a token cap, and put back in order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from contextmgmt.core.messages import SUMMARY_PREFIX
from contextmgmt.core.tokens import estimate_tokens

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")
_LETTER = re.compile(r"[^\W\d_]")
_GERMAN = re.compile(
    r"\b(?:und|der|die|das|ist|nicht|ich|wir|mit|für|auf|eine?n?|bitte|danke)\b", re.IGNORECASE
)

LABELS = {
    "en": {"user": "User", "assistant": "Assistant", "tool": "Tool", "system": "Note"},
    "zh": {"user": "用户", "assistant": "助手", "tool": "工具", "system": "备注"},
    "de": {"user": "Nutzer", "assistant": "Assistent", "tool": "Werkzeug", "system": "Notiz"},
}


def detect_language(text: str) -> str:
    """``"zh"`` (CJK script dominant), ``"de"`` (German function words) or ``"en"``."""
    letters = len(_LETTER.findall(text))
    if letters and len(_CJK.findall(text)) / letters > 0.3:
        return "zh"
    words = max(1, len(text.split()))
    if len(_GERMAN.findall(text)) / words > 0.08:
        return "de"
    return "en"


# --- transcript parsing ---------------------------------------------------------------------

# "user: …", "assistant (tool call): …", "tool (calculator): …" — one block per message.
_BLOCK_START = re.compile(
    r"^\s*\[?(system|user|assistant|tool)\]?(?:\s*\([^)\n]{0,60}\))?\s*[:：]\s?",
    re.IGNORECASE | re.MULTILINE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9\u00c0-\u024f])|(?<=[。！？；])")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


@dataclass(frozen=True, slots=True)
class Unit:
    order: int
    role: str  # user / assistant / tool / system / summary
    text: str


def transcript_units(transcript: str) -> list[Unit]:
    """Sentences of a "role: text" transcript, in order, each with its speaker."""
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
    for role, body in blocks:
        body = body.strip()
        if body.startswith(SUMMARY_PREFIX):
            role, body = "summary", body[len(SUMMARY_PREFIX) :]
        for line in body.splitlines():
            line = _BULLET.sub("", line).strip()
            if role == "summary":
                # A bullet of an earlier summary is one fact; keep it whole.
                if line:
                    units.append(Unit(len(units), role, line))
                continue
            for sentence in _SENTENCE_END.split(line):
                sentence = sentence.strip()
                if sentence:
                    units.append(Unit(len(units), role, sentence))
    return units


# --- scoring --------------------------------------------------------------------------------

_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*%?")
_URL = re.compile(r"https?://\S+|www\.\S+")
_IDENT = re.compile(
    r"`[^`]+`|\b\w+(?:[_/]\w+)+\b|\b\w+\.\w{1,5}\b|\b[a-z]+[A-Z]\w*\b|\b[A-Z]{2,}[-_]?\d+\b"
)
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}")
_DECISION = re.compile(
    r"\b(?:decid\w*|agree\w*|must|need\w*|prefer\w*|deadline|budget|require\w*|constraint)\b"
    r"|决定|需要|必须|预算|截止|要求|偏好|约定|entschieden|muss|brauche|Budget|Frist",
    re.IGNORECASE,
)
_FILLER = re.compile(
    r"^(?:hi|hello|hey|thanks|thank you|ok|okay|sure|great|cool|bye|good (?:morning|night)"
    r"|你好|您好|谢谢|好的|嗯|再见|hallo|danke|gut)\b[\s!.,。！，]*$",
    re.IGNORECASE,
)
_ROLE_BONUS = {"summary": 4.0, "user": 1.0, "tool": 0.5, "assistant": 0.0, "system": 0.5}


def score(unit: Unit) -> float:
    text = unit.text
    if _FILLER.match(text):
        return -1.0
    value = _ROLE_BONUS.get(unit.role, 0.0)
    value += 3.0 * min(len(_NUMBER.findall(text)), 5)
    value += 4.0 * min(len(_URL.findall(text)), 3)
    value += 2.0 * min(len(_IDENT.findall(text)), 4)
    value += 1.0 * min(len(_NAME.findall(text)), 3)
    value += 1.5 * bool(_DECISION.search(text))
    value += min(len(text) / 80.0, 1.0)
    return value


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
    units = [Unit(u.order, u.role, _clip(u.text)) for u in transcript_units(transcript)]
    if max_tokens is None:
        max_tokens = min(max(estimate_tokens(transcript) // 3, 120), 1500)
    scores = {u.order: score(u) for u in units}
    ranked = sorted(units, key=lambda u: (-scores[u.order], u.order))
    chosen: list[Unit] = []
    used = 0
    seen: set[str] = set()
    for unit in ranked:
        if used >= max_tokens:
            break
        if scores[unit.order] < 0 or unit.text in seen:
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
        chosen = [Unit(best.order, best.role, _clip(best.text, room))]
    return "\n".join(_line(u, lang) for u in sorted(chosen, key=lambda u: u.order))
