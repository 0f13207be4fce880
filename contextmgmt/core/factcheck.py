"""Summary fact check: re-add the hard facts a summary dropped (beyond the seeds; R0.2).

Summarisers lose numbers and identifiers silently, and a hallucinating one may replace
them. After an LLM summary, the URLs, file paths, identifiers, dates and numbers of the
summarised messages are extracted; those not found in the summary are ranked (kind, how
often they occur, how recent) and the best are appended as one ``Key facts:`` line within
a small token allowance. The counts are recorded in ``CompactResult.facts_missing`` /
``facts_appended``.

Heuristic, by design: a fact counts as present when its normalised text occurs in the
summary as a whole token (``12`` is not "present" in ``2012``; ``1,234`` matches ``1234``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from . import tokens

KEY_FACTS_LABEL = "Key facts:"
KEY_FACTS_MAX_TOKENS = 150

# (kind, weight, pattern): earlier patterns win; their matches are masked before later ones
# run, so a number inside a URL or an identifier is not extracted again.
_PATTERNS: list[tuple[str, int, re.Pattern[str]]] = [
    ("url", 6, re.compile(r"\bhttps?://[^\s<>\"'`]+", re.IGNORECASE)),
    ("email", 5, re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")),
    (
        "path",
        5,
        re.compile(
            r"(?<![\w/])(?:[A-Za-z]:\\(?:[\w.-]+\\)*[\w.-]+"  # C:\dir\file
            r"|(?:~|\.{1,2})?/(?:[\w.-]+/)*[\w.-]*[A-Za-z_][\w.-]*"  # /abs, ./rel, ~/home
            r"|(?:[\w.-]+/)+[\w-]+\.[A-Za-z0-9]{1,8})"  # dir/file.ext
        ),
    ),
    ("code", 4, re.compile(r"`([^`\n]{2,60})`")),
    (
        "date",
        4,
        re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:?\d{2})?)?\b"),
    ),
    ("version", 4, re.compile(r"\bv?\d+(?:\.\d+){2,}\b")),
    # Letters and digits mixed (INV-2024-0042, a1b2c3, sha 3f9c2e1, gpt-4o), or snake_case.
    (
        "identifier",
        4,
        re.compile(
            r"\b(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9][\w-]*[A-Za-z0-9]\b"
            r"|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b"
        ),
    ),
    ("time", 3, re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?\b")),
    (
        "number",
        2,
        re.compile(
            r"[$€£¥]?(?<![\w.])[-+]?\d{1,3}(?:[,\u00a0\u202f]\d{3})+(?:\.\d+)?%?(?![\w])"
            r"|[$€£¥]?(?<![\w.])[-+]?\d+(?:\.\d+)?%?(?![\w])"
        ),
    ),
]

_PATTERN_WEIGHT = {kind: weight for kind, weight, _ in _PATTERNS}
_THOUSANDS = re.compile(r"(?<=\d)[,\u00a0\u202f](?=\d{3}\b)")


@dataclass(slots=True)
class Fact:
    text: str
    kind: str
    score: float
    first_seen: int


def _normalise(text: str) -> str:
    return _THOUSANDS.sub("", text.casefold())


def _is_trivial_number(text: str) -> bool:
    """Small plain integers ("3 steps", "item 12") are everywhere and rarely the point."""
    digits = sum(c.isdigit() for c in text)
    decorated = any(c in text for c in ".%$€£¥")
    return digits < 3 and not decorated


def extract_facts(sources: Iterable[str]) -> list[Fact]:
    """Distinct facts of ``sources`` (oldest first), best first."""
    found: dict[str, Fact] = {}
    sources = list(sources)
    order = 0
    for index, text in enumerate(sources):
        recency = (index + 1) / max(len(sources), 1)  # 0 < r <= 1, newer is higher
        masked = text
        for kind, weight, pattern in _PATTERNS:
            for match in pattern.finditer(masked):
                value = match.group(1) if kind == "code" else match.group(0)
                value = value.strip().rstrip(".,;:!?)]}>") if kind == "url" else value.strip()
                if not value or (kind == "number" and _is_trivial_number(value)):
                    continue
                key = _normalise(value)
                fact = found.get(key)
                if fact is None:
                    found[key] = Fact(value, kind, weight + recency, order)
                    order += 1
                elif fact.score < _PATTERN_WEIGHT[fact.kind] + 3:
                    fact.score += 1.0  # a repeat makes it more likely to matter (capped)
            masked = pattern.sub(lambda m: " " * len(m.group(0)), masked)
    return sorted(found.values(), key=lambda f: (-f.score, f.first_seen))


def is_present(fact: str, summary_normalised: str) -> bool:
    needle = _normalise(fact)
    if needle[:1] in "$€£¥+-" or needle.endswith("%"):
        # "$1,234.56" is present as "1234.56", "42%" as "42 %" or "42 percent".
        needle = needle.lstrip("$€£¥+-").rstrip("%") or needle
    pattern = r"(?<![\w])" + re.escape(needle) + r"(?![\w])"
    if re.search(pattern, summary_normalised):
        return True
    # Punctuation-edged facts ("$5", "12%", URLs) have no word boundary to anchor on.
    return not needle[:1].isalnum() and not needle[-1:].isalnum() and needle in summary_normalised


def missing_facts(summary: str, sources: Iterable[str]) -> list[Fact]:
    """Facts of ``sources`` that ``summary`` does not contain, best first."""
    normalised = _normalise(summary)
    return [f for f in extract_facts(sources) if not is_present(f.text, normalised)]


def append_key_facts(
    summary: str, sources: Iterable[str], *, max_tokens: int = KEY_FACTS_MAX_TOKENS
) -> tuple[str, tuple[int, int]]:
    """``summary`` plus a ``Key facts:`` line of the most important missing facts.

    Returns (text, (facts_missing, facts_appended)); the appended line, separator included,
    stays within ``max_tokens`` tokens. Nothing is appended when nothing is missing.
    """
    missing = missing_facts(summary, sources)
    if not missing or max_tokens <= 0:
        return summary, (len(missing), 0)
    prefix = f"\n\n{KEY_FACTS_LABEL} "
    chosen: list[str] = []
    for fact in missing:
        candidate = prefix + "; ".join([*chosen, fact.text])
        if tokens.estimate_tokens(candidate) > max_tokens:
            continue  # a shorter, lower-ranked fact may still fit
        chosen.append(fact.text)
    if not chosen:
        return summary, (len(missing), 0)
    return summary + prefix + "; ".join(chosen), (len(missing), len(chosen))
