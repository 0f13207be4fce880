"""The cross-process run guard and orphan detection of chat.runs.control.

Database rules run on the test database (SQLite here; the PostgreSQL row-lock behaviour is
exercised by tests/scale/test_two_processes.py). Probes run over a real Redis.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from asgiref.sync import sync_to_async
from channels_redis.core import RedisChannelLayer
from django.db import transaction

from chat import services
from chat.models import Message
from chat.runs import control as run_control
from chat.runs.events import control_group
from fimone.memory_layer import InMemoryChannelLayer


def start_run(conversation, run_id: str | None = None) -> tuple[Message, Message]:
    run_id = run_id or uuid.uuid4().hex
    query = services.user_message_create(conversation=conversation, content="q", run_id=run_id)
    answer = services.assistant_message_start(conversation=conversation, run_id=run_id, mode="dag")
    return query, answer


@pytest.fixture
def running(conversation) -> tuple[Message, Message]:
    """A conversation whose run is ``running`` (query pending, answer running)."""
    return start_run(conversation)


# --- database guard -----------------------------------------------------------------------


@pytest.mark.django_db
def test_running_run_reads_the_running_answer(conversation, running):
    _, answer = running
    active = run_control.running_run(conversation_id=conversation.pk)
    assert active == run_control.RemoteRun(
        run_id=answer.run_id,
        conversation_id=conversation.pk,
        assistant_message_id=answer.pk,
        mode="dag",
    )


@pytest.mark.django_db
def test_a_finished_run_is_not_running(conversation, running):
    services.assistant_message_finish(message=running[1], content="a")
    assert run_control.running_run(conversation_id=conversation.pk) is None


@pytest.mark.django_db
def test_claim_passes_on_an_idle_conversation(conversation):
    with transaction.atomic():
        run_control.claim_conversation(conversation_id=conversation.pk)


@pytest.mark.django_db
def test_claim_refuses_a_second_run(conversation, running):
    with pytest.raises(run_control.RunBusy) as busy, transaction.atomic():
        run_control.claim_conversation(conversation_id=conversation.pk)
    assert busy.value.run.assistant_message_id == running[1].pk


@pytest.mark.django_db(transaction=True)
def test_claim_outside_a_transaction_is_a_programming_error(conversation):
    with pytest.raises(RuntimeError, match="transaction"):
        run_control.claim_conversation(conversation_id=conversation.pk)


@pytest.mark.django_db
def test_injection_lock_needs_that_run_to_be_running(conversation, running):
    run_id = running[1].run_id
    with transaction.atomic():
        run_control.lock_running_run(conversation_id=conversation.pk, run_id=run_id)
    with pytest.raises(run_control.RunNotActive), transaction.atomic():
        run_control.lock_running_run(conversation_id=conversation.pk, run_id="another-run")
    services.assistant_message_finish(message=running[1], content="a")
    with pytest.raises(run_control.RunNotActive), transaction.atomic():
        run_control.lock_running_run(conversation_id=conversation.pk, run_id=run_id)


@pytest.mark.django_db
def test_reclaim_interrupts_only_the_orphaned_run(conversation, running):
    query, answer = running
    run_id = answer.run_id
    injected = services.user_message_create(
        conversation=conversation, content="also", injected=True, run_id=run_id
    )
    earlier = services.user_message_create(conversation=conversation, content="x", run_id="old")

    changed = run_control.reclaim_run(conversation_id=conversation.pk, run_id=run_id)

    assert changed == 3
    statuses = dict(Message.objects.values_list("pk", "status"))
    assert statuses[answer.pk] == statuses[query.pk] == statuses[injected.pk] == "interrupted"
    assert statuses[earlier.pk] == "pending"  # another run's message is not touched
    assert run_control.running_run(conversation_id=conversation.pk) is None


@pytest.mark.django_db
def test_reclaim_of_a_run_that_finished_meanwhile_changes_nothing(conversation, running):
    services.assistant_message_finish(message=running[1], content="answer")
    run_id = running[1].run_id
    assert run_control.reclaim_run(conversation_id=conversation.pk, run_id=run_id) == 0
    assert Message.objects.get(pk=running[1].pk).status == "done"


# --- orphans and probes -------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_single_process_orphan_is_reclaimed_without_waiting(conversation):
    _, answer = await sync_to_async(start_run)(conversation)

    active = await run_control.remote_run(InMemoryChannelLayer(), conversation_id=conversation.pk)

    assert active is None
    refreshed = await Message.objects.aget(pk=answer.pk)
    assert refreshed.status == "interrupted"


@pytest.fixture
async def redis_layers(redis_server):
    """Two channel layers on one Redis: two server processes as far as channels can tell."""
    prefix = f"t{uuid.uuid4().hex[:8]}"
    layers = [RedisChannelLayer(hosts=[redis_server.url], prefix=prefix) for _ in range(2)]
    yield layers
    for layer in layers:
        await layer.flush()
        await layer.close_pools()


async def owner_listener(layer, conversation_id, run_id: str) -> asyncio.Task:
    """A run's control listener in the "owning process": answers pings like a run's listener."""
    channel = await layer.new_channel()
    await layer.group_add(control_group(conversation_id), channel)

    async def listen() -> None:
        while True:
            message = await layer.receive(channel)
            if message.get("type") == run_control.PING:
                await run_control.answer_ping(layer, message, run_id=run_id)

    return asyncio.create_task(listen())


async def stop(task: asyncio.Task) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def busy_socket(layer) -> asyncio.Task:
    """A consumer of the same process waiting on its own channel, as in a real server:
    the probe and the listener must share the layer's receive loop with it."""
    channel = await layer.new_channel()
    return asyncio.create_task(layer.receive(channel))


@pytest.mark.scale
async def test_probe_is_answered_by_the_owner_in_another_process(redis_layers):
    owner, other = redis_layers
    conversation_id = uuid.uuid4()
    sockets = [await busy_socket(owner), await busy_socket(other)]
    listener = await owner_listener(owner, conversation_id, "run-1")
    try:
        assert await run_control.probe(other, conversation_id=conversation_id, run_id="run-1")
        # A ping for another run id is not answered by this owner.
        assert not await run_control.probe(
            other, conversation_id=conversation_id, run_id="run-2", wait_seconds=0.3
        )
    finally:
        for task in (listener, *sockets):
            await stop(task)


@pytest.mark.scale
async def test_probe_without_an_owner_says_orphaned(redis_layers):
    _, other = redis_layers
    assert not await run_control.probe(
        other, conversation_id=uuid.uuid4(), run_id="run-1", wait_seconds=0.3
    )


@pytest.mark.scale
@pytest.mark.django_db(transaction=True)
async def test_remote_run_finds_a_live_run_and_reclaims_a_dead_one(
    redis_layers, conversation, settings
):
    settings.FIMONE_RUN_PROBE_SECONDS = 0.3
    owner, other = redis_layers
    _, answer = await sync_to_async(start_run)(conversation)
    run_id = answer.run_id
    listener = await owner_listener(owner, conversation.pk, run_id)
    try:
        active = await run_control.remote_run(other, conversation_id=conversation.pk)
        assert active is not None and active.run_id == run_id
        assert (await Message.objects.aget(pk=answer.pk)).status == "running"
    finally:
        await stop(listener)

    # The owner is gone (its process died): the next look reclaims the run.
    assert await run_control.remote_run(other, conversation_id=conversation.pk) is None
    assert (await Message.objects.aget(pk=answer.pk)).status == "interrupted"


@pytest.mark.scale
@pytest.mark.django_db(transaction=True)
async def test_start_up_recovery_interrupts_orphans_only(redis_layers, user, settings):
    settings.FIMONE_RUN_PROBE_SECONDS = 0.3
    owner, restarting = redis_layers
    live_conversation = await sync_to_async(services.conversation_create)(owner=user)
    dead_conversation = await sync_to_async(services.conversation_create)(owner=user)
    _, live = await sync_to_async(start_run)(live_conversation)
    _, dead = await sync_to_async(start_run)(dead_conversation)
    listener = await owner_listener(owner, live_conversation.pk, live.run_id)
    try:
        changed = await run_control.reclaim_orphans(restarting)
    finally:
        await stop(listener)

    assert changed == 2  # the dead run's answer and its query
    assert (await Message.objects.aget(pk=live.pk)).status == "running"
    assert (await Message.objects.aget(pk=dead.pk)).status == "interrupted"


@pytest.mark.scale
@pytest.mark.django_db(transaction=True)
async def test_a_run_whose_listener_is_still_joining_is_not_reclaimed(
    redis_layers, conversation, settings, monkeypatch
):
    # The owner commits the running message a moment before its listener joins the
    # control group: a ping in that moment is unheard, and must not cost the run its life.
    settings.FIMONE_RUN_PROBE_SECONDS = 0.5
    owner, other = redis_layers
    pinged = asyncio.Event()
    group_send = other.group_send

    async def noting_pings(group, message):
        await group_send(group, message)
        if message.get("type") == run_control.PING:
            pinged.set()

    monkeypatch.setattr(other, "group_send", noting_pings)
    _, answer = await sync_to_async(start_run)(conversation)
    run_id = answer.run_id
    looking = asyncio.create_task(run_control.remote_run(other, conversation_id=conversation.pk))
    await asyncio.wait_for(pinged.wait(), 30)  # the first ping is out, nobody listens yet
    listener = await owner_listener(owner, conversation.pk, run_id)
    try:
        active = await looking
    finally:
        await stop(listener)

    assert active is not None and active.run_id == run_id
    assert (await Message.objects.aget(pk=answer.pk)).status == "running"


# --- run.active for a socket of another process ---------------------------------------


async def test_snapshot_gate_drops_deltas_until_the_snapshot_then_forwards_all():
    gate = run_control.SnapshotGate()
    assert gate.forward({"type": "answer.delta", "text": "a"})  # not waiting: everything
    gate.wait(60)
    assert not gate.forward({"type": "answer.delta", "text": "b"})  # in the snapshot
    assert gate.forward({"type": "step", "iteration": 1})  # other events pass
    assert gate.forward({"type": "run.active", "text": "ab"})
    assert gate.forward({"type": "answer.delta", "text": "c"})  # after it: new text


@pytest.mark.parametrize("ending", ["done", "error", "run.cancelled", "run.started"])
async def test_snapshot_gate_opens_when_the_run_ends_without_a_snapshot(ending):
    gate = run_control.SnapshotGate()
    gate.wait(60)
    assert gate.forward({"type": ending})
    assert gate.forward({"type": "answer.delta", "text": "next run"})


async def test_snapshot_gate_opens_by_itself_when_no_snapshot_comes():
    gate = run_control.SnapshotGate()
    gate.wait(0.05)
    async with asyncio.timeout(30):  # its timer fires on this loop
        while gate.waiting:  # noqa: ASYNC110 - nothing to await but the gate's own timer
            await asyncio.sleep(0.01)
    assert gate.forward({"type": "answer.delta", "text": "x"})
