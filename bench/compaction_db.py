"""CPU cost of a first compaction in the real run path: the chat's loader, DbMemory, the
LLM compaction, with the facts stored with the messages and without.

    .venv/bin/python bench/compaction_db.py [--messages 500] [--calls 7] [--mix en-zh]

The user and assistant messages of bench/_mixed.py's conversation (its tool rounds left
out: the chat keeps them as tool results) are stored through ``chat.services`` in a fresh
SQLite database, as a chat stores them: each finds its facts when it is stored (their
``facts`` column). Then ``DbMemory.load()`` with an instant terse summariser (as in
bench/compaction.py) and an 8,000-token budget is measured in CPU milliseconds
(``time.process_time``, every thread): the database read, the JSON of the facts, the
token count, the compaction and its fact check, with the fact check's caches emptied
before each load (a conversation compacted for the first time in this process). "stored":
as stored (the facts and the class counts of each text, ``token_counts``: the load counts
no stored text); "not stored": the same rows with their ``facts`` and ``token_counts``
emptied, as rows written before the columns. Printed: median and min of each, and the
storing cost per message.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _django import setup_django  # noqa: E402 — beside this script
from _mixed import MIXES, mixed_conversation  # noqa: E402

BUDGET = 8_000


def build(count: int, mix: str):
    """The conversation stored through the chat's services; returns it and the CPU
    milliseconds per message spent finding facts while storing."""
    from django.contrib.auth import get_user_model

    from chat import services
    from chat.models import Conversation
    from contextmgmt.core.factstore import stored_facts

    owner = get_user_model().objects.create_user("bench", password="bench-pw-123!")
    conversation = Conversation.objects.create(owner=owner, title="bench")
    texts = [
        (m.role, m.text())
        for m in mixed_conversation(count, languages=mix)
        if m.role in ("user", "assistant") and not m.tool_calls and m.text()
    ]
    facts_ms = 0.0
    for turn, (role, text) in enumerate(texts):
        if role == "user":
            services.user_message_create(conversation=conversation, content=text)
        else:
            answer = services.assistant_message_start(
                conversation=conversation, run_id=f"r{turn}", mode="react"
            )
            services.assistant_message_finish(message=answer, content=text, status="done")
        started = time.process_time()
        stored_facts(text)  # what the service spent on it, measured apart
        facts_ms += (time.process_time() - started) * 1000
    services.user_message_create(conversation=conversation, content="current question")
    return conversation, len(texts), facts_ms / len(texts)


class InstantTerse:
    model_name = "instant-terse"

    async def chat(self, messages, *, tools=None, **opts):
        from contextmgmt.core.llm import LLMResult, Usage
        from contextmgmt.core.messages import ChatMessage

        await asyncio.sleep(0)
        text = "The user discussed orders, configuration and logs with the assistant."
        return LLMResult(ChatMessage(role="assistant", content=text), Usage())


def measure(conversation_id, calls: int) -> list[float]:
    from asgiref.sync import async_to_sync

    from contextmgmt.core import corrections, factscan
    from contextmgmt.db_memory import DbMemory

    cpu_ms = []
    load = None
    for _ in range(calls):
        factscan.clear_cache()
        corrections.clear_cache()
        memory = DbMemory(conversation_id, BUDGET, compact_llm=InstantTerse())
        started = time.process_time()
        load = async_to_sync(memory.load)()
        cpu_ms.append((time.process_time() - started) * 1000)
    assert load is not None and load.strategy == "llm", load
    return cpu_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=500)
    parser.add_argument("--calls", type=int, default=7)
    parser.add_argument("--mix", choices=MIXES, default="en-zh")
    args = parser.parse_args()
    setup_django("fimone-bench-compaction-db-")
    from chat.models import Message

    conversation, stored_count, per_message = build(args.messages, args.mix)
    measure(conversation.pk, 1)  # the tables compiled, the connection's reads prepared
    stored = measure(conversation.pk, args.calls)
    Message.objects.filter(conversation=conversation).update(facts={}, token_counts=b"")
    plain = measure(conversation.pk, args.calls)
    print(
        f"{args.mix}: {stored_count} messages stored; facts found at storage "
        f"{per_message:.3f} ms CPU per message; load with a first compaction, CPU ms "
        f"median / min: stored {statistics.median(stored):.1f} / {min(stored):.1f}, "
        f"not stored {statistics.median(plain):.1f} / {min(plain):.1f}"
    )


if __name__ == "__main__":
    main()
