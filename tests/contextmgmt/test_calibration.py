"""record_usage: a bounded running ratio of reported to estimated tokens (issue 5)."""

import threading

import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextmgmt.budget import resolve_budget
from contextmgmt.calibration import (
    RATIO_MAX,
    RATIO_MIN,
    WINDOW,
    arecord_usage,
    record_usage,
    reset_calibration,
)
from contextmgmt.models import ModelConfig


@pytest.fixture
def fresh_model() -> ModelConfig:
    return ModelConfig.objects.create(
        name="Fresh",
        model="m",
        role="main",
        context_size=128_000,
        max_output_tokens=64_000,
        is_active=True,
    )


def reload(row: ModelConfig) -> ModelConfig:
    row.refresh_from_db()
    return row


@pytest.mark.django_db
def test_first_sample_sets_the_ratio(fresh_model):
    assert record_usage(model_config_id=fresh_model.pk, estimated_tokens=1000, reported_tokens=1500)
    row = reload(fresh_model)
    assert row.token_ratio == pytest.approx(1.5)
    assert row.token_ratio_samples == 1


@pytest.mark.django_db
def test_early_samples_are_averaged(fresh_model):
    for reported in (1200, 1400, 1600):
        record_usage(
            model_config_id=fresh_model.pk, estimated_tokens=1000, reported_tokens=reported
        )
    row = reload(fresh_model)
    assert row.token_ratio == pytest.approx(1.4)
    assert row.token_ratio_samples == 3


@pytest.mark.django_db
def test_running_ratio_follows_a_change_but_weighs_one_sample_by_the_window(fresh_model):
    for _ in range(WINDOW * 3):
        record_usage(model_config_id=fresh_model.pk, estimated_tokens=1000, reported_tokens=1000)
    record_usage(model_config_id=fresh_model.pk, estimated_tokens=1000, reported_tokens=2000)
    assert reload(fresh_model).token_ratio == pytest.approx(1 + 1 / WINDOW)
    for _ in range(WINDOW * 5):
        record_usage(model_config_id=fresh_model.pk, estimated_tokens=1000, reported_tokens=2000)
    assert reload(fresh_model).token_ratio == pytest.approx(2.0, abs=0.01)


@pytest.mark.django_db
@pytest.mark.parametrize(("estimated", "reported"), [(10, 50), (0, 500), (1000, 0), (1000, -4)])
def test_tiny_or_nonsense_samples_are_ignored(fresh_model, estimated, reported):
    used = record_usage(
        model_config_id=fresh_model.pk, estimated_tokens=estimated, reported_tokens=reported
    )
    row = reload(fresh_model)
    assert not used
    assert (row.token_ratio, row.token_ratio_samples) == (1.0, 0)


@pytest.mark.django_db
def test_unknown_model_config_is_not_an_error():
    assert not record_usage(model_config_id=999_999, estimated_tokens=1000, reported_tokens=900)


@pytest.mark.django_db
@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(st.integers(100, 200_000), st.integers(1, 2_000_000)), min_size=1, max_size=30
    )
)
def test_ratio_stays_within_bounds(fresh_model, samples):
    reset_calibration(model_config_ids=[fresh_model.pk])
    for estimated, reported in samples:
        record_usage(
            model_config_id=fresh_model.pk, estimated_tokens=estimated, reported_tokens=reported
        )
    row = reload(fresh_model)
    assert RATIO_MIN <= row.token_ratio <= RATIO_MAX
    assert row.token_ratio_samples == len(samples)


@pytest.mark.django_db
def test_recorded_ratio_reaches_the_budget(fresh_model):
    record_usage(model_config_id=fresh_model.pk, estimated_tokens=10_000, reported_tokens=20_000)
    budget = resolve_budget("main")
    assert budget.token_ratio == pytest.approx(2.0)
    assert budget.effective_input_tokens == 30_000


@pytest.mark.django_db
def test_reset_forgets_everything(fresh_model):
    record_usage(model_config_id=fresh_model.pk, estimated_tokens=1000, reported_tokens=3000)
    assert reset_calibration(model_config_ids=[fresh_model.pk]) == 1
    row = reload(fresh_model)
    assert (row.token_ratio, row.token_ratio_samples) == (1.0, 0)


@pytest.mark.django_db(transaction=True)
async def test_async_wrapper_records(fresh_model):
    assert await arecord_usage(
        model_config_id=fresh_model.pk, estimated_tokens=1000, reported_tokens=1100
    )
    row = await ModelConfig.objects.aget(pk=fresh_model.pk)
    await sync_to_async(connections.close_all)()  # the worker thread's connection
    assert row.token_ratio_samples == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_recorders_lose_no_sample(fresh_model):
    # One UPDATE with F() expressions per sample: no read-modify-write to race.
    per_thread, threads = 25, 4
    errors = []

    def work():
        try:
            for _ in range(per_thread):
                record_usage(
                    model_config_id=fresh_model.pk, estimated_tokens=1000, reported_tokens=1300
                )
        except Exception as exc:  # surfaced below
            errors.append(exc)
        finally:
            connections.close_all()  # this thread's connection, or test DB teardown waits

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert errors == []
    row = reload(fresh_model)
    assert row.token_ratio_samples == per_thread * threads
    assert row.token_ratio == pytest.approx(1.3)
