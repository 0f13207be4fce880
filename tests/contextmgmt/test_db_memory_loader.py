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


async def test_rd1_a_load_returns_a_frozen_result_and_the_flags_read_the_last_one():
    """RD.1: what a load did is its return value; the §2 flags derive from the last one."""
    long = [ChatMessage(role="user", content=f"message {i} " + "words " * 200) for i in range(8)]

    def loader(conversation_id, *, vision, summary, use_summaries):
        return LoadedHistory(messages=list(long), summary=None)

    memory = DbMemory("conv-1", 1_000, loader=loader)
    assert (memory.was_compacted, memory.original_count, memory.compacted_count) == (False, 0, 0)
    fitted = await memory.load()
    assert fitted.strategy == "truncate" and fitted.was_compacted
    with pytest.raises(AttributeError):
        fitted.strategy = "none"  # type: ignore[misc]
    assert memory.was_compacted and memory.original_count == fitted.original_count == 8
    assert memory.compacted_count == fitted.compacted_count == len(fitted.messages) < 8
    for name in ("strategy", "result", "new_summary", "pins_yielded", "masked"):
        assert not hasattr(memory, name), name

    memory.max_tokens = 1_000_000
    assert await memory.get_messages() == long
    assert (memory.was_compacted, memory.original_count, memory.compacted_count) == (False, 8, 8)
