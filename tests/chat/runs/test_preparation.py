"""Opening a run for a new message (RX.4): the run is opened and what its work needs is
read in one database thread hop; when that read fails, the work reads it again and a
failure is the run's own. Over real Channels websockets with the real ReAct engine and a
scripted model. The models' cache keeps no replaced collaborators alive (RS.3), and an
admin's change of the models or budgets reaches the very next run (RD.5)."""

from __future__ import annotations

import dataclasses
import weakref

import pytest
from django.core.cache import cache
from django.urls import reverse

from chat.models import Message
from chat.runs import deps, preparation
from contextmgmt import calibration, generations, profiles
from contextmgmt.core.tokens import text_counts
from contextmgmt.models import ModelConfig
from tests.contextmgmt.test_admin import ADD_URL, form_data
from tests.support.runs import events_until, send

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs"),
]

CHANGE_URL = "admin:contextmgmt_modelconfig_change"
DELETE_URL = "admin:contextmgmt_modelconfig_delete"
CHANGELIST_URL = "admin:contextmgmt_modelconfig_changelist"


@pytest.fixture
def prepares(monkeypatch):
    """Each ``preparation.prepare_work`` call, and a switch to make the next ones fail."""
    calls: list[str] = []
    failures: list[Exception] = []
    real = preparation.prepare_work

    def counted(opened, deps):
        calls.append(opened.run_id)
        if failures:
            raise failures.pop(0)
        return real(opened, deps)

    monkeypatch.setattr(preparation, "prepare_work", counted)
    counted.calls, counted.failures = calls, failures
    return counted


async def test_a_new_message_is_opened_and_prepared_in_one_hop(
    socket, conversation, ws_fake_llm, prepares
):
    ws_fake_llm.enqueue("Hello there.")
    await send(socket, type="message", content="Say hello", mode="react")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events
    started = events[0]
    # Read once, by the hop that opened the run: the work did not read it again.
    assert prepares.calls == [started["run_id"]]


async def test_a_failed_read_at_the_open_is_read_again_by_the_work(
    socket, conversation, ws_fake_llm, prepares
):
    prepares.failures.append(RuntimeError("the registry was busy"))
    ws_fake_llm.enqueue("Hello after all.")
    await send(socket, type="message", content="Say hello", mode="react")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events
    assert prepares.calls == [events[0]["run_id"]] * 2
    answer = await Message.objects.filter(conversation=conversation, role="assistant").alast()
    assert answer.content == "Hello after all." and answer.status == "done"


async def test_a_read_that_keeps_failing_is_the_runs_own_failure_and_the_question_stays(
    socket, conversation, ws_fake_llm, prepares
):
    prepares.failures.extend([RuntimeError("no model"), RuntimeError("no model")])
    await send(socket, type="message", content="Say hello", mode="react")
    events = await events_until(socket, "done", "error")
    assert events[0]["type"] == "run.started"
    assert events[-1]["type"] == "error" and events[-1]["code"] == "internal_error", events
    question = await Message.objects.filter(conversation=conversation, role="user").alast()
    assert question.content == "Say hello"
    answer = await Message.objects.filter(conversation=conversation, role="assistant").alast()
    assert answer.status == "error"


def test_the_models_cache_frees_collaborators_that_were_replaced():
    # A test's collaborators record its runs (a scripted engine keeps each run's context):
    # held by the cache, a whole finished run stayed alive until the next lookup.
    replaced = dataclasses.replace(deps.current())
    gone = weakref.ref(replaced)
    preparation.models_and_budgets(replaced)
    del replaced
    assert gone() is None  # freed by reference counting, no collection needed


def test_other_collaborators_get_a_lookup_of_their_own():
    """RD.5: equal collaborators that are not the same object (a test's) look up afresh."""
    calls: list[str] = []

    def recording_llm(role):
        calls.append(role)
        return deps.current().get_llm(role)

    first = dataclasses.replace(deps.current(), get_llm=recording_llm)
    second = dataclasses.replace(first)
    assert first == second and first is not second
    preparation.models_and_budgets(first)
    preparation.models_and_budgets(first)
    preparation.models_and_budgets(second)
    assert calls == ["main", "fast", "main", "fast"]


@pytest.fixture
def collaborators():
    """Collaborators nothing was looked up for yet (as a server process's are)."""
    return dataclasses.replace(deps.current())


@pytest.fixture
def active_model_first(admin_client) -> ModelConfig:
    """The main model "first" (so the fast one too), added through the admin."""
    response = admin_client.post(reverse(ADD_URL), _form(name="first", model="first"))
    assert response.status_code == 302, response.content
    return ModelConfig.objects.get(name="first")


def _form(**overrides) -> dict:
    return form_data(
        **{"base_url": "http://127.0.0.1:9/v1", "is_active": "on", "api_key_env": "", **overrides}
    )


def test_an_admins_save_of_the_active_model_reaches_the_very_next_run(
    admin_client, collaborators, active_model_first
):
    """RD.5: an admin's edit of the active model (another model name, another budget)
    applies from the next run on: no window in which runs keep the old one."""
    before = preparation.models_and_budgets(collaborators)
    assert (before.main.model_name, before.fast.model_name) == ("first", "first")
    assert before.main_budget.context_size == 128_000
    response = admin_client.post(
        reverse(CHANGE_URL, args=[active_model_first.pk]),
        _form(name="first", model="second", context_size="64000", max_output_tokens="8000"),
    )
    assert response.status_code == 302, response.content
    after = preparation.models_and_budgets(collaborators)
    assert (after.main.model_name, after.fast.model_name) == ("second", "second")
    assert (after.main_budget.context_size, after.fast_budget.context_size) == (64_000, 64_000)


def test_an_admins_switch_to_another_row_reaches_the_very_next_run(
    admin_client, collaborators, active_model_first
):
    """RD.5: switching the active row (one off, another on) applies from the next run on,
    and deleting it too (the environment's model again)."""
    preparation.models_and_budgets(collaborators)
    active_model_first.is_active = False
    active_model_first.save()
    response = admin_client.post(reverse(ADD_URL), _form(name="other", model="other"))
    assert response.status_code == 302, response.content
    assert preparation.models_and_budgets(collaborators).main.model_name == "other"
    other = ModelConfig.objects.get(name="other")
    response = admin_client.post(reverse(DELETE_URL, args=[other.pk]), {"post": "yes"})
    assert response.status_code == 302, response.content
    assert preparation.models_and_budgets(collaborators).main.model_name != "other"


def test_the_admins_bulk_calibration_reset_reaches_the_very_next_run(
    admin_client, collaborators, active_model_first
):
    """RD.5: an admin action updates rows in bulk (no save signal): the next run still gets
    the budget it left (the calibration reset)."""
    ModelConfig.objects.filter(pk=active_model_first.pk).update(token_ratio=2.0)
    preparation.forget_models()  # the row as a process would have found it earlier
    assert preparation.models_and_budgets(collaborators).main_budget.token_ratio == 2.0
    response = admin_client.post(
        reverse(CHANGELIST_URL),
        {"action": "reset_calibration_action", "_selected_action": [active_model_first.pk]},
    )
    assert response.status_code == 302
    assert preparation.models_and_budgets(collaborators).main_budget.token_ratio == 1.0


def test_the_admins_bulk_image_reset_reaches_the_very_next_run(
    admin_client, collaborators, active_model_first
):
    """RD.5: "Send images again" (a bulk update) gives the next run a model that sees."""
    profiles.remember_image_refusal(model_config_id=active_model_first.pk, message="no images")
    assert not preparation.models_and_budgets(collaborators).main.supports_vision
    response = admin_client.post(
        reverse(CHANGELIST_URL),
        {"action": "forget_image_refusal_action", "_selected_action": [active_model_first.pk]},
    )
    assert response.status_code == 302
    assert preparation.models_and_budgets(collaborators).main.supports_vision


def test_calibration_reaches_the_very_next_run(collaborators, active_model_first):
    """RD.5: a usage report refits the weights; the next run estimates with them."""
    assert preparation.models_and_budgets(collaborators).main_budget.token_weights is None
    counts = list(text_counts("a tokenizer that counts more " * 100))
    assert calibration.record_usage(
        model_config_id=active_model_first.pk, counts=counts, fixed_tokens=10, reported_tokens=2000
    )
    found = preparation.models_and_budgets(collaborators).main_budget
    assert found.token_weights is not None
    assert found.token_ratio > 1.0


def test_another_process_s_change_reaches_the_next_run(collaborators, active_model_first):
    """RD.5: with several processes the token is shared (Redis): one replaced by another
    process makes this one look up again, though nothing of its own changed."""
    preparation.models_and_budgets(collaborators)
    ModelConfig.objects.filter(pk=active_model_first.pk).update(model="elsewhere")
    cache.set(generations.MODEL_CONFIGS, "another process's save", timeout=None)
    assert preparation.models_and_budgets(collaborators).main.model_name == "elsewhere"


def test_nothing_changed_no_query(collaborators, active_model_first, django_assert_num_queries):
    """RD.5: while nothing changed, runs reuse what an earlier one looked up."""
    first = preparation.models_and_budgets(collaborators)
    with django_assert_num_queries(0):
        again = preparation.models_and_budgets(collaborators)
    assert again is first
