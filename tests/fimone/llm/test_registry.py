"""The model registry: ModelConfig row > settings > offline; fast falls back to main (issue 4)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from asgiref.sync import sync_to_async

from contextmgmt.models import ModelConfig
from fimone.llm import OfflineLLM, OpenAIChatLLM, describe_llm, get_llm
from fimone.llm.registry import resolve_spec
from tests.support.scripted_server import http_error, text
from tests.support.vision import NOTE, REFUSAL, image_parts, question_with_image

pytestmark = pytest.mark.django_db


@pytest.fixture
def nothing_configured(settings):
    for prefix in ("", "FAST_"):
        for field in ("BASE_URL", "API_KEY", "MODEL"):
            setattr(settings, f"{prefix}LLM_{field}", "")
    settings.LLM_TIMEOUT_SECONDS = 120.0
    settings.LLM_MAX_RETRIES = 2
    settings.LLM_SUPPORTS_VISION, settings.FAST_LLM_SUPPORTS_VISION = True, None
    return settings


@pytest.fixture
def main_env_configured(nothing_configured):
    settings = nothing_configured
    settings.LLM_BASE_URL = "http://main.example:8000/v1"
    settings.LLM_API_KEY = "sk-main"
    settings.LLM_MODEL = "main-model"
    return settings


def active_row(role: str, **fields) -> ModelConfig:
    values = {
        "name": f"{role} row",
        "model": f"db-{role}-model",
        "role": role,
        "base_url": f"http://db-{role}.example/v1",
        "api_key_env": "",
        "is_active": True,
    }
    values.update(fields)
    return ModelConfig.objects.create(**values)


# --- offline ---------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["main", "fast"])
def test_with_nothing_configured_both_roles_are_offline(nothing_configured, role):
    llm = get_llm(role)
    assert isinstance(llm, OfflineLLM) and llm.offline is True
    info = describe_llm(role)
    assert info["source"] == "offline"
    assert info["offline"] is True
    assert info["model_name"] == "fimone-offline"
    assert info["supports_vision"] is False


def test_an_inactive_row_is_ignored(nothing_configured):
    active_row("main", is_active=False)
    assert isinstance(get_llm("main"), OfflineLLM)


def test_an_api_key_alone_configures_nothing(nothing_configured):
    nothing_configured.LLM_API_KEY = "sk-orphan"
    assert describe_llm("main")["source"] == "offline"


def test_an_unknown_role_is_refused(nothing_configured):
    with pytest.raises(ValueError, match="role"):
        get_llm("slow")


# --- settings --------------------------------------------------------------------------------


def test_main_from_settings(main_env_configured):
    llm = get_llm("main")
    assert isinstance(llm, OpenAIChatLLM) and llm.offline is False
    assert llm.model_name == "main-model"
    assert llm.base_url == "http://main.example:8000/v1"
    assert llm._api_key == "sk-main"
    info = describe_llm("main")
    assert info["source"] == "env" and info["offline"] is False
    assert info["model_name"] == "main-model" and info["supports_vision"] is True


def test_timeout_and_retries_come_from_settings(main_env_configured):
    main_env_configured.LLM_TIMEOUT_SECONDS = 7.5
    main_env_configured.LLM_MAX_RETRIES = 4
    llm = get_llm("main")
    assert (llm.timeout, llm.max_retries) == (7.5, 4)


def test_a_base_url_alone_is_enough(nothing_configured):
    """llama.cpp and similar serve one model whatever the name."""
    nothing_configured.LLM_BASE_URL = "http://127.0.0.1:8080/v1"
    llm = get_llm("main")
    assert isinstance(llm, OpenAIChatLLM)
    assert llm.model_name == "default"


def test_fast_without_configuration_is_the_main_model(main_env_configured):
    fast = get_llm("fast")
    assert fast is get_llm("main")  # one object: one connection pool
    assert describe_llm("fast")["source"] == "env"


def test_fast_model_alone_means_same_endpoint_other_model(main_env_configured):
    main_env_configured.FAST_LLM_MODEL = "small-model"
    fast = get_llm("fast")
    assert fast.model_name == "small-model"
    assert fast.base_url == "http://main.example:8000/v1"
    assert fast._api_key == "sk-main"
    assert get_llm("main").model_name == "main-model"


def test_fast_endpoint_of_its_own(main_env_configured):
    main_env_configured.FAST_LLM_BASE_URL = "http://fast.example/v1"
    main_env_configured.FAST_LLM_API_KEY = "sk-fast"
    main_env_configured.FAST_LLM_MODEL = "fast-model"
    fast = get_llm("fast")
    assert (fast.model_name, fast.base_url, fast._api_key) == (
        "fast-model",
        "http://fast.example/v1",
        "sk-fast",
    )


def test_the_vision_flag_of_environment_models_comes_from_settings_rv_4(main_env_configured):
    main_env_configured.FAST_LLM_MODEL = "small-model"
    assert get_llm("main").supports_vision is True  # the default
    main_env_configured.LLM_SUPPORTS_VISION = False
    assert get_llm("main").supports_vision is False
    assert get_llm("fast").supports_vision is False  # fast follows main when unset
    main_env_configured.FAST_LLM_SUPPORTS_VISION = True
    assert get_llm("fast").supports_vision is True
    assert describe_llm("main")["supports_vision"] is False


def test_a_settings_change_gives_a_new_llm(main_env_configured):
    first = get_llm("main")
    main_env_configured.LLM_MODEL = "other-model"
    second = get_llm("main")
    assert second is not first and second.model_name == "other-model"


# --- database rows ---------------------------------------------------------------------------


def test_an_active_row_wins_over_settings(main_env_configured, monkeypatch):
    monkeypatch.setenv("DB_MAIN_API_KEY", "sk-from-env-var")
    active_row("main", api_key_env="DB_MAIN_API_KEY", supports_vision=False)
    llm = get_llm("main")
    assert llm.model_name == "db-main-model"
    assert llm.base_url == "http://db-main.example/v1"
    assert llm._api_key == "sk-from-env-var"
    info = describe_llm("main")
    assert info["source"] == "db" and info["supports_vision"] is False


def test_a_row_wins_over_the_offline_model(nothing_configured):
    active_row("main")
    assert describe_llm("main")["source"] == "db"
    assert isinstance(get_llm("main"), OpenAIChatLLM)


def test_a_row_without_endpoint_uses_the_configured_one(main_env_configured):
    active_row("main", base_url="", api_key_env="")
    llm = get_llm("main")
    assert llm.model_name == "db-main-model"
    assert llm.base_url == "http://main.example:8000/v1"
    assert llm._api_key == "sk-main"


def test_a_row_whose_key_variable_is_unset_has_no_key(nothing_configured, monkeypatch, caplog):
    monkeypatch.delenv("MISSING_API_KEY", raising=False)
    active_row("main", api_key_env="MISSING_API_KEY")
    assert describe_llm("main")["has_api_key"] is False
    assert "MISSING_API_KEY" in caplog.text


def test_fast_row_serves_fast_only(main_env_configured):
    active_row("fast")
    assert get_llm("fast").model_name == "db-fast-model"
    assert get_llm("main").model_name == "main-model"


def test_fast_falls_back_to_the_main_row(nothing_configured):
    active_row("main")
    assert get_llm("fast").model_name == "db-main-model"
    assert describe_llm("fast")["source"] == "db"


def test_a_fast_row_wins_over_fast_settings(main_env_configured):
    main_env_configured.FAST_LLM_MODEL = "env-fast"
    active_row("fast")
    assert get_llm("fast").model_name == "db-fast-model"


def test_describe_never_reveals_the_key(main_env_configured, monkeypatch):
    monkeypatch.setenv("DB_MAIN_API_KEY", "sk-secret-value")
    active_row("main", api_key_env="DB_MAIN_API_KEY")
    for role in ("main", "fast"):
        info = describe_llm(role)
        assert "sk-secret-value" not in repr(info) and "sk-main" not in repr(info)
        assert info["has_api_key"] is True
    assert "sk-secret-value" not in repr(get_llm("main"))


# --- end to end ------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_a_row_drives_real_calls_with_the_key_from_its_variable(
    nothing_configured, scripted_server, monkeypatch
):
    """Async callers reach the sync registry through sync_to_async."""
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-scripted")
    await sync_to_async(active_row)(
        "main", model="row-model", base_url=scripted_server.base_url, api_key_env="SCRIPTED_API_KEY"
    )
    scripted_server.enqueue("from the row's endpoint")
    llm = await sync_to_async(get_llm)("main")
    from contextmgmt.core.messages import ChatMessage

    result = await llm.chat([ChatMessage(role="user", content="hi", pinned=True)])
    await llm.aclose()
    assert result.message.content == "from the row's endpoint"
    assert scripted_server.requests[0]["model"] == "row-model"
    assert scripted_server.request_headers[0]["authorization"] == "Bearer sk-scripted"


def test_importing_fimone_llm_does_not_import_django():
    code = "import sys, fimone.llm; print('django' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_resolve_spec_is_what_get_llm_builds(main_env_configured):
    spec = resolve_spec("main")
    llm = get_llm("main")
    assert (spec.model, spec.base_url) == (llm.model_name, llm.base_url)


# --- an endpoint that refuses images ---------------------------------------------------------


async def ask(llm, scripted_server, *replies) -> list[dict]:
    """One call with an image; the requests it made."""
    scripted_server.reset()
    scripted_server.enqueue(*replies)
    await llm.chat([question_with_image()])
    await llm.aclose()
    return list(scripted_server.requests)


@pytest.fixture
def another_process(monkeypatch):
    """What a second daphne process (or this one after a restart) starts with: no LLM objects
    and nothing remembered about endpoints."""
    from fimone.llm import registry
    from fimone.llm.providers import vision

    def start() -> None:
        monkeypatch.setattr(registry, "_cache", {})
        monkeypatch.setattr(vision, "_REFUSING", set())

    return start


@pytest.mark.django_db(transaction=True)
async def test_a_rows_refusal_of_images_is_stored_and_every_process_sends_text_from_the_start(
    nothing_configured, scripted_server, another_process
):
    row = await sync_to_async(active_row)(
        "main", model="text-only-row", base_url=scripted_server.base_url
    )
    llm = await sync_to_async(get_llm)("main")
    assert llm.supports_vision
    refused, answered = await ask(llm, scripted_server, http_error(400, REFUSAL), text("42.10"))
    assert image_parts(refused) == 1 and image_parts(answered) == 0

    await sync_to_async(row.refresh_from_db)()
    assert row.images_refused_at is not None and REFUSAL in row.images_refused_message
    assert row.supports_vision and not row.sees_images  # the admin's box stays as it was set

    another_process()
    fresh = await sync_to_async(get_llm)("main")
    assert fresh is not llm and not fresh.supports_vision
    assert (await sync_to_async(describe_llm)("main"))["supports_vision"] is False
    [only] = await ask(fresh, scripted_server, text("Still 42.10"))
    assert image_parts(only) == 0 and NOTE in only["messages"][-1]["content"]


@pytest.mark.django_db(transaction=True)
async def test_a_reset_refusal_sends_images_again_even_where_it_was_learnt(
    nothing_configured, scripted_server, another_process
):
    """The shared object that learnt the refusal is not handed out again once the row's spec
    is back to what it was built from."""
    from contextmgmt import profiles

    another_process()  # a cache of its own: no earlier test's entries fill it up meanwhile
    row = await sync_to_async(active_row)(
        "main", model="text-only-then-fixed", base_url=scripted_server.base_url
    )
    llm = await sync_to_async(get_llm)("main")
    await ask(llm, scripted_server, http_error(400, REFUSAL), text("42.10"))
    assert not (await sync_to_async(get_llm)("main")).supports_vision

    await sync_to_async(profiles.forget_image_refusal)(model_config_ids=[row.pk])
    again = await sync_to_async(get_llm)("main")
    assert again is not llm and again.supports_vision
    [only] = await ask(again, scripted_server, text("42.10"))
    assert image_parts(only) == 1


@pytest.mark.django_db(transaction=True)
async def test_a_reset_refused_parameter_is_sent_again_even_where_it_was_learnt(
    nothing_configured, scripted_server, another_process
):
    """The shared object that learnt a refused parameter is not handed out again once the
    row's profile is back to what it was built from."""
    from contextmgmt import profiles
    from contextmgmt.core.messages import ChatMessage

    another_process()
    row = await sync_to_async(active_row)(
        "main", model="temperature-then-fixed", base_url=scripted_server.base_url
    )
    llm = await sync_to_async(get_llm)("main")
    scripted_server.reset()
    scripted_server.use_profile("openai_reasoning").enqueue(text("Hi."))
    await llm.chat([ChatMessage(role="user", content="Hi")], temperature=0.2)
    await llm.aclose()
    assert [body.get("temperature") for body in scripted_server.requests] == [0.2, None]

    assert await sync_to_async(profiles.forget_refusals)(model_config_ids=[row.pk]) == 1
    again = await sync_to_async(get_llm)("main")
    assert again is not llm
    scripted_server.reset()
    scripted_server.enqueue(text("Hi."))
    await again.chat([ChatMessage(role="user", content="Hi")], temperature=0.2)
    await again.aclose()
    assert [body.get("temperature") for body in scripted_server.requests] == [0.2]


def test_a_picked_row_whose_endpoint_refused_images_does_not_see(nothing_configured):
    from django.utils import timezone

    from fimone.llm.registry import get_llm_for_config

    row = active_row("main", is_active=False, images_refused_at=timezone.now())
    assert get_llm_for_config(row.pk).supports_vision is False
    row.images_refused_at = None
    row.save()
    assert get_llm_for_config(row.pk).supports_vision is True


@pytest.mark.django_db(transaction=True)
async def test_an_environment_models_refusal_lasts_as_long_as_the_process(
    nothing_configured, scripted_server, another_process
):
    from fimone.llm import registry

    nothing_configured.LLM_BASE_URL = scripted_server.base_url
    nothing_configured.LLM_MODEL = "text-only-env"
    llm = await sync_to_async(get_llm)("main")
    await ask(llm, scripted_server, http_error(400, REFUSAL), text("42.10"))

    registry._cache.clear()  # a new object in the same process knows it too
    assert not (await sync_to_async(get_llm)("main")).supports_vision
    assert not await sync_to_async(ModelConfig.objects.exists)()
    another_process()  # a restart forgets it: nowhere to store it
    assert (await sync_to_async(get_llm)("main")).supports_vision


def test_a_full_cache_of_models_lets_the_least_recently_used_go(monkeypatch):
    from fimone.llm import registry

    monkeypatch.setattr(registry, "_cache", {})
    monkeypatch.setattr(registry, "_CACHE_LIMIT", 2)
    spec = {
        name: registry.LLMSpec(role="main", source="env", model=name, base_url="http://h/v1")
        for name in ("a", "b", "c")
    }
    a, b = registry._shared(spec["a"]), registry._shared(spec["b"])
    assert registry._shared(spec["a"]) is a  # used again: now the most recent
    registry._shared(spec["c"])
    assert registry._shared(spec["a"]) is a
    assert registry._shared(spec["b"]) is not b  # the least recently used was let go
