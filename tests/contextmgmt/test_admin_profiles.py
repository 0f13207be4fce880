"""ModelConfig admin, provider profile: detected from the base URL, edited by hand, shown."""

import pytest
from django.urls import reverse
from django.utils import timezone

from contextmgmt import profiles
from contextmgmt.core.providers import PROFILES
from contextmgmt.models import ModelConfig

pytestmark = pytest.mark.django_db

ADD_URL = "admin:contextmgmt_modelconfig_add"


def form(**overrides) -> dict:
    data = {
        "name": "Model",
        "model": "gpt-4o",
        "role": "main",
        "base_url": "",
        "api_key_env": "",
        "context_size": "128000",
        "max_output_tokens": "16000",
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


def change_url(row: ModelConfig) -> str:
    return reverse("admin:contextmgmt_modelconfig_change", args=[row.pk])


@pytest.mark.parametrize(
    ("base_url", "model", "expected"),
    [
        ("https://api.openai.com/v1", "o3-mini", "openai_reasoning"),
        ("https://api.openai.com/v1", "gpt-4o", "openai"),
        ("https://api.deepseek.com", "deepseek-reasoner", "deepseek"),
        ("http://127.0.0.1:11434/v1", "llama3.2", "ollama"),
        ("http://10.1.2.3:8000/v1", "Qwen/Qwen3-8B", "openai_compatible"),
    ],
)
def test_a_new_model_gets_the_profile_its_base_url_points_to(
    admin_client, base_url, model, expected
):
    response = admin_client.post(reverse(ADD_URL), form(base_url=base_url, model=model))
    assert response.status_code == 302
    row = ModelConfig.objects.get()
    assert profiles.profile_of(row) == PROFILES[expected]
    assert row.profile_auto


def test_the_reasoning_profile_is_what_the_form_then_shows(admin_client):
    admin_client.post(reverse(ADD_URL), form(base_url="https://api.openai.com/v1", model="o1"))
    row = ModelConfig.objects.get()
    assert (row.token_limit_param, row.send_temperature) == ("max_completion_tokens", False)
    page = admin_client.get(change_url(row)).content.decode()
    assert 'value="max_completion_tokens" selected' in page
    assert "Refused parameters" in page


def test_an_edited_setting_wins_over_detection_and_turns_it_off(admin_client):
    admin_client.post(reverse(ADD_URL), form(base_url="http://127.0.0.1:11434/v1"))
    row = ModelConfig.objects.get()
    assert not row.stream_usage  # Ollama's compatibility layer sends no usage in streams
    edited = form(base_url="http://127.0.0.1:11434/v1", provider_profile="ollama")
    edited.update(stream_usage="on", reasoning_field="reasoning")
    assert admin_client.post(change_url(row), edited).status_code == 302
    row.refresh_from_db()
    assert row.stream_usage and not row.profile_auto
    # A later base-URL change no longer re-detects: the admin's settings stay.
    edited.update(base_url="https://api.openai.com/v1")
    edited.pop("profile_auto", None)
    admin_client.post(change_url(row), edited)
    row.refresh_from_db()
    assert (row.provider_profile, row.stream_usage) == ("ollama", True)


def test_turning_detection_back_on_detects_again(admin_client):
    row = ModelConfig.objects.create(
        name="M", model="o3", base_url="https://api.openai.com/v1", profile_auto=False
    )
    data = form(base_url=row.base_url, model="o3")
    assert admin_client.post(change_url(row), data).status_code == 302
    row.refresh_from_db()
    assert row.profile_auto and row.provider_profile == "openai_reasoning"


def test_a_remembered_refusal_is_listed_on_the_change_page(admin_client):
    row = ModelConfig.objects.create(name="M", model="o3", base_url="http://127.0.0.1:9/v1")
    adapted = PROFILES["openai_compatible"].without("max_tokens")
    profiles.remember_refusal(
        model_config_id=row.pk,
        param="max_tokens",
        message="Unsupported parameter: 'max_tokens' is not supported with this model.",
        profile=adapted,
    )
    row.refresh_from_db()
    assert row.token_limit_param == "max_completion_tokens"
    assert [r["param"] for r in row.refused_params] == ["max_tokens"]
    page = admin_client.get(change_url(row)).content.decode()
    assert "max_tokens (" in page and "is not supported with this model" in page


def test_the_send_refused_parameters_again_action_undoes_what_the_refusals_changed(
    admin_client,
):
    refused = ModelConfig.objects.create(name="Refused", model="gateway-model")
    untouched = ModelConfig.objects.create(name="Other", model="other-model", role="fast")
    profile = profiles.profile_of(refused)
    # The limit's name refused both ways, newest last: it goes back to its first setting.
    for param in ("max_tokens", "max_completion_tokens", "temperature", "stream_options"):
        profile = profile.without(param)
        profiles.remember_refusal(
            model_config_id=refused.pk, param=param, message=f"{param} refused", profile=profile
        )
    profiles.remember_refusal(
        model_config_id=untouched.pk,
        param="temperature",
        message="temperature refused",
        profile=profiles.profile_of(untouched).without("temperature"),
    )
    refused.refresh_from_db()
    assert (refused.send_temperature, refused.stream_usage) == (False, False)

    response = admin_client.post(
        reverse("admin:contextmgmt_modelconfig_changelist"),
        {"action": "forget_refusals_action", "_selected_action": [refused.pk]},
        follow=True,
    )
    assert "Refused parameters will be sent again to 1 model configuration." in (
        response.content.decode()
    )
    refused.refresh_from_db()
    untouched.refresh_from_db()
    assert refused.refused_params == []
    assert profiles.profile_of(refused) == PROFILES["openai_compatible"]
    assert "stream_options refused" not in admin_client.get(change_url(refused)).content.decode()
    assert [r["param"] for r in untouched.refused_params] == ["temperature"]
    assert untouched.send_temperature is False


def test_the_reset_counts_only_rows_with_refusals_and_keeps_an_edited_profile(admin_client):
    refused = ModelConfig.objects.create(name="Refused", model="m", reasoning_field="reasoning")
    clean = ModelConfig.objects.create(
        name="Clean", model="n", role="fast", send_temperature=False, profile_auto=False
    )
    profiles.remember_refusal(
        model_config_id=refused.pk,
        param="temperature",
        message="temperature refused",
        profile=profiles.profile_of(refused).without("temperature"),
    )
    assert profiles.forget_refusals(model_config_ids=[refused.pk, clean.pk]) == 1
    refused.refresh_from_db()
    clean.refresh_from_db()
    assert refused.send_temperature and refused.reasoning_field == "reasoning"
    assert clean.send_temperature is False  # the admin's own setting, not a refusal


IMAGES_REFUSED = "Error code: 400 - Qwen2.5-7B-Instruct is not a multimodal model"


def test_no_refusal_of_images_is_said_so(admin_client):
    row = ModelConfig.objects.create(name="M", model="gpt-4o")
    page = admin_client.get(change_url(row)).content.decode()
    assert "Images refused by the endpoint" in page
    assert "gets image descriptions instead" not in page


def test_a_refusal_of_images_is_shown_beside_the_box_it_overrides(admin_client):
    row = ModelConfig.objects.create(name="M", model="qwen", base_url="http://10.1.2.3:8000/v1")
    profiles.remember_image_refusal(model_config_id=row.pk, message=IMAGES_REFUSED)
    row.refresh_from_db()
    first = row.images_refused_at
    profiles.remember_image_refusal(model_config_id=row.pk, message="another wording")
    row.refresh_from_db()
    assert (row.images_refused_at, row.images_refused_message) == (first, IMAGES_REFUSED)
    assert row.supports_vision and not row.sees_images

    page = admin_client.get(change_url(row)).content.decode()
    assert f"on {timezone.localtime(first):%Y-%m-%d %H:%M}" in page
    assert "is not a multimodal model" in page and "gets image descriptions instead" in page


def test_the_send_images_again_action_forgets_the_refusal(admin_client):
    refused = ModelConfig.objects.create(name="Refused", model="qwen")
    untouched = ModelConfig.objects.create(name="Other", model="deepseek-chat", role="fast")
    for row in (refused, untouched):
        profiles.remember_image_refusal(model_config_id=row.pk, message=IMAGES_REFUSED)
    response = admin_client.post(
        reverse("admin:contextmgmt_modelconfig_changelist"),
        {"action": "forget_image_refusal_action", "_selected_action": [refused.pk]},
        follow=True,
    )
    assert "Images will be sent again to 1 model configuration." in response.content.decode()
    refused.refresh_from_db()
    untouched.refresh_from_db()
    assert refused.sees_images and refused.images_refused_message == ""
    assert not untouched.sees_images


def test_another_endpoint_forgets_the_old_ones_refusal_of_images(admin_client):
    row = ModelConfig.objects.create(
        name="M", model="qwen", base_url="http://10.1.2.3:8000/v1", max_output_tokens=16_000
    )
    profiles.remember_image_refusal(model_config_id=row.pk, message=IMAGES_REFUSED)
    data = form(base_url=row.base_url, model="qwen", supports_vision="on", name="Renamed")
    assert admin_client.post(change_url(row), data).status_code == 302
    row.refresh_from_db()
    assert row.name == "Renamed" and not row.sees_images  # same endpoint: still refused
    data.update(model="qwen-vl")
    assert admin_client.post(change_url(row), data).status_code == 302
    row.refresh_from_db()
    assert row.sees_images and row.images_refused_at is None


def read_from_endpoint(admin_client, row: ModelConfig) -> str:
    response = admin_client.post(
        reverse("admin:contextmgmt_modelconfig_changelist"),
        {"action": "read_from_endpoint_action", "_selected_action": [row.pk]},
        follow=True,
    )
    row.refresh_from_db()
    return response.content.decode()


def test_an_unreachable_endpoint_is_said_so(admin_client):
    row = ModelConfig.objects.create(name="Gone", model="m", base_url="http://127.0.0.1:9/v1")
    page = read_from_endpoint(admin_client, row)
    assert "could not read the context size" in page and "GET /v1/models" in page
    assert row.context_size == 128_000


def test_another_endpoint_forgets_the_old_ones_refused_parameters(admin_client):
    row = ModelConfig.objects.create(
        name="M", model="gw-1", base_url="http://10.1.2.3:8000/v1", profile_auto=False
    )
    profiles.remember_refusal(
        model_config_id=row.pk,
        param="temperature",
        message="temperature refused",
        profile=profiles.profile_of(row).without("temperature"),
    )
    row.refresh_from_db()
    assert not row.send_temperature and row.refused_params
    # The form as the admin shows it: the refusal unticked "send temperature".
    data = form(
        base_url=row.base_url,
        model="gw-1",
        name="Renamed",
        send_temperature=None,
        profile_auto=None,
    )
    assert admin_client.post(change_url(row), data).status_code == 302
    row.refresh_from_db()
    assert row.refused_params and not row.send_temperature  # same endpoint: still refused
    data.update(model="gw-2")
    assert admin_client.post(change_url(row), data).status_code == 302
    row.refresh_from_db()
    assert row.refused_params == [] and row.send_temperature


def test_a_refusal_to_stream_is_listed_and_reset_like_the_others(admin_client):
    row = ModelConfig.objects.create(name="Unverified", model="o3")
    message = "Your organization must be verified to stream this model."
    profiles.remember_refusal(
        model_config_id=row.pk,
        param="stream",
        message=message,
        profile=profiles.profile_of(row).without("stream"),
    )
    row.refresh_from_db()
    assert row.stream is False and profiles.profile_of(row).stream is False
    assert "stream (" in admin_client.get(change_url(row)).content.decode()
    assert profiles.forget_refusals(model_config_ids=[row.pk]) == 1
    row.refresh_from_db()
    assert row.stream is True and row.refused_params == []
