"""A key goes only where the operator sent it, and the admin lets only those allowed change
where: an allow-list of key variables (checked by the form and again at run time), the
environment's key only to the environment's endpoint, a permission of its own for a row's
base URL and key variable, and admin actions that view-only staff cannot run."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from contextmgmt.models import ModelConfig
from fimone.llm import registry
from tests.contextmgmt.test_admin import form_data
from tests.support.factories import make_model_config
from tests.support.recording_server import json_answer, recording_server

pytestmark = pytest.mark.django_db

ENV_KEY = "sk-environment-key-for-the-configured-endpoint"


@pytest.fixture(autouse=True)
def fresh_registry():
    registry._cache.clear()
    yield
    registry._cache.clear()


@pytest.fixture
def environment_endpoint(settings):
    settings.LLM_BASE_URL = "http://configured.example:8000/v1"
    settings.LLM_API_KEY = ENV_KEY
    settings.LLM_MODEL = "env-model"
    for name in ("BASE_URL", "API_KEY", "MODEL"):
        setattr(settings, f"FAST_LLM_{name}", "")
    return settings


def staff(django_user_model, username: str, *codenames: str):
    user = django_user_model.objects.create_user(username=username, password="pw", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="contextmgmt", codename__in=codenames)
    )
    client = Client()
    client.force_login(user)
    return client


def row(**fields) -> ModelConfig:
    return make_model_config("main", **{"name": "Row", "model": "m", **fields})


# --- the allow-list --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["SECRET_KEY", "DATABASE_URL", "REDIS_URL", "HOME", "LLM_API_KEY"])
def test_the_form_refuses_a_key_variable_off_the_list(admin_client, name):
    response = admin_client.post(
        reverse("admin:contextmgmt_modelconfig_add"), form_data(api_key_env=name)
    )
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert name in errors["api_key_env"][0]
    assert not ModelConfig.objects.exists()


def test_the_form_takes_a_variable_the_operator_allowed(admin_client, settings):
    settings.FIMONE_SECRET_ENV_ALLOWLIST = ["*_API_KEY", "VLLM_TOKEN"]
    response = admin_client.post(
        reverse("admin:contextmgmt_modelconfig_add"), form_data(api_key_env="VLLM_TOKEN")
    )
    assert response.status_code == 302
    assert ModelConfig.objects.get().api_key_env == "VLLM_TOKEN"


@pytest.mark.parametrize("name", ["SECRET_KEY", "DATABASE_URL", "HOME_DIR"])
def test_the_registry_does_not_read_a_variable_off_the_list(
    environment_endpoint, monkeypatch, caplog, name
):
    monkeypatch.setenv(name, "the-server-secret")
    row(base_url="http://attacker.example/v1", api_key_env=name)  # written past the admin
    spec = registry.resolve_spec("main")
    assert spec.api_key == ""
    assert "the-server-secret" not in repr(registry.get_llm("main").__dict__)
    assert name in caplog.text


# --- the environment's key ---------------------------------------------------------------------


def test_the_environment_key_does_not_go_to_a_row_with_another_host(environment_endpoint):
    row(base_url="http://attacker.example/v1", api_key_env="")
    spec = registry.resolve_spec("main")
    assert (spec.base_url, spec.api_key) == ("http://attacker.example/v1", "")


@pytest.mark.parametrize(
    "base_url", ["", "http://configured.example:8000/v1", "HTTP://Configured.example:8000/v1/"]
)
def test_the_environment_key_goes_to_the_environment_endpoint(environment_endpoint, base_url):
    row(base_url=base_url, api_key_env="")
    spec = registry.resolve_spec("main")
    assert spec.api_key == ENV_KEY


def test_reading_the_context_size_sends_no_environment_key_to_another_host(
    environment_endpoint, admin_client
):
    answer = {"data": [{"id": "m", "max_model_len": 32_768}]}
    with recording_server({"/v1/models": json_answer(answer)}) as other:
        target = row(base_url=other.url("/v1"), api_key_env="")
        admin_client.post(
            reverse("admin:contextmgmt_modelconfig_changelist"),
            {"action": "read_from_endpoint_action", "_selected_action": [target.pk]},
        )
    assert other.seen, "the action did not reach the endpoint"
    assert "authorization" not in other.headers_for("/v1/models")[0]


# --- who may change where a key goes ---------------------------------------------------------


def test_change_permission_alone_does_not_change_the_endpoint(django_user_model):
    client = staff(django_user_model, "editor", "view_modelconfig", "change_modelconfig")
    target = row(base_url="https://api.example/v1", api_key_env="OPENAI_API_KEY")
    url = reverse("admin:contextmgmt_modelconfig_change", args=[target.pk])
    page = client.get(url).content.decode()
    assert 'name="base_url"' not in page and 'name="api_key_env"' not in page
    response = client.post(
        url,
        form_data(
            name="Renamed",
            base_url="http://attacker.example/v1",
            api_key_env="OTHER_API_KEY",
            is_active="on",
        ),
    )
    assert response.status_code == 302
    target.refresh_from_db()
    assert target.name == "Renamed"  # the rest of the form was saved
    assert (target.base_url, target.api_key_env) == ("https://api.example/v1", "OPENAI_API_KEY")


def test_a_new_row_without_the_permission_uses_the_environment_endpoint(django_user_model):
    client = staff(django_user_model, "adder", "view_modelconfig", "add_modelconfig")
    response = client.post(
        reverse("admin:contextmgmt_modelconfig_add"),
        form_data(base_url="http://attacker.example/v1", api_key_env="OTHER_API_KEY"),
    )
    assert response.status_code == 302
    created = ModelConfig.objects.get()
    assert (created.base_url, created.api_key_env) == ("", "")


def test_the_endpoint_permission_changes_the_endpoint(django_user_model):
    client = staff(
        django_user_model,
        "operator",
        "view_modelconfig",
        "change_modelconfig",
        "change_modelconfig_endpoint",
    )
    target = row(base_url="https://api.example/v1", api_key_env="OPENAI_API_KEY")
    url = reverse("admin:contextmgmt_modelconfig_change", args=[target.pk])
    response = client.post(
        url,
        form_data(base_url="https://other.example/v1", api_key_env="OTHER_API_KEY", is_active="on"),
    )
    assert response.status_code == 302
    target.refresh_from_db()
    assert (target.base_url, target.api_key_env) == ("https://other.example/v1", "OTHER_API_KEY")


# --- admin actions ---------------------------------------------------------------------------

ACTIONS = [
    "reset_calibration_action",
    "read_from_endpoint_action",
    "forget_refusals_action",
    "forget_image_refusal_action",
]


def test_every_admin_action_declares_its_permissions():
    from django.contrib import admin

    for model, model_admin in admin.site._registry.items():
        for action in model_admin.actions or ():
            func = getattr(model_admin, action) if isinstance(action, str) else action
            assert getattr(func, "allowed_permissions", None), f"{model.__name__}: {action}"


@pytest.mark.parametrize("action", ACTIONS)
def test_view_only_staff_can_run_no_action(django_user_model, action):
    from django.utils import timezone

    client = staff(django_user_model, "viewer", "view_modelconfig")
    target = row(
        token_ratio=1.5,
        token_ratio_samples=40,
        refused_params=[{"param": "temperature", "message": "no", "at": "2026-01-01"}],
        images_refused_at=timezone.now(),
        base_url="http://127.0.0.1:9/v1",
    )
    changelist = reverse("admin:contextmgmt_modelconfig_changelist")
    assert client.get(changelist).status_code == 200
    assert action not in client.get(changelist).content.decode()
    client.post(changelist, {"action": action, "_selected_action": [target.pk]})
    before = ModelConfig.objects.filter(pk=target.pk).values().get()
    assert before["token_ratio_samples"] == 40 and before["refused_params"]
    assert before["images_refused_at"] is not None
    assert before["updated_at"] == target.updated_at
