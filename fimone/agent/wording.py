"""The few sentences the engine writes to the user itself, in the user's language.

The engine is framework-free (no Django, so no gettext): the run hands it the user's
interface language as data (``AgentContext.language``, a code such as "zh-hans"), and these
tables give English, Chinese and German. Placeholders are ``str.format`` fields.
"""

from __future__ import annotations

_SENTENCES: dict[str, dict[str, str]] = {
    "limit_one": {
        "en": "I stopped after {steps} step without finishing the task. ",
        "de": "Ich habe nach {steps} Schritt aufgehört, ohne die Aufgabe abzuschließen. ",
        "zh": "我在 {steps} 步之后停了下来，任务尚未完成。",
    },
    "limit_many": {
        "en": "I stopped after {steps} steps without finishing the task. ",
        "de": "Ich habe nach {steps} Schritten aufgehört, ohne die Aufgabe abzuschließen. ",
        "zh": "我在 {steps} 步之后停了下来，任务尚未完成。",
    },
    "no_answer": {
        "en": "I could not produce an answer this time. Please try again or rephrase.",
        "de": "Diesmal konnte ich keine Antwort geben. Versuche es bitte noch einmal oder "
        "formuliere die Frage um.",
        "zh": "这次我没能给出回答。请重试，或换一种问法。",
    },
    "skipped": {
        "en": "skipped: step {steps} failed",
        "de": "übersprungen: Schritt {steps} ist fehlgeschlagen",
        "zh": "已跳过：步骤 {steps} 失败",
    },
    "checker_unreachable": {
        "en": "the checker could not be asked ({error})",
        "de": "die Prüfung konnte nicht befragt werden ({error})",
        "zh": "无法询问检查器（{error}）",
    },
    "checker_unreadable": {
        "en": "the checker's reply was not a readable verdict",
        "de": "die Antwort der Prüfung war kein lesbares Urteil",
        "zh": "检查器的回复不是可读的结论",
    },
}


def language_of(code: str | None) -> str:
    """The table's language for a language code ("zh-hans", "de-DE"); English otherwise."""
    short = (code or "").lower().replace("_", "-").split("-", 1)[0]
    return short if short in ("en", "de", "zh") else "en"


def say(key: str, language: str | None, **fields: object) -> str:
    """The sentence ``key`` in ``language`` (a language code)."""
    return _SENTENCES[key][language_of(language)].format(**fields)
