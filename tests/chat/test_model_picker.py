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
from tests.support.runs import connect, events_until, install_scripted_engine, send


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
