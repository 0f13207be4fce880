"""Opening a run for a new message (RX.4): the run is opened and what its work needs is
read in one database thread hop; when that read fails, the work reads it again and a
failure is the run's own. Over real Channels websockets with the real ReAct engine and a
scripted model. The models' cache keeps no replaced collaborators alive (RS.3)."""

from __future__ import annotations

import dataclasses
import weakref

import pytest

from chat.models import Message
from chat.runs import deps, preparation
from tests.support.runs import events_until, send

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs"),
]


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
    preparation._models_and_budgets(replaced)
    del replaced
    assert gone() is None  # freed by reference counting, no collection needed


def _activate(name: str) -> None:
    from contextmgmt.models import ModelConfig

    ModelConfig.objects.filter(is_active=True).update(is_active=False)
    ModelConfig.objects.update_or_create(
        name=name,
        defaults={
            "model": name,
            "role": "main",
            "base_url": "http://127.0.0.1:9/v1",
            "is_active": True,
        },
    )


@pytest.mark.parametrize(("seconds", "second_run_model"), [(0.0, "second"), (3600.0, "first")])
def test_an_admins_switch_of_model_reaches_runs_after_the_lookup_time(
    settings, seconds, second_run_model
):
    """RD.6: ``FIMONE_MODEL_LOOKUP_SECONDS`` bounds how long runs keep the models an earlier
    run looked up; at 0 a switch of the active model applies from the next run on (one
    server can then be pointed at one endpoint after another, as the provider-profile tests
    do)."""
    settings.FIMONE_MODEL_LOOKUP_SECONDS = seconds
    collaborators = dataclasses.replace(deps.current())  # nothing looked up for them yet
    _activate("first")
    main, fast, _, _ = preparation._models_and_budgets(collaborators)
    assert (main.model_name, fast.model_name) == ("first", "first")
    _activate("second")
    main, fast, _, _ = preparation._models_and_budgets(collaborators)
    assert (main.model_name, fast.model_name) == (second_run_model, second_run_model)
