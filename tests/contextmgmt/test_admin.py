"""ModelConfig admin: budgets and calibration shown, nonsense refused, calibration reset (R5)."""

import re

import pytest
from django.urls import reverse

from contextmgmt.models import ModelConfig

ADD_URL = "admin:contextmgmt_modelconfig_add"


def form_data(**overrides) -> dict:
    data = {
        "name": "GPT",
        "model": "gpt-4o",
        "role": "main",
        "base_url": "",
        "api_key_env": "OPENAI_API_KEY",
        "context_size": "128000",
        "max_output_tokens": "16000",
        "supports_vision": "on",
        # The provider profile as a new row's form shows it (unchanged: detection applies).
        "provider_profile": "openai_compatible",
        "profile_auto": "on",
        "token_limit_param": "max_tokens",
        "send_temperature": "on",
        "stream_usage": "on",
        "stream": "on",
        "reasoning_field": "",
    }
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


@pytest.fixture
def calibrated_model() -> ModelConfig:
    return ModelConfig.objects.create(
        name="Calibrated",
        model="m",
        role="main",
        context_size=128_000,
        max_output_tokens=64_000,
        token_ratio=1.5,
        token_ratio_samples=40,
    )


@pytest.mark.django_db
def test_valid_model_config_is_saved(admin_client):
    response = admin_client.post(reverse(ADD_URL), form_data())
    assert response.status_code == 302
    row = ModelConfig.objects.get()
    assert (row.context_size, row.max_output_tokens, row.usable_input_tokens) == (
        128_000,
        16_000,
        108_000,
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"context_size": "0"}, "context_size", "positive"),
        ({"context_size": "128000000"}, "context_size", "typo"),
        ({"max_output_tokens": "128000"}, "max_output_tokens", "smaller than the context size"),
        ({"max_output_tokens": "0"}, "max_output_tokens", "positive"),
        # 8,000 - 2,000 - 4,000 = 2,000 < the 4,000 floor (R5.4): told, not clamped.
        ({"context_size": "8000", "max_output_tokens": "2000"}, "max_output_tokens", "2,000"),
        ({"api_key_env": "sk-live-123abc"}, "api_key_env", "not a key"),
        ({"api_key_env": "1BAD NAME"}, "api_key_env", "environment variable"),
        ({"base_url": "not a url"}, "base_url", "valid URL"),
        ({"model": ""}, "model", "required"),
    ],
)
def test_nonsense_is_refused_with_a_clear_message(admin_client, overrides, field, message):
    response = admin_client.post(reverse(ADD_URL), form_data(**overrides))
    assert response.status_code == 200  # the form again, with errors
    errors = response.context["adminform"].form.errors
    assert field in errors
    assert message in " ".join(errors[field])
    assert not ModelConfig.objects.exists()


@pytest.mark.django_db
def test_second_active_model_for_a_role_is_refused(admin_client):
    ModelConfig.objects.create(name="First", model="a", role="main", is_active=True)
    response = admin_client.post(reverse(ADD_URL), form_data(is_active="on"))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert "already active" in " ".join(errors["is_active"])
    assert ModelConfig.objects.count() == 1


@pytest.mark.django_db
def test_change_page_shows_usable_and_effective_budget_and_ratio(admin_client, calibrated_model):
    url = reverse("admin:contextmgmt_modelconfig_change", args=[calibrated_model.pk])
    page = admin_client.get(url).content.decode()
    assert "60,000" in page  # usable: 128,000 - 64,000 - 4,000 (R5.1)
    assert "40,000" in page  # effective: 60,000 / 1.5
    assert "1.5" in page and "40" in page


@pytest.mark.django_db
def test_changelist_shows_calibration(admin_client, calibrated_model):
    page = admin_client.get(reverse("admin:contextmgmt_modelconfig_changelist")).content.decode()
    assert "1.500 (40)" in page
    assert "40,000" in page


@pytest.mark.django_db
def test_calibration_cannot_be_edited_through_the_form(admin_client, calibrated_model):
    url = reverse("admin:contextmgmt_modelconfig_change", args=[calibrated_model.pk])
    data = form_data(name="Calibrated", token_ratio="0.1", token_ratio_samples="0")
    data["context_size"], data["max_output_tokens"] = "128000", "64000"
    assert admin_client.post(url, data).status_code == 302
    calibrated_model.refresh_from_db()
    assert (calibrated_model.token_ratio, calibrated_model.token_ratio_samples) == (1.5, 40)


@pytest.mark.django_db
def test_reset_calibration_action(admin_client, calibrated_model):
    untouched = ModelConfig.objects.create(
        name="Other", model="o", role="fast", token_ratio=2.0, token_ratio_samples=3
    )
    response = admin_client.post(
        reverse("admin:contextmgmt_modelconfig_changelist"),
        {"action": "reset_calibration_action", "_selected_action": [calibrated_model.pk]},
        follow=True,
    )
    assert "Calibration reset for 1 model configuration." in response.content.decode()
    calibrated_model.refresh_from_db()
    untouched.refresh_from_db()
    assert (calibrated_model.token_ratio, calibrated_model.token_ratio_samples) == (1.0, 0)
    assert (untouched.token_ratio, untouched.token_ratio_samples) == (2.0, 3)


@pytest.mark.django_db
def test_learnt_class_weights_are_shown_and_reset_rk_2(admin_client, calibrated_model):
    from contextmgmt.calibration import record_usage
    from contextmgmt.core.tokens import BASE_WEIGHTS, text_counts
    from contextmgmt.models import TokenSample

    counts = text_counts("Контекстное окно конечно, история занимает бюджет. " * 40)
    base = sum(c * w for c, w in zip(counts, BASE_WEIGHTS, strict=True))
    for _ in range(5):  # a model that counts Cyrillic 1.5 times as o200k_base does
        record_usage(
            model_config_id=calibrated_model.pk,
            counts=counts,
            fixed_tokens=4,
            reported_tokens=round(base * 1.5) + 4,
        )
    page = admin_client.get(
        reverse("admin:contextmgmt_modelconfig_change", args=[calibrated_model.pk])
    ).content.decode()
    assert "cyrillic: " in page and "Learnt from the provider" in page
    admin_client.post(
        reverse("admin:contextmgmt_modelconfig_changelist"),
        {"action": "reset_calibration_action", "_selected_action": [calibrated_model.pk]},
    )
    calibrated_model.refresh_from_db()
    assert calibrated_model.token_weights == []
    assert not TokenSample.objects.filter(model_config=calibrated_model).exists()
    page = admin_client.get(
        reverse("admin:contextmgmt_modelconfig_change", args=[calibrated_model.pk])
    ).content.decode()
    assert "base weights" in page and "cyrillic: " not in page


@pytest.mark.django_db
def test_admin_requires_staff(client, user):
    client.force_login(user)
    response = client.get(reverse("admin:contextmgmt_modelconfig_changelist"))
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


@pytest.mark.django_db
def test_after_a_failed_save_the_budget_read_out_does_not_contradict_the_error(
    admin_client, calibrated_model
):
    """8,000 - 2,000 - 4,000 leaves 2,000: the error says so, and the read-out beside it
    must not show the 4,000 floor as if the values were fine."""
    url = reverse("admin:contextmgmt_modelconfig_change", args=[calibrated_model.pk])
    data = form_data(name="Calibrated", context_size="8000", max_output_tokens="2000")
    response = admin_client.post(url, data)
    assert response.status_code == 200
    page = response.content.decode()
    assert "Leaves 2,000 input tokens" in page
    assert "not computed: fix the token fields" in page
    assert "4,000</div>" not in page and "2,667" not in page  # floor, floor / 1.5


@pytest.mark.django_db
def test_sections_are_named_for_people(admin_client, calibrated_model):
    url = reverse("admin:contextmgmt_modelconfig_change", args=[calibrated_model.pk])
    page = admin_client.get(url).content.decode()
    assert "Token budget" in page
    # Whole words: the page's random CSRF tokens may hold "R5" (a CI run once failed so).
    assert not re.search(r"\bSPEC\b|\bR5\b", page)
