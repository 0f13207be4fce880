"""What the offline summariser (``offline_text``) knows about facts beyond its own scores.

- Facts as each language writes them (``contextmgmt.core.factlang``): a German amount, a
  spaced IBAN, a phone number, a Chinese address or name makes a sentence worth keeping,
  as an English amount with a unit does.
- Rows of machine output: a pasted export or a long table repeats one row shape (letters
  and digits of any length, the same punctuation) many times; its rows are scored as a
  log's lines are, while a row of another shape among them (a note in an export, the one
  row that differs) keeps its score.
- Corrections (``contextmgmt.core.corrections``): a sentence that states a value a later
  correction replaced is left out, and a replaced value is taken out of an earlier
  summary's Key-facts line, so the summary never presents it as current.
"""

from __future__ import annotations

import re
from collections import Counter

from contextmgmt.core.corrections import superseded
from contextmgmt.core.factlang import locale_facts, locale_facts_of
from contextmgmt.core.factscan import facts_in, normalise

# A row shape repeated this often in one message is machine output (an export, a table).
REPEATED_ROWS_MIN = 8
_LETTERS = re.compile(r"[^\W\d_]+")
_DIGITS = re.compile(r"\d+")
KEY_FACTS = "Key facts:"


def row_shape(line: str) -> str:
    """``line`` with every run of letters an "a" and every run of digits a "0"."""
    return _DIGITS.sub("0", _LETTERS.sub("a", line.strip()))


def repeated_rows(body: str) -> set[str]:
    """The row shapes ``body`` repeats on ``REPEATED_ROWS_MIN`` lines or more."""
    if body.count("\n") < REPEATED_ROWS_MIN - 1:
        return set()
    counts = Counter(row_shape(line) for line in body.split("\n") if line.strip())
    return {shape for shape, n in counts.items() if n >= REPEATED_ROWS_MIN}


def language_facts(text: str) -> int:
    """How many facts of the language tables ``text`` states."""
    return len(locale_facts(text))


def language_facts_of(texts: list[str]) -> list[int]:
    """:func:`language_facts` of each of ``texts``, scanned together."""
    return [len(found) for found in locale_facts_of(texts)]


def drop_superseded(texts: list[str]) -> list[str | None]:
    """``texts`` (a transcript's sentences, in order) with those that state a replaced value
    as None, and replaced values taken out of Key-facts lines."""
    replaced = superseded(texts)
    if not replaced:
        return list(texts)
    out: list[str | None] = []
    for text in texts:
        folded = normalise(text)
        if not any(old in folded for old in replaced.by):
            out.append(text)
            continue
        keys = {normalise(fact[3]) for fact in facts_in(text)}
        stale = {key for key in keys if key in replaced and replaced.replacement(key) not in keys}
        if not stale:
            out.append(text)
        elif text.startswith(KEY_FACTS):
            items = text[len(KEY_FACTS) :].split(";")
            kept = [item for item in items if normalise(item.strip()) not in stale]
            out.append(KEY_FACTS + ";".join(kept) if kept else None)
        else:
            out.append(None)
    return out
