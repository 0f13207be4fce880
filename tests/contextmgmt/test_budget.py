"""resolve_budget: ModelConfig row > environment > defaults, floor, main vs fast (SPEC R5)."""

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contextmgmt.budget import Budget, resolve_budget
from contextmgmt.models import ModelConfig
from tests.support.factories import make_model_config

REPO = Path(__file__).resolve().parents[2]
BUDGET_VARS = (
    "LLM_CONTEXT_SIZE",
    "LLM_MAX_OUTPUT_TOKENS",
    "FAST_LLM_CONTEXT_SIZE",
    "FAST_LLM_MAX_OUTPUT_TOKENS",
)


@pytest.fixture
def no_env_budget(settings):
    """Settings as if no budget variable and no fast model were set."""
    for name in BUDGET_VARS:
        setattr(settings, name, None)
    settings.FAST_LLM_MODEL = ""
    return settings


def active_model(role: str, context_size: int, max_output_tokens: int, **extra) -> ModelConfig:
    return make_model_config(
        role, context_size=context_size, max_output_tokens=max_output_tokens, **extra
    )


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["main", "fast"])
def test_defaults_are_128k_context_64k_output_60k_usable(no_env_budget, role):
    # R5.1 / R5.2 (3)
    budget = resolve_budget(role)
    assert (budget.context_size, budget.max_output_tokens) == (128_000, 64_000)
    assert budget.usable_input_tokens == 60_000
    assert budget.source == "default"
    assert budget.role == role


@pytest.mark.django_db
def test_main_env_values_beat_defaults(no_env_budget):
    # R5.2 (2)
    no_env_budget.LLM_CONTEXT_SIZE = 32_000
    no_env_budget.LLM_MAX_OUTPUT_TOKENS = 8_000
    budget = resolve_budget("main")
    assert budget.source == "env"
    assert budget.usable_input_tokens == 32_000 - 8_000 - 4_000


@pytest.mark.django_db
def test_one_env_value_keeps_the_default_for_the_other(no_env_budget):
    no_env_budget.LLM_CONTEXT_SIZE = 200_000
    budget = resolve_budget("main")
    assert (budget.context_size, budget.max_output_tokens, budget.source) == (
        200_000,
        64_000,
        "env",
    )
    assert budget.usable_input_tokens == 132_000


@pytest.mark.django_db
def test_active_db_row_beats_env(no_env_budget):
    # R5.2 (1)
    no_env_budget.LLM_CONTEXT_SIZE = 32_000
    no_env_budget.LLM_MAX_OUTPUT_TOKENS = 8_000
    row = active_model("main", 1_000_000, 100_000)
    budget = resolve_budget("main")
    assert budget.source == "db"
    assert budget.model_config_id == row.pk
    assert budget.usable_input_tokens == 1_000_000 - 100_000 - 4_000


@pytest.mark.django_db
def test_inactive_db_row_is_ignored(no_env_budget):
    ModelConfig.objects.create(
        name="off", model="m", role="main", context_size=16_000, max_output_tokens=4_000
    )
    assert resolve_budget("main").source == "default"


@pytest.mark.django_db
def test_fast_env_twins_beat_main_env_each_on_its_own(no_env_budget):
    # R5.3: the fast LLM has its own budget; a missing FAST_ value falls back to main's.
    no_env_budget.LLM_CONTEXT_SIZE = 32_000
    no_env_budget.LLM_MAX_OUTPUT_TOKENS = 8_000
    no_env_budget.FAST_LLM_CONTEXT_SIZE = 16_000
    fast = resolve_budget("fast")
    main = resolve_budget("main")
    assert (fast.context_size, fast.max_output_tokens, fast.source) == (16_000, 8_000, "env")
    assert fast.usable_input_tokens == 4_000
    assert main.usable_input_tokens == 20_000


@pytest.mark.django_db
def test_fast_falls_back_to_main_env_values(no_env_budget):
    no_env_budget.LLM_CONTEXT_SIZE = 48_000
    no_env_budget.LLM_MAX_OUTPUT_TOKENS = 8_000
    fast = resolve_budget("fast")
    assert (fast.context_size, fast.source, fast.usable_input_tokens) == (48_000, "env", 36_000)


@pytest.mark.django_db
def test_main_and_fast_db_rows_are_independent(no_env_budget):
    # R5.3
    active_model("main", 200_000, 16_000)
    active_model("fast", 32_000, 4_000)
    main, fast = resolve_budget("main"), resolve_budget("fast")
    assert main.usable_input_tokens == 180_000
    assert fast.usable_input_tokens == 24_000
    assert (main.role, fast.role) == ("main", "fast")


@pytest.mark.django_db
def test_fast_row_beats_fast_env(no_env_budget):
    no_env_budget.FAST_LLM_CONTEXT_SIZE = 16_000
    active_model("fast", 64_000, 8_000)
    fast = resolve_budget("fast")
    assert (fast.source, fast.usable_input_tokens) == ("db", 52_000)


@pytest.mark.django_db
def test_fast_with_nothing_fast_specific_runs_on_the_main_row(no_env_budget):
    # No fast row, no FAST_ variable: the fast role uses the main model, so its budget.
    row = active_model("main", 64_000, 8_000)
    fast = resolve_budget("fast")
    assert (fast.role, fast.source, fast.model_config_id) == ("fast", "db", row.pk)
    assert fast.usable_input_tokens == 52_000


@pytest.mark.django_db
def test_a_fast_model_named_in_env_does_not_inherit_the_main_row(no_env_budget):
    active_model("main", 64_000, 8_000)
    no_env_budget.FAST_LLM_MODEL = "small-model"
    fast = resolve_budget("fast")
    assert (fast.source, fast.usable_input_tokens) == ("default", 60_000)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("context_size", "max_output"),
    [(8_000, 4_000), (10_000, 9_000), (4_096, 8_192), (-5, 0)],
)
def test_floor_clamps_misconfiguration_to_4000_and_warns(
    no_env_budget, caplog, context_size, max_output
):
    # R5.4: clamped, never a silent failure.
    no_env_budget.LLM_CONTEXT_SIZE = context_size
    no_env_budget.LLM_MAX_OUTPUT_TOKENS = max_output
    with caplog.at_level("WARNING", logger="contextmgmt.budget"):
        budget = resolve_budget("main")
    assert budget.usable_input_tokens == 4_000
    assert "floor" in caplog.text


@pytest.mark.django_db
def test_floor_applies_to_a_db_row_saved_without_validation(no_env_budget):
    active_model("main", 6_000, 4_000)
    assert resolve_budget("main").usable_input_tokens == 4_000


@pytest.mark.django_db
def test_unknown_role_is_an_error(no_env_budget):
    with pytest.raises(ValueError, match="unknown budget role"):
        resolve_budget("slow")


@pytest.mark.django_db
def test_calibration_ratio_shrinks_the_effective_budget(no_env_budget):
    active_model("main", 128_000, 64_000, token_ratio=1.5, token_ratio_samples=12)
    budget = resolve_budget("main")
    assert budget.usable_input_tokens == 60_000
    assert (budget.token_ratio, budget.token_ratio_samples) == (1.5, 12)
    assert budget.effective_input_tokens == 40_000


def make_budget(usable: int, ratio: float) -> Budget:
    return Budget("main", 0, 0, usable, "env", token_ratio=ratio)


@pytest.mark.parametrize(
    ("usable", "ratio", "effective"),
    [(60_000, 1.0, 60_000), (60_000, 0.6, 60_000), (60_000, 2.0, 30_000), (6_000, 3.0, 4_000)],
)
def test_effective_budget_never_grows_and_keeps_the_floor(usable, ratio, effective):
    assert make_budget(usable, ratio).effective_input_tokens == effective


def test_budget_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        make_budget(60_000, 1.0).context_size = 1


@pytest.mark.parametrize("name", ["LLM_CONTEXT_SIZE", "FAST_LLM_MAX_OUTPUT_TOKENS"])
def test_unparseable_env_value_fails_at_start_up(tmp_path, name):
    # Issue 5: a bad value is a configuration error at start-up, not a silent default.
    env = {**os.environ, "FIMONE_DATA_DIR": str(tmp_path), name: "abc"}
    proc = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0
    assert name in proc.stderr
    assert "'abc'" in proc.stderr
