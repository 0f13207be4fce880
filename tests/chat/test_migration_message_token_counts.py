"""The migration that counts the messages stored before their class counts were kept
(SPEC RF.12): afterwards a load takes every row's counts instead of counting it."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from chat.models import Message
from contextmgmt.core.tokens import stored_counts
from tests.support.migrations import chat_migration_and_previous, migrate

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def messages_stored_before_counts():
    """Messages of several scripts and one empty answer, stored before the column."""
    target, previous = chat_migration_and_previous("token_counts")
    executor = migrate([previous])
    apps = executor.loader.project_state([previous]).apps
    user = apps.get_model("auth", "User").objects.create(username="old", password="x")
    conversation = apps.get_model("chat", "Conversation").objects.create(owner=user, title="t")
    old_message = apps.get_model("chat", "Message")
    texts = ["Order ORD-40037 weighs 12.5 kg", "预算上限是每月八千元", "Счёт СЧ-7 на 500 ₽", ""]
    ids = [
        old_message.objects.create(
            conversation=conversation, role=role, content=text, kind="query"
        ).pk
        for role, text in zip(["user", "assistant", "user", "assistant"], texts, strict=True)
    ]
    yield dict(zip(ids, texts, strict=True))
    migrate(executor.loader.graph.leaf_nodes())


def test_rf12_messages_stored_before_are_counted_by_the_migration(messages_stored_before_counts):
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    for message in Message.objects.filter(pk__in=list(messages_stored_before_counts)):
        text = messages_stored_before_counts[message.pk]
        assert bytes(message.token_counts) == (stored_counts(text) if text else b"")
