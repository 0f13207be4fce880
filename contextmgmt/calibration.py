"""Per-class token calibration per ModelConfig, learnt from the provider's usage reports.

Each report is a sample: the class counts of what was sent (``tokens.CLASSES``; see
``docs/tokens.md``), the tokens fimone adds that are not text (per-message overhead,
images, at their fixed rates) and the input tokens the provider billed. The most recent
``WINDOW`` samples of a model are kept in ``TokenSample`` rows; after each one the model's
class weights are refitted (relative least squares, ``contextmgmt.core.tokens_fit``):

- a class the samples hold little of stays near its base weight (a ridge towards the base
  weights that scales with the evidence), so a JSON-heavy conversation that says nothing
  about English leaves English where it was; the ridge is firmer on the classes tokenizers
  agree on (ASCII letters, whitespace) than on those they do not (scripts, digits);
- samples the first fit misses by far more than the rest (a provider bug, a cached-prompt
  discount, a truncated request) are dropped before the second fit;
- no weight goes below ``FLOOR`` x its base weight, nor above ``CEILING`` x it.

The floor: o200k_base, which the base weights were fitted to, has one of the largest
vocabularies in use (200k), so other tokenizers (Llama, Qwen, Claude, Mistral) count as
many tokens or more for the same text; a model that seems to count much fewer is more
likely a provider reporting fewer tokens than it read (cached prompts) than a leaner
tokenizer. Allowing 20 % below the base also covers the base weights' own error on the
kinds of text they over-count most (English and German about +12 %, see docs/tokens.md).

Concurrency: a sample is an INSERT and a counter UPDATE with an F() expression (two
processes recording at once both keep theirs); the refit reads the latest window and
writes the weights with one UPDATE, so the weights are always a fit of a recent window,
and the next sample's refit includes any sample a concurrent refit missed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from contextmgmt.core.tokens import BASE_WEIGHTS, CLASSES, N_CLASSES
from contextmgmt.core.tokens_fit import Sample, fit_weights

WINDOW = 50
FLOOR = 0.8
CEILING = 4.0
# Tiny requests give noisy samples (the fixed overheads dominate): ignore them.
MIN_REPORTED_TOKENS = 100
# How strongly the fit holds each class to its base weight, relative to the samples'
# evidence about that class.
PRIOR_STRENGTH = 0.003
# ...scaled per class by how much tokenizers are known to differ on it. ASCII letters and
# whitespace cost about the same in every large BPE vocabulary, so one report that comes
# in far above the estimate is much more likely explained by the scripts (Cyrillic, CJK,
# Arabic, … cost 1.3-2x more in a smaller vocabulary) or by digits and punctuation (some
# tokenizers split every digit) than by English text. Without this, the first report of a
# multilingual conversation raised every weight alike and over-counted English by half
# until a few dozen reports had separated the classes (bench/calibration.py, docs/tokens.md).
_PRIOR_SCALE = {
    **dict.fromkeys(("lower", "upper", "space", "newline", "other_space"), 10.0),
    **dict.fromkeys(("digit", "punct", "quote", "encoded"), 3.0),
    "latin_ext": 2.0,
}
CLASS_PRIOR_STRENGTH = tuple(PRIOR_STRENGTH * _PRIOR_SCALE.get(name, 0.5) for name in CLASSES)
# A sample whose first-fit error is this many times the median error (and above 5 %) is an
# outlier.
OUTLIER_FACTOR = 4.0
# A refit that moves no weight and not the ratio by more than this (relative) leaves the
# runs' looked-up budgets as they are: a run's models are looked up again only when the
# rows changed (contextmgmt.generations), and a refit after every answer would make every
# run look them up. Every ``REPUBLISH_EVERY``-th sample is published whatever it moved, so
# small moves never pile up unseen for long.
PUBLISH_MOVE = 0.01
REPUBLISH_EVERY = 10


def weights_of(stored: Sequence[float] | None) -> tuple[float, ...] | None:
    """A model's stored weights as the estimator takes them; None = the base weights."""
    if not stored or len(stored) != N_CLASSES:
        return None
    return tuple(float(w) for w in stored)


def fit_samples(samples: Sequence[tuple[Sequence[int], int, int]]) -> list[float]:
    """Class weights for (counts, fixed tokens, reported tokens) samples, within the bounds."""
    usable = [
        (counts, reported - fixed)
        for counts, fixed, reported in samples
        if reported - fixed > 0 and any(counts)
    ]
    lower = [FLOOR * w for w in BASE_WEIGHTS]
    upper = [max(CEILING * w, 0.05) for w in BASE_WEIGHTS]
    if not usable:
        return list(BASE_WEIGHTS)

    def fit(rows: Sequence[Sample]) -> list[float]:
        return fit_weights(
            rows,
            lower=lower,
            upper=upper,
            prior=BASE_WEIGHTS,
            prior_strength=CLASS_PRIOR_STRENGTH,
            relative_prior=True,
        )

    weights = fit(usable)
    errors = [abs(math.log(max(_dot(c, weights), 1e-9) / y)) for c, y in usable]
    median = sorted(errors)[len(errors) // 2]
    limit = max(0.05, OUTLIER_FACTOR * median)
    kept = [row for row, error in zip(usable, errors, strict=True) if error <= limit]
    if len(kept) < len(usable) and kept:
        weights = fit(kept)
    return weights


def _dot(counts: Sequence[int], weights: Sequence[float]) -> float:
    return sum(c * w for c, w in zip(counts, weights, strict=True))


def record_usage(
    *, model_config_id: int, counts: Sequence[int], fixed_tokens: int, reported_tokens: int
) -> bool:
    """Store one usage report and refit the model's weights.

    Returns whether the sample was used (False for tiny or nonsensical samples, or a
    ModelConfig that no longer exists). Sync; from async code use ``arecord_usage``.
    """
    from django.db import IntegrityError
    from django.db.models import F

    from contextmgmt import generations
    from contextmgmt.models import ModelConfig, TokenSample

    if reported_tokens < MIN_REPORTED_TOKENS or len(counts) != N_CLASSES or not any(counts):
        return False
    before = (
        ModelConfig.objects.filter(pk=model_config_id)
        .values_list("token_weights", "token_ratio", "token_ratio_samples")
        .first()
    )
    if before is None:
        return False
    old_weights, old_ratio, old_samples = before
    try:
        TokenSample.objects.create(
            model_config_id=model_config_id,
            counts=[int(c) for c in counts],
            fixed_tokens=int(fixed_tokens),
            reported_tokens=int(reported_tokens),
        )
    except IntegrityError:  # the ModelConfig was deleted
        return False
    # Every sample is counted (one atomic UPDATE), the window holds the latest WINDOW.
    ModelConfig.objects.filter(pk=model_config_id).update(
        token_ratio_samples=F("token_ratio_samples") + 1
    )
    recent = TokenSample.objects.filter(model_config_id=model_config_id).order_by("-id")
    rows = list(recent.values_list("id", "counts", "fixed_tokens", "reported_tokens")[:WINDOW])
    if len(rows) == WINDOW:
        recent.filter(id__lt=rows[-1][0]).delete()
    samples = [(c, f, r) for _, c, f, r in rows if isinstance(c, list) and len(c) == N_CLASSES]
    weights = [round(w, 4) for w in fit_samples(samples)]
    base = sum(_dot(c, BASE_WEIGHTS) + f for c, f, _ in samples)
    reported = sum(r for _, _, r in samples)
    # How this model's tokenizer compares with o200k_base on its recent traffic.
    ratio = reported / base if base else 1.0
    ModelConfig.objects.filter(pk=model_config_id).update(token_weights=weights, token_ratio=ratio)
    moved = _moved(weights_of(old_weights) or BASE_WEIGHTS, weights) or _moved(
        [old_ratio or 1.0], [ratio]
    )
    if moved or (old_samples + 1) % REPUBLISH_EVERY == 0:
        # The next run estimates with the new weights (contextmgmt.generations).
        generations.replace_on_commit(generations.MODEL_CONFIGS)
    return True


def _moved(old: Sequence[float], new: Sequence[float]) -> bool:
    """Whether any value moved by more than ``PUBLISH_MOVE`` of itself."""
    return any(abs(b - a) > PUBLISH_MOVE * abs(a) for a, b in zip(old, new, strict=True))


async def arecord_usage(
    *, model_config_id: int, counts: Sequence[int], fixed_tokens: int, reported_tokens: int
) -> bool:
    from asgiref.sync import sync_to_async

    return await sync_to_async(record_usage)(
        model_config_id=model_config_id,
        counts=counts,
        fixed_tokens=fixed_tokens,
        reported_tokens=reported_tokens,
    )


def reset_calibration(*, model_config_ids: list[int]) -> int:
    """Forget what was learnt: base weights, no samples. Returns the number of rows reset."""
    from contextmgmt import generations
    from contextmgmt.models import ModelConfig, TokenSample

    TokenSample.objects.filter(model_config_id__in=model_config_ids).delete()
    count = ModelConfig.objects.filter(pk__in=model_config_ids).update(
        token_weights=[], token_ratio=1.0, token_ratio_samples=0
    )
    generations.replace_on_commit(generations.MODEL_CONFIGS)
    return count


def describe_weights(stored: Sequence[float] | None) -> list[tuple[str, float, float]]:
    """(class, weight, weight / base) of the classes whose weight moved, for the admin."""
    weights = weights_of(stored)
    if weights is None:
        return []
    return [
        (name, w, w / base if base else 0.0)
        for name, w, base in zip(CLASSES, weights, BASE_WEIGHTS, strict=True)
        if abs(w - base) > 1e-3
    ]
