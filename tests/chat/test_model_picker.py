"""The model picker: a conversation may pick one of the main ModelConfigs; its runs use that
model and budget, and each answer's usage names the model that wrote it."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from contextmgmt.budget import Budget
from contextmgmt.models import ModelConfig
from fimone.agent.context import AgentOutcome
from tests.support.fake_llm import FakeLLM
from tests.support.runs import (
    answer_text,
    connect,
    events_until,
    install_scripted_engine,
    send,
)


@pytest.fixture
def main_models(db) -> list[ModelConfig]:
    return [
        ModelConfig.objects.create(name="Big", model="big-1", role="main", is_active=True),
        ModelConfig.objects.create(name="Small", model="small-1", role="main"),
        ModelConfig.objects.create(name="Helper", model="fast-1", role="fast"),
    ]


def patch(client, conversation, body):
    return client.patch(
        reverse("chat:conversation", args=[conversation.id]),
        data=json.dumps(body),
        content_type="application/json",
    )


@pytest.mark.django_db
def test_a_conversation_picks_a_main_model_and_can_go_back_to_the_default(
    logged_in_client, conversation, main_models
):
    small = main_models[1]
    reply = patch(logged_in_client, conversation, {"model_config": small.pk})
    assert reply.status_code == 200 and reply.json()["model_config"] == small.pk
    conversation.refresh_from_db()
    assert conversation.model_config_id == small.pk
    # Renaming leaves the pick alone; null goes back to the default.
    patch(logged_in_client, conversation, {"title": "Renamed"})
    conversation.refresh_from_db()
    assert conversation.model_config_id == small.pk
    reply = patch(logged_in_client, conversation, {"model_config": None})
    assert reply.json()["model_config"] is None


@pytest.mark.django_db
@pytest.mark.parametrize("bad", ["small", True, 10_000, "fast"])
def test_only_a_main_model_can_be_picked(logged_in_client, conversation, main_models, bad):
    value = main_models[2].pk if bad == "fast" else bad
    reply = patch(logged_in_client, conversation, {"model_config": value})
    assert reply.status_code == 400
    assert reply.json()["error"]["code"] == "invalid_model"
    conversation.refresh_from_db()
    assert conversation.model_config_id is None


@pytest.mark.django_db
def test_someone_elses_conversation_cannot_pick(
    logged_in_client, foreign_conversation, main_models
):
    reply = patch(logged_in_client, foreign_conversation, {"model_config": main_models[1].pk})
    assert reply.status_code == 404


@pytest.mark.django_db
def test_the_page_lists_the_main_models_default_first(logged_in_client, main_models):
    page = logged_in_client.get("/").content.decode()
    start = page.index('id="ui-config"')
    config = json.loads(page[page.index(">", start) + 1 : page.index("</script>", start)])
    assert [(m["name"], m["active"]) for m in config["models"]] == [
        ("Big", True),
        ("Small", False),
    ]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("clean_runs")
async def test_the_run_uses_the_picked_model_and_budget(user, conversation, main_models, run_deps):
    default, picked = FakeLLM(model_name="default-main"), FakeLLM(model_name="small-1")
    asked = []

    def model_llm(config_id):
        asked.append(config_id)
        return picked

    def model_budget(config_id):
        return Budget(
            role="main",
            context_size=20_000,
            max_output_tokens=4_000,
            usable_input_tokens=12_000,
            source="db",
            model_config_id=config_id,
        )

    run_deps.use(
        get_llm=lambda role: default, get_model_llm=model_llm, resolve_model_budget=model_budget
    )
    engine = install_scripted_engine(run_deps)

    async def answers(ctx):
        await ctx.sink("answer.delta", {"text": "ok"})
        return AgentOutcome(answer="ok")

    engine.use(answers)
    conversation.model_config_id = main_models[1].pk
    await conversation.asave(update_fields=["model_config"])
    socket = await connect(user, conversation.id)
    await send(socket, type="message", content="Which model?")
    done = (await events_until(socket, "done", "error"))[-1]
    await socket.disconnect()

    assert done["type"] == "done" and done["usage"]["model"] == "small-1"
    ctx = engine.contexts[-1]
    assert ctx.llm.model_name == "small-1" and ctx.main_budget == 12_000
    assert not default.calls  # the default model was never asked
    assert asked == [main_models[1].pk]


@pytest.mark.django_db
def test_the_gauge_measures_against_the_picked_models_budget(
    logged_in_client, conversation, main_models
):
    small = main_models[1]
    small.context_size, small.max_output_tokens = 20_000, 4_000
    small.save()
    url = reverse("chat:context_gauge", args=[conversation.id])
    default = logged_in_client.get(url).json()
    patch(logged_in_client, conversation, {"model_config": small.pk})
    picked = logged_in_client.get(url).json()
    assert picked["budget"]["usable_input_tokens"] == 12_000  # 20,000 - 4,000 - 4,000
    assert picked["llm"]["model"] == "small-1"
    assert default["budget"]["usable_input_tokens"] != 12_000


# --- the built-in model, pickable beside the configured ones (RU.11) -------------------------


@pytest.mark.django_db
def test_ru11_the_builtin_model_is_picked_beside_an_active_row_and_back(
    logged_in_client, conversation, main_models
):
    reply = patch(logged_in_client, conversation, {"builtin_model": True})
    assert reply.status_code == 200
    assert reply.json()["builtin_model"] is True and reply.json()["model_config"] is None
    conversation.refresh_from_db()
    assert conversation.builtin_model and conversation.model_config_id is None
    # Renaming leaves the pick alone; a configured model replaces it; null is the default.
    patch(logged_in_client, conversation, {"title": "Renamed"})
    conversation.refresh_from_db()
    assert conversation.builtin_model
    reply = patch(logged_in_client, conversation, {"model_config": main_models[1].pk})
    assert reply.json()["builtin_model"] is False
    assert reply.json()["model_config"] == main_models[1].pk
    patch(logged_in_client, conversation, {"builtin_model": True})
    reply = patch(logged_in_client, conversation, {"model_config": None})
    assert reply.json() | {"builtin_model": False, "model_config": None} == reply.json()


@pytest.mark.django_db
def test_ru11_a_new_conversation_may_start_on_the_builtin_model(logged_in_client, main_models):
    reply = logged_in_client.post(
        reverse("chat:conversations"),
        data=json.dumps({"builtin_model": True}),
        content_type="application/json",
    )
    assert reply.status_code == 201 and reply.json()["builtin_model"] is True
    export = logged_in_client.get(
        reverse("chat:export", args=[reply.json()["id"]]), {"format": "json"}
    )
    assert json.loads(export.content)["conversation"]["builtin_model"] is True


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body", [{"builtin_model": "yes"}, {"builtin_model": None}, {"builtin_model": True, "pick": 1}]
)
def test_ru11_a_bad_builtin_pick_is_refused(logged_in_client, conversation, main_models, body):
    if "pick" in body:  # both models at once
        body = {"builtin_model": True, "model_config": main_models[1].pk}
    reply = patch(logged_in_client, conversation, body)
    assert reply.status_code == 400
    assert reply.json()["error"]["code"] == "invalid_model"
    conversation.refresh_from_db()
    assert not conversation.builtin_model and conversation.model_config_id is None


@pytest.mark.django_db
def test_ru11_the_page_offers_the_builtin_model_and_a_hidden_note(logged_in_client, main_models):
    page = logged_in_client.get("/").content.decode()
    start = page.index('id="ui-config"')
    config = json.loads(page[page.index(">", start) + 1 : page.index("</script>", start)])
    assert config["builtinModel"] == "fimone-offline" and config["offline"] is False
    # The note and badge are there for the conversations that pick it, hidden until then.
    assert 'id="offline-note" class="notice" role="note" data-answering="false"' in page
    assert 'id="offline-badge"' in page


@pytest.mark.django_db
def test_ru11_the_gauge_names_the_builtin_model_when_picked(
    logged_in_client, conversation, main_models
):
    big = main_models[0]
    big.context_size, big.max_output_tokens = 20_000, 4_000
    big.save()
    url = reverse("chat:context_gauge", args=[conversation.id])
    assert logged_in_client.get(url).json()["llm"]["model"] == "big-1"
    patch(logged_in_client, conversation, {"builtin_model": True})
    picked = logged_in_client.get(url).json()
    assert picked["llm"] == {"model": "fimone-offline", "source": "offline", "offline": True}
    assert picked["budget"]["source"] == "default"
    assert picked["fast_budget"]["source"] == "default"


@pytest.fixture
def active_scripted_row(db, settings, scripted_server) -> ModelConfig:
    """The active main model: a row on the environment's endpoint, the scripted server."""
    settings.LLM_BASE_URL, settings.LLM_API_KEY = scripted_server.base_url, "sk-scripted"
    settings.LLM_MAX_RETRIES = 0
    return ModelConfig.objects.create(name="Remote", model="remote-1", role="main", is_active=True)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("clean_runs")
@pytest.mark.parametrize("builtin", [True, False], ids=["builtin", "row"])
async def test_ru11_a_run_is_answered_by_the_picked_builtin_model_or_the_row(
    user, conversation, active_scripted_row, scripted_server, run_deps, builtin
):
    run_deps.use()  # the real registry, looked up afresh for this test's rows
    scripted_server.enqueue("Answered by the remote model.")
    conversation.builtin_model = builtin
    await conversation.asave(update_fields=["builtin_model"])
    socket = await connect(user, conversation.id)
    await send(socket, type="message", content="Who answers?")
    events = await events_until(socket, "done", "error")
    done = events[-1]
    await socket.disconnect()

    assert done["type"] == "done", done
    if builtin:
        assert done["usage"]["model"] == "fimone-offline"
        # Its note is true beside a configured model too.
        assert "not a real language model" in answer_text(events)
        assert not scripted_server.requests  # the configured model was never asked
    else:
        assert done["usage"]["model"] == "remote-1"
        assert [r["model"] for r in scripted_server.requests] == ["remote-1"]
