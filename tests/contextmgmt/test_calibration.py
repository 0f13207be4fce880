"""Per-class calibration from usage reports (SPEC RK.2): bounded, robust, floored, per model."""

import json
import random
import threading

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from contextmgmt import generations
from contextmgmt.budget import resolve_budget
from contextmgmt.calibration import (
    FLOOR,
    REPUBLISH_EVERY,
    WINDOW,
    arecord_usage,
    fit_samples,
    record_usage,
    reset_calibration,
    weights_of,
)
from contextmgmt.core.messages import ChatMessage
from contextmgmt.core.tokens import (
    BASE_WEIGHTS,
    CLASSES,
    text_counts,
    tokens_of_counts,
    usage_sample,
)
from contextmgmt.models import ModelConfig, TokenSample

ENGLISH = (
    "The committee reviewed the quarterly budget and approved the migration plan. "
    "Deployment must finish before the audit; the team will report progress on Friday. "
)
CODE = (
    "def estimate(messages: list[dict]) -> int:\n    total = 0\n    for m in messages:\n"
    "        total += 4 + len(m['content']) // 4\n    return total\n"
)
RUSSIAN = "Контекстное окно конечно: системный промпт и история разговора занимают бюджет. "


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


def scaled(**factors: float) -> tuple[float, ...]:
    """The base weights with some classes scaled: a tokenizer that differs on those."""
    return tuple(w * factors.get(name, 1.0) for name, w in zip(CLASSES, BASE_WEIGHTS, strict=True))


def report(counts, fixed, truth, rng) -> int:
    """What a provider with ``truth`` weights bills, give or take 2 %."""
    value = sum(c * w for c, w in zip(counts, truth, strict=True)) + fixed
    return round(value * rng.uniform(0.98, 1.02))


def json_heavy_conversation(rng: random.Random, turns: int) -> list[list[ChatMessage]]:
    """The prompt of every model call of a conversation whose tool results are JSON: some
    turns fetch a lot, some a little, and the answers are short or long."""
    messages = [ChatMessage(role="system", content=ENGLISH * 4)]
    prompts = []
    for turn in range(turns):
        messages.append(ChatMessage(role="user", content=f"Show me the orders of week {turn}."))
        rows = [
            {"id": rng.randrange(10**6), "sku": f"SKU-{rng.randrange(10**4)}",
             "qty": rng.randint(1, 9), "price": round(rng.uniform(1, 500), 2),
             "paid": rng.random() < 0.5}
            for _ in range(rng.choice([3, 10, 40, 80]))
        ]  # fmt: skip
        messages.append(ChatMessage(role="tool", content=json.dumps(rows), tool_call_id="t"))
        answer = "Here they are. " + ENGLISH * rng.choice([1, 3, 10])
        messages.append(ChatMessage(role="assistant", content=answer))
        prompts.append([messages[0], *messages[-rng.choice([3, 6, 12]) :]])
    return prompts


def ratio(text: str, weights, truth) -> float:
    counts = text_counts(text)
    return tokens_of_counts(counts, weights) / tokens_of_counts(counts, truth)


@pytest.mark.django_db
def test_a_report_is_stored_and_the_weights_refitted_rk_2(fresh_model):
    counts, fixed = usage_sample([ChatMessage(role="user", content=RUSSIAN * 30)])
    truth = scaled(cyrillic=1.5)
    assert record_usage(
        model_config_id=fresh_model.pk,
        counts=counts,
        fixed_tokens=fixed,
        reported_tokens=report(counts, fixed, truth, random.Random(1)),
    )
    row = reload(fresh_model)
    assert row.token_ratio_samples == 1
    assert TokenSample.objects.filter(model_config=row).count() == 1
    weights = weights_of(row.token_weights)
    cyrillic = CLASSES.index("cyrillic")
    assert weights[cyrillic] > BASE_WEIGHTS[cyrillic] * 1.2
    assert row.token_ratio > 1.2  # the provider counts more than o200k_base here


@pytest.mark.django_db
def test_a_refit_that_moves_nothing_leaves_the_runs_lookups_alone(
    fresh_model, django_capture_on_commit_callbacks
):
    """RD.5, RK.2: runs look their models up again only when the rows' generation changes;
    the first report moves the weights and publishes them, the same report again moves them
    by less than a percent and does not (else every answer would cost the next run its
    lookups), and every ``REPUBLISH_EVERY``-th sample is published all the same."""
    counts, fixed = usage_sample([ChatMessage(role="user", content=RUSSIAN * 30)])
    billed = report(counts, fixed, scaled(cyrillic=1.5), random.Random(1))
    published = []
    for _ in range(REPUBLISH_EVERY + 2):
        before = generations.current(generations.MODEL_CONFIGS)
        with django_capture_on_commit_callbacks(execute=True):
            assert record_usage(
                model_config_id=fresh_model.pk,
                counts=counts,
                fixed_tokens=fixed,
                reported_tokens=billed,
            )
        published.append(generations.current(generations.MODEL_CONFIGS) != before)
    assert published[0]
    assert published[REPUBLISH_EVERY - 1]
    assert sum(published) == 2, published
    assert reload(fresh_model).token_ratio_samples == REPUBLISH_EVERY + 2


@pytest.mark.django_db
def test_json_heavy_reports_leave_english_and_code_within_10_percent_rk_2(fresh_model):
    # A tokenizer that is 30 % dearer than o200k_base on quotes, punctuation and digits.
    truth = scaled(quote=1.3, punct=1.3, digit=1.3)
    rng = random.Random(5)
    prompts = json_heavy_conversation(rng, 50)
    for prompt in prompts:
        counts, fixed = usage_sample(prompt)
        record_usage(
            model_config_id=fresh_model.pk,
            counts=counts,
            fixed_tokens=fixed,
            reported_tokens=report(counts, fixed, truth, rng),
        )
    weights = weights_of(reload(fresh_model).token_weights)
    assert 0.9 <= ratio(ENGLISH * 10, weights, truth) <= 1.1
    assert 0.9 <= ratio(CODE * 10, weights, truth) <= 1.1
    # ... and JSON itself is now counted as this tokenizer counts it.
    json_text = prompts[-1][-2].content
    assert ratio(json_text, BASE_WEIGHTS, truth) < 0.9
    assert 0.9 <= ratio(json_text, weights, truth) <= 1.1


@pytest.mark.django_db
def test_a_different_tokenizer_converges_within_50_reports_rk_2(fresh_model):
    truth = scaled(cyrillic=1.2)  # real counts 1.2x on Cyrillic
    rng = random.Random(9)
    text = RUSSIAN * 20
    assert ratio(text, BASE_WEIGHTS, truth) < 0.9  # uncalibrated: under-counted
    for _ in range(50):
        prompt = [
            ChatMessage(role="system", content=ENGLISH * 3),
            ChatMessage(role="user", content=RUSSIAN * rng.randint(2, 30)),
            ChatMessage(role="assistant", content=(ENGLISH + RUSSIAN) * rng.randint(1, 10)),
        ]
        counts, fixed = usage_sample(prompt)
        record_usage(
            model_config_id=fresh_model.pk,
            counts=counts,
            fixed_tokens=fixed,
            reported_tokens=report(counts, fixed, truth, rng),
        )
    weights = weights_of(reload(fresh_model).token_weights)
    assert 0.95 <= ratio(text, weights, truth) <= 1.05
    assert 0.9 <= ratio(ENGLISH * 10, weights, truth) <= 1.1


@pytest.mark.django_db
def test_one_report_of_mixed_text_blames_the_script_not_english_rk_2(fresh_model):
    """A first report far above the estimate, from a prompt of English and Russian, moves
    the Cyrillic weight, not English: tokenizers differ on scripts, not on ASCII words."""
    truth = scaled(cyrillic=1.6)  # a smaller vocabulary: Russian costs much more
    prompt = [
        ChatMessage(role="system", content=ENGLISH * 6),
        ChatMessage(role="user", content=RUSSIAN * 12),
    ]
    counts, fixed = usage_sample(prompt)
    assert record_usage(
        model_config_id=fresh_model.pk,
        counts=counts,
        fixed_tokens=fixed,
        reported_tokens=report(counts, fixed, truth, random.Random(3)),
    )
    weights = weights_of(reload(fresh_model).token_weights)
    english = ratio(ENGLISH * 10, weights, truth)
    russian = ratio(RUSSIAN * 10, weights, truth)
    assert 0.95 <= english <= 1.08, english  # one scalar would have raised it by ~25 %
    assert russian > ratio(RUSSIAN * 10, BASE_WEIGHTS, truth) + 0.15, russian


@pytest.mark.django_db
def test_only_the_latest_window_of_samples_is_kept(fresh_model):
    counts, fixed = usage_sample([ChatMessage(role="user", content=ENGLISH * 10)])
    for i in range(WINDOW + 12):
        record_usage(
            model_config_id=fresh_model.pk,
            counts=counts,
            fixed_tokens=fixed,
            reported_tokens=400 + i,
        )
    kept = TokenSample.objects.filter(model_config=fresh_model).order_by("id")
    assert kept.count() == WINDOW
    assert kept.first().reported_tokens == 400 + 12  # the oldest twelve are gone
    assert reload(fresh_model).token_ratio_samples == WINDOW + 12


def test_weights_never_fall_below_the_floor():
    counts = text_counts(ENGLISH * 20 + CODE * 5 + RUSSIAN * 5 + '{"a": 1}' * 30)
    base = tokens_of_counts(counts, BASE_WEIGHTS)
    # A provider that reports a third of the estimate (a cached-prompt discount, say).
    weights = fit_samples([(counts, 0, base // 3)] * 20)
    for w, b in zip(weights, BASE_WEIGHTS, strict=True):
        assert w >= FLOOR * b - 1e-9
    assert tokens_of_counts(counts, weights) >= FLOOR * base - 1


def test_outliers_do_not_move_the_weights():
    rng = random.Random(3)
    truth = scaled(lower=1.1, upper=1.1, space=1.1, punct=1.1)
    samples = []
    for i in range(50):
        counts = text_counts(ENGLISH * rng.randint(3, 30) + CODE * rng.randint(0, 5))
        reported = report(counts, 12, truth, rng)
        samples.append((counts, 12, reported * 5 if i % 10 == 0 else reported))  # 5 outliers
    weights = fit_samples(samples)
    assert 0.97 <= ratio(ENGLISH * 10, weights, truth) <= 1.03


def test_no_usable_sample_keeps_the_base_weights():
    assert fit_samples([]) == list(BASE_WEIGHTS)
    assert fit_samples([([0] * len(CLASSES), 10, 500)]) == list(BASE_WEIGHTS)


@pytest.mark.django_db
def test_tiny_nonsensical_or_orphan_samples_are_ignored(fresh_model):
    counts, fixed = usage_sample([ChatMessage(role="user", content=ENGLISH * 10)])
    assert not record_usage(
        model_config_id=fresh_model.pk, counts=counts, fixed_tokens=fixed, reported_tokens=50
    )
    assert not record_usage(
        model_config_id=fresh_model.pk,
        counts=[0] * len(CLASSES),
        fixed_tokens=4,
        reported_tokens=500,
    )
    assert not record_usage(
        model_config_id=fresh_model.pk, counts=counts[:3], fixed_tokens=fixed, reported_tokens=500
    )
    assert not record_usage(
        model_config_id=999_999, counts=counts, fixed_tokens=fixed, reported_tokens=500
    )
    row = reload(fresh_model)
    assert (row.token_weights, row.token_ratio_samples) == ([], 0)


@pytest.mark.django_db
def test_calibrated_weights_reach_the_budget(fresh_model):
    assert resolve_budget("main").token_weights is None
    counts, fixed = usage_sample([ChatMessage(role="user", content=RUSSIAN * 30)])
    record_usage(
        model_config_id=fresh_model.pk,
        counts=counts,
        fixed_tokens=fixed,
        reported_tokens=report(counts, fixed, scaled(cyrillic=1.3), random.Random(2)),
    )
    budget = resolve_budget("main")
    assert budget.token_weights == weights_of(reload(fresh_model).token_weights)
    # The estimate itself is calibrated: the budget is not shrunk a second time.
    assert budget.effective_input_tokens == budget.usable_input_tokens


@pytest.mark.django_db
def test_a_ratio_learnt_before_weights_still_shrinks_the_budget(fresh_model):
    ModelConfig.objects.filter(pk=fresh_model.pk).update(token_ratio=2.0, token_ratio_samples=9)
    budget = resolve_budget("main")
    assert budget.token_weights is None
    assert budget.effective_input_tokens == budget.usable_input_tokens // 2


@pytest.mark.django_db
def test_reset_forgets_everything(fresh_model):
    counts, fixed = usage_sample([ChatMessage(role="user", content=RUSSIAN * 30)])
    record_usage(
        model_config_id=fresh_model.pk, counts=counts, fixed_tokens=fixed, reported_tokens=900
    )
    assert reset_calibration(model_config_ids=[fresh_model.pk]) == 1
    row = reload(fresh_model)
    assert (row.token_weights, row.token_ratio, row.token_ratio_samples) == ([], 1.0, 0)
    assert not TokenSample.objects.filter(model_config=row).exists()


@pytest.mark.django_db(transaction=True)
async def test_async_wrapper_records(fresh_model):
    counts, fixed = usage_sample([ChatMessage(role="user", content=ENGLISH * 10)])
    assert await arecord_usage(
        model_config_id=fresh_model.pk, counts=counts, fixed_tokens=fixed, reported_tokens=500
    )
    row = await ModelConfig.objects.aget(pk=fresh_model.pk)
    await sync_to_async(connections.close_all)()  # the worker thread's connection
    assert row.token_ratio_samples == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_recorders_lose_no_sample(fresh_model):
    # Samples are INSERTs and the count an UPDATE with an F() expression: nothing to race.
    per_thread, threads = 10, 4
    counts, fixed = usage_sample([ChatMessage(role="user", content=ENGLISH * 10)])
    errors = []

    def work():
        try:
            for _ in range(per_thread):
                record_usage(
                    model_config_id=fresh_model.pk,
                    counts=counts,
                    fixed_tokens=fixed,
                    reported_tokens=500,
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
    assert TokenSample.objects.filter(model_config=row).count() == per_thread * threads
    assert len(row.token_weights) == len(CLASSES)
