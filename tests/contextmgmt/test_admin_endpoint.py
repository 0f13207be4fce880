"""ModelConfig admin against a live endpoint (the scripted server in a provider profile):
a refused parameter and a refusal of images learnt and shown, the context size read from
what the server reports."""

import pytest
from asgiref.sync import async_to_sync
from django.urls import reverse

from contextmgmt.core.messages import IMAGE_NOTES, ChatMessage
from contextmgmt.models import ModelConfig
from fimone.llm import get_llm
from tests.support.scripted_server import http_error

pytestmark = pytest.mark.django_db


def change_url(row: ModelConfig) -> str:
    return reverse("admin:contextmgmt_modelconfig_change", args=[row.pk])


def read_from_endpoint(admin_client, row: ModelConfig) -> str:
    """Run the admin action on ``row``; the page it leads to (with its messages)."""
    response = admin_client.post(
        reverse("admin:contextmgmt_modelconfig_changelist"),
        {"action": "read_from_endpoint_action", "_selected_action": [row.pk]},
        follow=True,
    )
    row.refresh_from_db()
    return response.content.decode()


# --- learnt from the endpoint's answers ------------------------------------------------------


def endpoint_row(scripted_server, **fields) -> ModelConfig:
    values = {
        "name": "Scripted",
        "model": "scripted",
        "role": "main",
        "base_url": scripted_server.base_url,
        "is_active": True,
        "context_size": 128_000,
        "max_output_tokens": 64_000,
    }
    values.update(fields)
    return ModelConfig.objects.create(**values)


@pytest.mark.django_db(transaction=True)
async def test_a_refused_parameter_is_retried_remembered_and_shown(scripted_server, admin_user):
    from asgiref.sync import sync_to_async
    from django.test import Client

    scripted_server.use_profile("gateway_no_stream_usage").enqueue("Hello.")
    row = await sync_to_async(endpoint_row)(scripted_server)
    llm = await sync_to_async(get_llm)("main")
    chunks = [c async for c in llm.stream_chat([ChatMessage(role="user", content="Hi")])]
    assert "".join(c.text for c in chunks) == "Hello." and chunks[-1].usage.estimated
    await llm.aclose()

    await sync_to_async(row.refresh_from_db)()
    assert row.stream_usage is False
    assert [r["param"] for r in row.refused_params] == ["stream_options"]
    # The next LLM built from the row sends no stream_options at all.
    scripted_server.enqueue("Again.")
    again = await sync_to_async(get_llm)("main")
    _ = [c async for c in again.stream_chat([ChatMessage(role="user", content="Hi")])]
    await again.aclose()
    assert "stream_options" not in scripted_server.requests[-1]
    assert len(scripted_server.requests) == 3  # refused, retried, then right first time

    def change_page() -> str:
        client = Client()
        client.force_login(admin_user)
        return client.get(change_url(row)).content.decode()

    page = await sync_to_async(change_page)()
    assert "Unrecognized request argument supplied: stream_options" in page


def test_an_endpoint_that_refuses_images_is_shown_and_sent_images_again_after_a_reset(
    admin_client, scripted_server, monkeypatch
):
    from fimone.llm import registry

    monkeypatch.setattr(registry, "_cache", {})  # no earlier test's LLM objects
    pixels = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    question = ChatMessage(
        role="user",
        content=[{"type": "text", "text": "What colour?"}, pixels],
        metadata={IMAGE_NOTES: ["[image: now.png, 32x24 — mostly red]"]},
    )

    async def ask(llm) -> None:
        await llm.chat([question])
        await llm.aclose()

    row = endpoint_row(scripted_server, model="text-only-admin")
    scripted_server.enqueue(
        http_error(400, "image input is not supported - hint: you may need --mmproj"), "Red."
    )
    async_to_sync(ask)(get_llm("main"))
    page = admin_client.get(change_url(row)).content.decode()
    assert "image input is not supported - hint: you may need --mmproj" in page
    assert "gets image descriptions instead" in page
    assert get_llm("main").supports_vision is False

    admin_client.post(
        reverse("admin:contextmgmt_modelconfig_changelist"),
        {"action": "forget_image_refusal_action", "_selected_action": [row.pk]},
    )
    llm = get_llm("main")
    assert llm.supports_vision
    scripted_server.reset()
    scripted_server.enqueue("Red.")
    async_to_sync(ask)(llm)
    [request] = scripted_server.requests
    assert request["messages"][-1]["content"][1]["type"] == "image_url"


def test_refused_parameters_are_sent_again_after_a_reset(
    admin_client, scripted_server, monkeypatch
):
    """The reset undoes what the refusals changed, and the LLM object that learnt them in
    this process is not handed out again for the row's restored settings."""
    from fimone.llm import registry

    monkeypatch.setattr(registry, "_cache", {})  # no earlier test's LLM objects

    async def ask(llm) -> None:
        await llm.chat([ChatMessage(role="user", content="Hi")], max_tokens=50, temperature=0.2)
        await llm.aclose()

    row = endpoint_row(scripted_server, model="reasoning-then-upgraded")
    scripted_server.use_profile("openai_reasoning").enqueue("Hello.")
    async_to_sync(ask)(get_llm("main"))
    row.refresh_from_db()
    assert [r["param"] for r in row.refused_params] == ["max_tokens", "temperature"]
    assert (row.token_limit_param, row.send_temperature) == ("max_completion_tokens", False)

    scripted_server.reset()  # the gateway in front of the model is upgraded: it takes both
    response = admin_client.post(
        reverse("admin:contextmgmt_modelconfig_changelist"),
        {"action": "forget_refusals_action", "_selected_action": [row.pk]},
        follow=True,
    )
    page = response.content.decode()
    assert "Refused parameters will be sent again to 1 model configuration." in page
    row.refresh_from_db()
    assert row.refused_params == []
    assert (row.token_limit_param, row.send_temperature) == ("max_tokens", True)

    scripted_server.enqueue("Hello again.")
    async_to_sync(ask)(get_llm("main"))
    [request] = scripted_server.requests
    assert (request.get("max_tokens"), request.get("temperature")) == (50, 0.2)
    assert "max_completion_tokens" not in request


# --- context discovery -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("profile", "context", "source", "detected"),
    [
        ("vllm", 32_768, "GET /v1/models max_model_len", "vllm"),
        ("llamacpp", 16_384, "GET /props default_generation_settings.n_ctx", "llamacpp"),
        ("ollama", 8_192, "POST /api/show parameters num_ctx", "ollama"),
        ("tgi", 8_192, "GET /info max_total_tokens", "openai_compatible"),
        ("lmstudio", 8_192, "GET /api/v0/models loaded_context_length", "openai_compatible"),
    ],
)
def test_the_context_size_is_read_from_the_endpoint(
    admin_client, scripted_server, profile, context, source, detected
):
    scripted_server.use_profile(profile)
    row = endpoint_row(scripted_server)
    page = read_from_endpoint(admin_client, row)
    assert row.context_size == context
    assert source in page
    assert row.provider_profile == detected
    # The default 64,000 output would not fit the window: a quarter of it is kept instead.
    assert row.max_output_tokens == context // 4
    assert row.usable_input_tokens > 0


def test_ollama_running_a_model_with_a_smaller_num_ctx_is_warned_about(
    admin_client, scripted_server
):
    scripted_server.use_profile("ollama")
    page = read_from_endpoint(admin_client, endpoint_row(scripted_server))
    assert "Ollama runs this model with num_ctx 8,192, smaller than the model" in page
    assert "131,072-token window" in page


def test_lm_studio_loaded_with_a_shorter_context_is_said_so(admin_client, scripted_server):
    scripted_server.use_profile("lmstudio")
    page = read_from_endpoint(admin_client, endpoint_row(scripted_server))
    assert "loaded this model with a shorter context" in page


def test_litellm_reports_the_window_of_the_model_by_its_name(admin_client, scripted_server):
    scripted_server.use_profile("litellm")
    row = endpoint_row(scripted_server)
    page = read_from_endpoint(admin_client, row)
    assert (row.context_size, row.max_output_tokens) == (128_000, 16_384)
    assert "GET /model/info model_info.max_input_tokens" in page


def test_a_reported_output_limit_is_taken_too(admin_client, scripted_server):
    scripted_server.use_profile("openrouter")
    row = endpoint_row(scripted_server)
    page = read_from_endpoint(admin_client, row)
    assert (row.context_size, row.max_output_tokens) == (32_768, 8_192)
    assert "GET /v1/models context_length" in page and "max output 8,192" in page


def test_an_endpoint_that_reports_nothing_is_said_so_and_nothing_changes(
    admin_client, scripted_server
):
    row = endpoint_row(scripted_server)  # the OpenAI profile: /v1/models has no window
    page = read_from_endpoint(admin_client, row)
    assert "could not read the context size" in page
    assert (row.context_size, row.max_output_tokens) == (128_000, 64_000)
