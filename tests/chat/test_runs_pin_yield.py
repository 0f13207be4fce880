"""A pin that has to yield to the cap on pinned history is summarised, never dropped.

The case a new user met: a model of 5,000 usable tokens, a pasted 5,500-character text
(Chinese, so it alone nearly fills the history's room) pinned, then two more messages. The
third request must carry a summary holding the paste's facts, and the divider's facts must
say the pin was summarised (strategy ``llm``), not left out.
"""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from chat import services
from chat.models import Message
from contextmgmt.core.prompts import hint_of
from tests.support.runs import connect, events_until, of_type, send, use_small_budget

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs"),
]

# Facts the paste states once each; a summariser that saw the paste can repeat them.
FACTS = ("DE89370400440532013000", "4,217.50 EUR", "ticket OPS-7731", "2026-03-14")


def paste_text() -> str:
    """5,500 characters of a Chinese report (about 4,400 tokens) stating the facts once."""
    lines = [
        f"供应商账户 IBAN {FACTS[0]}，未结金额 {FACTS[1]}。",
        f"迁移工作记录在 {FACTS[2]}，截止日期 {FACTS[3]}。",
    ]
    i = 0
    while sum(len(line) + 1 for line in lines) < 5_500:
        lines.append(f"第{i}行：仓库报告列出了货架、木箱和托盘，夜班清点两次并与送货单核对。")
        i += 1
    return "\n".join(lines)[:5_500]


def faithful_summariser(messages) -> str:
    """A summariser that keeps the facts of what it was shown, and an ordinary answer
    for any other call."""
    if hint_of(messages[0].text()) is None:
        return "Noted."
    shown = messages[-1].text()
    kept = [fact for fact in FACTS if fact in shown]
    return "The user pasted a warehouse report. " + "; ".join(kept)


async def test_a_pin_that_yields_reaches_the_summariser_and_the_third_request(
    user, conversation, ws_fake_llm, run_deps
):
    use_small_budget(run_deps, usable=5_000)
    ws_fake_llm.default = faithful_summariser
    paste = paste_text()
    assert len(paste) == 5_500
    socket = await connect(user, conversation.id)
    try:
        await send(socket, type="message", content=paste)
        first = await events_until(socket, "done", "error")
        assert first[-1]["type"] == "done", first[-1]
        pasted = await Message.objects.aget(conversation=conversation, content=paste)
        await sync_to_async(services.message_pin_set)(message=pasted, pinned=True)

        await send(socket, type="message", content="What is the supplier's name?")
        second = await events_until(socket, "done", "error")
        assert second[-1]["type"] == "done", second[-1]

        calls_before_third = len(ws_fake_llm.calls)
        await send(socket, type="message", content="And when is the deadline?")
        third = await events_until(socket, "done", "error")
        assert third[-1]["type"] == "done", third[-1]
    finally:
        await socket.disconnect()

    (history,) = [e for e in of_type(third, "compact") if e["scope"] == "history"]
    assert history["pins_yielded"] == [pasted.pk]
    assert history["strategy"] == "llm"  # summarised because it had to yield, not left out
    # The paste reached a summariser whole ...
    summariser = [c for c in ws_fake_llm.calls if hint_of(c.messages[0].text())]
    shown = "\n".join(c.messages[-1].text() for c in summariser)
    assert all(fact in shown for fact in FACTS)
    # ... and the request of the third message carries the summary with its facts.
    request = next(
        c for c in ws_fake_llm.calls[calls_before_third:] if not hint_of(c.messages[0].text())
    )
    sent = [m for m in request.messages if m.is_summary]
    assert len(sent) == 1
    assert all(fact in sent[0].text() for fact in FACTS)
    assert paste not in [m.text() for m in request.messages]
    # The summary stored for the divider covers the pin, so it shows among the covered.
    answer = await Message.objects.aget(pk=third[-1]["message_id"])
    summary_id = answer.metadata["compaction"]["summary_id"]
    covered = await sync_to_async(_covered_ids)(conversation, summary_id)
    assert pasted.pk in covered


def _covered_ids(conversation, summary_id) -> list[int]:
    from chat.models import ContextSummary

    summary = ContextSummary.objects.get(pk=summary_id, conversation=conversation)
    through = summary.covers_through
    rows = Message.objects.filter(conversation=conversation, created_at__lte=through.created_at)
    return [m.pk for m in rows if m.pk not in (summary.uncovered_ids or [])]
