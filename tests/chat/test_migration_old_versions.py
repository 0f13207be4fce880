"""The migration that turns edits, retries and regenerations stored before versions existed
into versions: run on rows of that shape, they can be switched back to afterwards."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from chat import versions
from chat.models import Message
from tests.support.migrations import chat_migration_and_previous, migrate

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def edited_and_regenerated_before_versions():
    """A question whose answer was regenerated, then the question edited, stored as before
    versions existed (only ``superseded_by`` and the successor's ``retry_of``)."""
    target, previous = chat_migration_and_previous("old_versions")
    executor = migrate([previous])
    apps = executor.loader.project_state([previous]).apps
    user = apps.get_model("auth", "User").objects.create(username="old", password="x")
    conversation = apps.get_model("chat", "Conversation").objects.create(owner=user, title="t")
    Message = apps.get_model("chat", "Message")

    def add(role, content, kind, **metadata):
        return Message.objects.create(
            conversation=conversation, role=role, kind=kind, content=content, metadata=metadata
        )

    q1 = add("user", "first wording", "query")
    a1 = add("assistant", "first answer", "answer")
    a1b = add("assistant", "regenerated answer", "answer", retry_of=a1.pk)
    q2 = add("user", "second wording", "query")
    a2 = add("assistant", "answer to the edit", "answer")
    for old, new in ((q1, q2), (a1, a1b), (a1b, a2)):
        Message.objects.filter(pk=old.pk).update(superseded_by_id=new.pk)
    yield user, conversation.pk, {"q1": q1.pk, "a1": a1.pk, "a1b": a1b.pk, "q2": q2.pk}, target
    migrate(executor.loader.graph.leaf_nodes())


def test_old_edits_and_regenerations_can_be_switched_back_to(
    edited_and_regenerated_before_versions,
):
    user, conversation_id, ids, target = edited_and_regenerated_before_versions
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    def shown():
        rows = Message.objects.filter(conversation_id=conversation_id).order_by("id")
        return [m.content for m in rows if not versions.is_hidden(m)]

    assert shown() == ["second wording", "answer to the edit"]  # as before the migration
    q2 = Message.objects.get(pk=ids["q2"])
    assert versions.versions_of([q2]) == {q2.pk: (ids["q1"], ids["q2"])}
    user = get_user_model().objects.get(pk=user.pk)  # the real model, not the migration's
    versions.version_show(user=user, conversation_id=conversation_id, message_id=ids["q1"])
    assert shown() == ["first wording", "regenerated answer"]
    versions.version_show(user=user, conversation_id=conversation_id, message_id=ids["a1"])
    assert shown() == ["first wording", "first answer"]
