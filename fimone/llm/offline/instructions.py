"""What the offline model follows of the standing instructions it is sent
(``contextmgmt.core.instructions``): the language to answer in and a sign-off line.

"Answer in German", "Antworte auf Deutsch", "Réponds en français", "Responde en español",
"用中文回答" name the language (English, German, French, Spanish, Chinese); "End every answer
with '— Your assistant'", "Sign off with …", "Beende jede Antwort mit …", "Termine chaque
réponse par …", "Termina cada respuesta con …", "以“……”结尾" give a sign-off, quoted (or the
rest of the line). Where several say different things the last wins: a conversation's own
instructions come after its project's. Everything else in them this model cannot follow:
it has no language model (docs/projects.md, "In the context").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from contextmgmt.core.instructions import INSTRUCTIONS_INTRO, is_instructions
from contextmgmt.core.messages import ChatMessage

_LANGUAGES = {
    "en": ("english", "englisch", "anglais", "inglés", "ingles", "英文", "英语"),
    "de": ("german", "deutsch", "allemand", "alemán", "aleman", "德语", "德文"),
    "fr": ("french", "französisch", "franzoesisch", "français", "francais", "francés", "法语"),
    "es": ("spanish", "spanisch", "espagnol", "español", "espanol", "西班牙语", "西班牙文"),
    "zh": ("chinese", "chinesisch", "chinois", "chino", "中文", "汉语", "漢語", "中国语"),
}
_LANGUAGE_OF = {name: code for code, names in _LANGUAGES.items() for name in names}
_NAMES = "|".join(sorted(map(re.escape, _LANGUAGE_OF), key=len, reverse=True))
# A verb of answering or writing, then within the same sentence "in/auf/en <language>".
_ANSWER_IN = re.compile(
    r"\b(?:answer|respond|reply|write|speak|talk|antworte\w*|schreib\w*|sprich|"
    r"réponds|répondez|répondre|écris|écrivez|parle[sz]?|responde\w*|contesta\w*|"
    r"escrib\w*|habla\w*)\b[^.!?\n]{0,60}?\b(?:in|auf|en)\s+(" + _NAMES + r")\b",
    re.IGNORECASE,
)
# "用中文回答", "请以英文回复".
_ANSWER_IN_ZH = re.compile(r"(?:用|以|使用)\s*(" + _NAMES + r")\s*(?:回答|回复|作答|答复|书写|写)")
_SIGN_OFF = re.compile(
    r"\b(?:(?:end|close|finish|conclude)\b[^.!?\n]{0,40}?\bwith|sign(?:\s+off)?\b[^.!?\n]{0,30}?"
    r"\b(?:with|as)|(?:beende|schließe|schliesse|unterschreib\w*)\b[^.!?\n]{0,40}?\bmit|"
    r"(?:termine[sz]?|finis|finissez|signe[sz]?)\b[^.!?\n]{0,40}?\b(?:par|avec)|"
    r"(?:termina\w*|finaliza\w*|acaba\w*|firma\w*)\b[^.!?\n]{0,40}?\bcon)\b",
    re.IGNORECASE,
)
_SIGN_OFF_ZH = re.compile(r"以\s*[“\"「『]([^”\"」』\n]{1,80})[”\"」』]\s*(?:结尾|结束|落款|署名)")
_QUOTES = {"'": "'", '"': '"', "“": "”", "„": '“”"', "«": "»", "「": "」", "『": "』", "‘": "’"}
MAX_SIGN_OFF_CHARS = 120


@dataclass(frozen=True, slots=True)
class Followed:
    """What this model follows of the instructions: a language code and a sign-off line,
    each None when the instructions say nothing it understands about it."""

    language: str | None = None
    sign_off: str | None = None


def followed(messages: Sequence[ChatMessage]) -> Followed:
    """What the instructions among ``messages`` ask that this model can do."""
    text = "\n".join(
        m.text().removeprefix(INSTRUCTIONS_INTRO) for m in messages if is_instructions(m)
    )
    if not text:
        return Followed()
    return Followed(language=_language(text), sign_off=_sign_off(text))


def _language(text: str) -> str | None:
    found = [(m.start(), m.group(1)) for m in _ANSWER_IN.finditer(text)]
    found += [(m.start(), m.group(1)) for m in _ANSWER_IN_ZH.finditer(text)]
    if not found:
        return None
    return _LANGUAGE_OF.get(max(found)[1].lower())


def _sign_off(text: str) -> str | None:
    found: list[tuple[int, str]] = []
    for m in _SIGN_OFF.finditer(text):
        line = _quoted_or_rest(text[m.end() :].split("\n", 1)[0])
        if line:
            found.append((m.start(), line))
    found += [(m.start(), m.group(1).strip()) for m in _SIGN_OFF_ZH.finditer(text)]
    if not found:
        return None
    return max(found)[1][:MAX_SIGN_OFF_CHARS]


def _quoted_or_rest(rest: str) -> str:
    """The quoted text at the start of ``rest`` ("'— Your assistant'."), else the rest of
    the line without its closing full stop."""
    rest = rest.lstrip(" :：")
    if rest[:1] in _QUOTES:
        closing = _QUOTES[rest[0]]
        end = next((i for i in range(1, len(rest)) if rest[i] in closing), -1)
        if end > 1:
            return rest[1:end].strip()
    return rest.strip().rstrip(".。").strip()


def with_sign_off(lines: list[str], sign_off: str | None) -> list[str]:
    """``lines`` ending with the sign-off once (a line of it already there, from a step's
    result, is dropped)."""
    if not sign_off:
        return lines
    return [line for line in lines if line.strip() != sign_off] + [sign_off]
