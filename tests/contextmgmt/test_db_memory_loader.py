"""Where DbMemory's history comes from: a loader it is given, else the registered one (the
chat app registers ``chat.history.load_history``); a handed-over first load is used once."""

from __future__ import annotations

import pytest

from chat.models import Conversation, Message
from contextmgmt import db_memory
from contextmgmt.core.messages import ChatMessage
from contextmgmt.db_memory import DbMemory, LoadedHistory


def test_the_chat_app_registers_its_loader():
    from chat.history import load_history

    assert db_memory.registered_history_loader() is load_history


async def test_a_given_loader_is_called_with_the_memory_options():
    calls = []

    def loader(conversation_id, *, vision, summary, use_summaries):
        calls.append((conversation_id, vision, summary, use_summaries))
        return LoadedHistory(
            messages=[ChatMessage(role="user", content="from the loader")], summary=None
        )

    memory = DbMemory("conv-1", 10_000, None, False, loader=loader, use_summaries=False)
    assert [m.text() for m in await memory.get_messages()] == ["from the loader"]
    assert calls == [("conv-1", False, None, False)]


async def test_without_any_loader_the_error_says_how_to_give_one(monkeypatch):
    monkeypatch.setattr(db_memory, "_registered_loader", None)
    with pytest.raises(RuntimeError, match="register_history_loader"):
        await DbMemory("conv-1", 10_000).get_messages()


@pytest.mark.django_db(transaction=True)
async def test_a_preloaded_history_is_used_once_then_read_afresh(user):
    """The run reads the history in its own database hop and hands it over (``loaded``)."""
    conversation = await Conversation.objects.acreate(owner=user, title="preloaded")
    await Message.objects.acreate(conversation=conversation, role="user", content="stored")
    await Message.objects.acreate(conversation=conversation, role="assistant", content="reply")
    handed = LoadedHistory(messages=[ChatMessage(role="user", content="handed over")], summary=None)
    memory = DbMemory(conversation.pk, max_tokens=10_000, loaded=handed)

    assert [m.text() for m in await memory.get_messages()] == ["handed over"]
    assert [m.text() for m in await memory.get_messages()] == ["stored", "reply"]
