"""The ``recall`` tool's search over the persisted conversation (chat/recall/lookup.py, RF.4)."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from chat.recall.lookup import recall_passages, recall_search_for, recall_terms
from chat.search.text import Term
from contextmgmt.core.llm import LLMUnavailable
from contextmgmt.core.messages import ChatMessage, ToolCall
from fimone.agent.context import AgentOutcome
from fimone.agent.tools.builtins import recall_tool
from fimone.llm.offline.model import OfflineLLM
from tests.support.factories import said
from tests.support.garbage import cycle_collector_off, cyclic_garbage
from tests.support.runs import (
    events_until,
    install_scripted_engine,
    of_type,
    send,
)

pytestmark = pytest.mark.django_db


def test_recall_terms_drop_look_back_words_and_keep_numbers():
    assert recall_terms("What did I say about the Budget for 2025?") == [
        Term(("budget",)),
        Term(("2025",)),
    ]


def test_recall_terms_keep_a_chinese_run_as_one_phrase():
    assert recall_terms("之前的预算 ok") == [Term(tuple("之前的预算")), Term(("ok",))]


def test_a_query_of_look_back_words_only_still_searches():
    assert recall_terms("what did you say") == [Term((w,)) for w in "what did you say".split()]


def test_passages_are_verbatim_and_best_match_first(conversation):
    said(conversation, "We agreed the budget is 48,500 EUR for the Lisbon office.")
    said(conversation, "The budget meeting is on Friday.", role="assistant")
    said(conversation, "Unrelated: the cat is asleep.")
    passages = recall_passages(conversation_id=conversation.id, query="Lisbon budget")
    assert len(passages) == 2
    assert "We agreed the budget is 48,500 EUR for the Lisbon office." in passages[0]
    assert passages[0].startswith("the user's message (") and "1st in this chat" in passages[0]
    assert "The budget meeting is on Friday." in passages[1]
    assert passages[1].startswith("your answer (")


def test_other_conversations_are_never_searched(conversation, foreign_conversation):
    said(foreign_conversation, "Mallory's password hint: budget")
    said(conversation, "nothing to see")
    assert recall_passages(conversation_id=conversation.id, query="budget") == []


def test_before_id_excludes_the_current_query(conversation):
    early = said(conversation, "The server is called tern-7.")
    current = said(conversation, "What is the server called?")
    passages = recall_passages(
        conversation_id=conversation.id, query="server", before_id=current.id
    )
    assert passages == [passages[0]] and "tern-7" in passages[0]
    assert early.id < current.id


def test_long_message_gives_a_passage_around_the_match(conversation):
    text = "filler " * 400 + "the secret number is 9173 " + "padding " * 400
    said(conversation, text)
    (passage,) = recall_passages(conversation_id=conversation.id, query="secret number")
    body = passage.split(": ", 1)[1]
    assert "the secret number is 9173" in body
    assert body.startswith("…") and body.endswith("…")
    assert len(body) <= 600 + 2
    assert body.strip("…").strip() in text


def test_non_ascii_case_is_matched(conversation):
    said(conversation, "Die Übergabe ist am Montag.")
    (passage,) = recall_passages(conversation_id=conversation.id, query="übergabe")
    assert "Die Übergabe ist am Montag." in passage


def test_chinese_is_found_by_its_pairs(conversation):
    said(conversation, "我们的预算是三万元。")
    (passage,) = recall_passages(conversation_id=conversation.id, query="预算")
    assert "我们的预算是三万元。" in passage


def test_limit_counts_full_passages_worth_of_characters(conversation):
    long_tail = " and more words after it" * 40  # each passage is cut at PASSAGE_CHARS
    for i in range(5):
        said(conversation, f"note {i} about apples{long_tail}")
    assert len(recall_passages(conversation_id=conversation.id, query="apples", limit=3)) == 3
    assert recall_passages(conversation_id=conversation.id, query="   ") == []


def test_short_passages_leave_room_for_more_up_to_three_per_limit(conversation):
    for i in range(12):
        said(conversation, f"note {i} about apples")
    passages = recall_passages(conversation_id=conversation.id, query="apples", limit=3)
    assert len(passages) == 9


def test_a_text_said_many_times_is_quoted_once_with_its_count(conversation):
    for _ in range(4):
        said(conversation, "What about the dashboard layout?")
    passages = recall_passages(conversation_id=conversation.id, query="dashboard")
    assert len(passages) == 1
    assert "[said 4 times]" in passages[0]


def test_a_detail_stated_once_is_found_among_many_short_mentions_of_its_key_word(conversation):
    """RF.4: the one longer message holding the detail is not pushed out by repeats."""
    asks = [
        "What are the risks with the dashboard?",
        "Can you summarise the dashboard?",
        "Is there anything we forgot regarding the dashboard?",
        "How would you explain the dashboard to a new team member?",
        "Could you draft three bullet points about the dashboard?",
        "Who owns the dashboard now?",
    ]
    said(conversation, "The latency dashboard lives at https://grafana.example.com/d/x7?orgId=2.")
    for _ in range(3):
        for ask in asks:
            said(conversation, ask)
    passages = recall_passages(conversation_id=conversation.id, query="dashboard")
    assert any("https://grafana.example.com/d/x7?orgId=2" in p for p in passages)


@pytest.mark.django_db(transaction=True)
async def test_async_search_for_the_agent(conversation):
    await sync_to_async(said)(conversation, "The deploy key rotates on the 3rd.")
    search = recall_search_for(conversation.id)
    assert await search("deploy key", 5) == [
        (await sync_to_async(recall_passages)(conversation_id=conversation.id, query="deploy key"))[
            0
        ]
    ]


@pytest.mark.django_db(transaction=True)
async def test_the_offline_model_quotes_what_the_user_said_not_its_own_echo(conversation):
    """RF.10: recall names a hit "the user's message (…)" / "your answer (…)"; the
    offline model still reads those names, leaves out its own earlier echo of the user's
    words, and names the speaker and the date in the asker's language."""
    await sync_to_async(said)(conversation, "My locker code is 4711.")
    await sync_to_async(said)(conversation, "You asked: “My locker code is 4711.”.", "assistant")
    await sync_to_async(said)(conversation, "Please remember it")
    await sync_to_async(said)(conversation, "Noted.", "assistant")
    asked = "我之前说过储物柜 locker 的什么？"
    query = "我 说过储物柜 locker 的什么"  # what the offline model looks up for ``asked``
    result = await recall_tool(recall_search_for(conversation.id)).func(query=query)
    assert "your answer (" in result  # the echo is found: the model must leave it out
    call = ToolCall(id="c1", name="recall", arguments=json.dumps({"query": query}))
    turn = [
        ChatMessage(role="system", content="You are fimone."),
        ChatMessage(role="user", content=asked, pinned=True),
        ChatMessage(role="assistant", content=None, tool_calls=[call]),
        ChatMessage(role="tool", content=result, tool_call_id="c1", name="recall"),
    ]
    answer = (await OfflineLLM().chat(turn)).message.content
    assert "My locker code is 4711." in answer
    assert "You asked" not in answer
    assert "用户" in answer and "the user's message" not in answer
    assert "本对话第1条" in answer and "December" not in answer


# --- through real websocket runs: the index as the run path keeps it --------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("clean_runs")
async def test_recall_finds_a_tool_result_of_an_earlier_run(socket, ws_fake_llm):
    ws_fake_llm.enqueue(
        ws_fake_llm.tool_call("calculator", json.dumps({"expression": "1234*5678"})),
        "Done.",
    )
    await send(socket, type="message", content="Multiply those two order numbers", mode="react")
    assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"
    ws_fake_llm.enqueue(
        ws_fake_llm.tool_call("recall", json.dumps({"query": "7006652"})), "It was 7006652."
    )
    await send(socket, type="message", content="What was the product again?", mode="react")
    events = await events_until(socket, "done", "error")
    (result,) = [s for s in of_type(events, "step") if s["kind"] == "tool_result"]
    assert "[1] tool result of calculator (" in result["result"]
    assert "7006652" in result["result"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("clean_runs")
async def test_recall_leaves_out_an_answer_the_user_retried(
    socket, conversation, ws_fake_llm, run_deps
):
    engine = install_scripted_engine(run_deps)

    async def fails(ctx):
        await ctx.sink("answer.delta", {"text": "The lighthouse code is 11-aurora"})
        raise LLMUnavailable("connection refused")

    async def answers(ctx):
        await ctx.sink("answer.delta", {"text": "The lighthouse code is 42-borealis."})
        return AgentOutcome(answer="The lighthouse code is 42-borealis.")

    engine.use(fails)
    await send(socket, type="message", content="Which lighthouse code?")
    failed = (await events_until(socket, "done", "error"))[-1]
    assert failed["type"] == "error"
    # Searchable while it is the newest answer the user sees…
    found = await sync_to_async(recall_passages)(conversation_id=conversation.id, query="aurora")
    assert len(found) == 1
    engine.use(answers)
    await send(socket, type="retry", message_id=failed["message_id"])
    assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"
    # …and gone once it is superseded; the new answer is there instead.
    search = recall_search_for(conversation.id)
    assert await search("aurora", 5) == []
    # The answer states the code and is quoted with the question it answered.
    (passage,) = await search("lighthouse code", 5)
    assert passage.startswith("in reply to the user's message (")
    assert "Which lighthouse code?\nyour answer (" in passage and "42-borealis" in passage


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("clean_runs")
async def test_an_edited_question_and_its_answer_are_found_only_in_their_new_form(
    socket, conversation, ws_fake_llm, run_deps
):
    engine = install_scripted_engine(run_deps)

    def answering(text):
        async def script(ctx):
            await ctx.sink("answer.delta", {"text": text})
            return AgentOutcome(answer=text)

        return script

    engine.use(answering("Booked the Porto ferry."))
    await send(socket, type="message", content="Book the Porto ferry")
    first = await events_until(socket, "done", "error")
    assert first[-1]["type"] == "done"
    engine.use(answering("Booked the Faro ferry."))
    await send(
        socket, type="edit", message_id=first[0]["message_id"], content="Book the Faro ferry"
    )
    assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"

    search = recall_search_for(conversation.id)
    assert await search("porto", 5) == []
    found = await search("faro ferry", 5)
    assert sorted(p.split(" (")[0] for p in found) == ["the user's message", "your answer"]


def test_recalling_images_leaves_no_reference_cycle(conversation):
    """Reading the newest turns' image ids by their JSON key must not leave Django's
    field-lookup error (and the frames it holds) for the cycle collector."""
    question = said(conversation, "What was in the picture?")
    with cycle_collector_off():
        recall_passages(
            conversation_id=conversation.id, query="picture", before_id=question.pk, vision=True
        )
        garbage = cyclic_garbage()
    assert "FieldError" not in garbage, garbage
