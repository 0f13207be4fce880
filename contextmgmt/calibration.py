"""Token-count calibration per ModelConfig ("calibrated budgets").

After an LLM call the caller knows two numbers for the same request: fimone's heuristic
estimate and the provider's reported input tokens. Their ratio, kept as a
bounded running average on the ModelConfig row, shrinks that model's effective budget
(``Budget.effective_input_tokens``) when its tokenizer counts more than the heuristic.

The update is a single UPDATE with F() expressions, so two processes recording at once
never lose each other's sample (no read-modify-write in Python).
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.db.models import F, FloatField, Value
from django.db.models.functions import Cast, Greatest, Least

from contextmgmt.models import ModelConfig

RATIO_MIN = 0.5
RATIO_MAX = 3.0
# The first WINDOW samples are averaged equally; after that each new sample weighs 1/WINDOW
# (an exponential moving average), so the ratio follows a provider that changes tokenizer.
WINDOW = 20
# Tiny requests give noisy ratios (per-message overheads dominate): ignore them.
MIN_ESTIMATED_TOKENS = 100


def clamp_ratio(ratio: float) -> float:
    return min(RATIO_MAX, max(RATIO_MIN, ratio))


def record_usage(*, model_config_id: int, estimated_tokens: int, reported_tokens: int) -> bool:
    """Fold one (estimate, reported) pair into the model's running ratio.

    Returns whether the sample was used (False for tiny or nonsensical samples, or a
    ModelConfig that no longer exists). Sync; from async code use ``arecord_usage``.
    """
    if estimated_tokens < MIN_ESTIMATED_TOKENS or reported_tokens <= 0:
        return False
    # One outlier (a provider bug, a cached prompt discount) must not swing the budget.
    sample = clamp_ratio(reported_tokens / estimated_tokens)
    ratio = F("token_ratio")
    weight = Cast(Least(F("token_ratio_samples") + 1, Value(WINDOW)), FloatField())
    new_ratio = Least(
        Greatest(ratio + (Value(sample) - ratio) / weight, Value(RATIO_MIN)),
        Value(RATIO_MAX),
        output_field=FloatField(),
    )
    updated = ModelConfig.objects.filter(pk=model_config_id).update(
        token_ratio=new_ratio, token_ratio_samples=F("token_ratio_samples") + 1
    )
    return updated == 1


async def arecord_usage(
    *, model_config_id: int, estimated_tokens: int, reported_tokens: int
) -> bool:
    return await sync_to_async(record_usage)(
        model_config_id=model_config_id,
        estimated_tokens=estimated_tokens,
        reported_tokens=reported_tokens,
    )


def reset_calibration(*, model_config_ids: list[int]) -> int:
    """Forget what was learnt: ratio 1.0, no samples. Returns the number of rows reset."""
    return ModelConfig.objects.filter(pk__in=model_config_ids).update(
        token_ratio=1.0, token_ratio_samples=0
    )
