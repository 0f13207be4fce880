"""Fixtures for the chat app tests, named by the state they build."""

from __future__ import annotations

import pytest
from django.test import Client

from chat import services
from chat.models import Conversation
from tests.support.runs import connect


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    """Every test stores uploads in its own empty media folder."""
    root = tmp_path / "media"
    root.mkdir()
    settings.MEDIA_ROOT = root
    return root


@pytest.fixture
def conversation(user) -> Conversation:
    return services.conversation_create(owner=user, title="Alice's chat")


@pytest.fixture
def foreign_conversation(other_user) -> Conversation:
    return services.conversation_create(owner=other_user, title="Mallory's secret")


@pytest.fixture
def logged_in_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def csrf_enforcing_client(user) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


@pytest.fixture
async def socket(user, conversation):
    """An accepted websocket on ``conversation``, as its owner; closed after the test."""
    comm = await connect(user, conversation.id)
    yield comm
    await comm.disconnect()
