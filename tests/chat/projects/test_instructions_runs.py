"""Instructions are pinned on the wire (RJ.2): a project's conversation with instructions of
its own, at a 12K window, through the real run path and the real openai SDK against the
scripted server. Every model call carries the project's instructions, then the
conversation's, whole — before and after compaction, in ReAct and in every DAG call —
while no summariser call carries them; the gauge counts them as their own tier; and
instructions too large for the window fail the run with a clear error, the message kept."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from chat import services
from chat.instructions import pinned_instructions
from chat.models import Message
from contextmgmt.budget import resolve_budget
from contextmgmt.core.instructions import INSTRUCTIONS_PREFIX, instructions_tokens
from contextmgmt.core.messages import ChatMessage
from contextmgmt.core.prompts import COMPACTOR_INTRO, INSTRUCTIONS_KEPT, hint_of
from contextmgmt.core.tokens import estimate_message_tokens, estimate_messages_tokens
from fimone.agent.tools.finder import definition_tokens
from fimone.llm.offline.phrases import PHRASES
from fimone.llm.providers.openai_client import OpenAIChatLLM
from tests.chat.test_context_gauge_runs import summary_or_long_answer
from tests.support.factories import make_project
from tests.support.log_tool import with_log_tool
from tests.support.runs import connect, events_until, of_type, send
from tests.support.scripted_server import text, tool_call, tool_calls

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs"),
]

PROJECT_RULES = "Project rule: answer in German and quote ticket numbers as TK-<n>."
CONVERSATION_RULES = "Conversation rule: end every answer with '— Your assistant'."


@pytest.fixture
def window_of_12k(settings) -> int:
    """A 12K window for every role, the runs' and the gauge's: its usable input budget."""
    settings.LLM_CONTEXT_SIZE = 12_288
    settings.LLM_MAX_OUTPUT_TOKENS = 2_048
    return resolve_budget("main").usable_input_tokens


@pytest.fixture
def scripted_models(run_deps, scripted_server, window_of_12k):
    """Every role (main, fast, the summariser) is the scripted server, through the SDK."""
    run_deps.use(
        get_llm=lambda role: OpenAIChatLLM(
            model=f"scripted-{role}",
            base_url=scripted_server.base_url,
            api_key="k",
            max_retries=0,
        )
    )
    return scripted_server


@pytest.fixture
def conversation_in_a_project(user, conversation):
    project = make_project(user, name="Support desk", instructions=PROJECT_RULES)
    return services.conversation_update(
        conversation=conversation, project_id=project.pk, instructions=CONVERSATION_RULES
    )


def system_text(request: dict) -> str:
    return "\n".join(
        str(m.get("content") or "") for m in request["messages"] if m["role"] == "system"
    )


def is_summariser(request: dict) -> bool:
    return system_text(request).startswith(COMPACTOR_INTRO)


def carries_both_in_order(request: dict) -> bool:
    """Both sets of instructions, whole, in one system message: the project's first."""
    for message in request["messages"]:
        content = str(message.get("content") or "")
        if message["role"] == "system" and content.startswith(INSTRUCTIONS_PREFIX):
            project, own = content.find(PROJECT_RULES), content.find(CONVERSATION_RULES)
            return 0 <= project < own
    return False


def wire_text(request: dict) -> str:
    return json.dumps(request["messages"], ensure_ascii=False)


async def test_every_call_carries_both_instructions_before_and_after_compaction_rj_2(
    socket, conversation_in_a_project, scripted_models, run_deps
):
    """Long turns at 12K: the first run reads logs (its old results masked by the guard),
    later runs load a history that no longer fits (summarised at load time). Every
    answer call, before and after each compaction, carries both instructions verbatim;
    no summariser call does, and each is told they are kept elsewhere."""
    with_log_tool(run_deps)
    scripted_models.enqueue(
        *[tool_calls(tool_call("read_log", {"n": n}, f"log{n}")) for n in range(5)],
        text("Alle Protokolle gelesen. — Your assistant"),
    )
    await send(socket, type="message", content="Read the import logs 0 to 4.", mode="react")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    compactions = of_type(events, "compact")
    for i in range(4):
        question = f"Question {i} about ticket {i}: " + "why does the printer jam so often " * 200
        await send(socket, type="message", content=question, mode="react")
        events = await events_until(socket, "done", "error")
        assert events[-1]["type"] == "done", events[-1]
        compactions += of_type(events, "compact")

    assert {c["strategy"] for c in compactions} >= {"mask", "llm"}, compactions
    requests = scripted_models.requests
    summaries = [r for r in requests if is_summariser(r)]
    answers = [r for r in requests if not is_summariser(r)]
    assert summaries and len(answers) >= 10
    assert all(carries_both_in_order(r) for r in answers)
    for request in summaries:
        sent = wire_text(request)
        assert PROJECT_RULES not in sent and CONVERSATION_RULES not in sent
        assert INSTRUCTIONS_KEPT in system_text(request)
    # Calls after the first summary (the last run's, which starts from it) carry them too.
    last = requests.index(summaries[-1])
    assert any(carries_both_in_order(r) for r in requests[last + 1 :])


async def test_every_dag_call_carries_both_instructions_rj_2(
    socket, conversation_in_a_project, scripted_models
):
    """Planner, both steps (the fast model, on their own budget), checker and answer."""
    plan = {
        "steps": [
            {"id": "s1", "task": "Find the printer's model."},
            {"id": "s2", "task": "Find the jam's cause.", "depends_on": ["s1"]},
        ]
    }
    scripted_models.enqueue(
        text(json.dumps(plan)),
        text("Model LX-300."),
        text("Worn rollers."),
        text(json.dumps({"achieved": True, "confidence": 0.9, "reason": "both found"})),
        text("LX-300 mit abgenutzten Rollen. — Your assistant"),
    )
    await send(socket, type="message", content="Why does the printer jam?", mode="dag")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    assert [e["status"] for e in of_type(events, "dag.step") if e["status"] == "done"] == [
        "done",
        "done",
    ]
    requests = scripted_models.requests
    assert [r["model"] for r in requests] == [
        "scripted-main",
        "scripted-fast",
        "scripted-fast",
        "scripted-main",
        "scripted-main",
    ]
    assert all(carries_both_in_order(r) for r in requests)


async def test_the_gauge_shows_instructions_as_a_tier_and_its_tiers_add_up_rj_2(
    user, socket, conversation_in_a_project, scripted_models
):
    """The gauge, read before a run, counts the instructions apart from the system prompt;
    its tiers add up to what it says is sent; and the run's first call sends exactly that
    plus its question."""
    client = Client()
    await sync_to_async(client.force_login)(user)
    url = f"/api/conversations/{conversation_in_a_project.id}/context/"
    gauge = (await sync_to_async(client.get)(url)).json()
    tiers = gauge["tiers"]
    assert set(tiers) == {"system", "instructions", "tools", "history"}
    assert tiers["instructions"] > 0 and tiers["system"] > 0
    assert gauge["used_tokens"] == sum(tiers.values())

    # Without instructions the tier is empty and the rest is as it was.
    await sync_to_async(services.conversation_update)(
        conversation=conversation_in_a_project, project_id=None, instructions=""
    )
    bare = (await sync_to_async(client.get)(url)).json()
    assert bare["tiers"]["instructions"] == 0
    assert bare["tiers"]["system"] == tiers["system"]
    assert bare["used_tokens"] == sum(bare["tiers"].values()) < gauge["used_tokens"]


async def test_the_gauge_with_instructions_is_what_each_run_sends_before_its_question_rj_2(
    user, conversation_in_a_project, ws_fake_llm, window_of_12k
):
    """Long turns until the history is summarised: before each run the gauge's tiers add up
    to its figure, and the run's first call sends exactly that plus its question (or, when
    the gauge said the history would be fitted, no more), instructions included."""
    client = Client()
    await sync_to_async(client.force_login)(user)
    url = f"/api/conversations/{conversation_in_a_project.id}/context/"
    ws_fake_llm.default = summary_or_long_answer
    socket = await connect(user, conversation_in_a_project.id)
    empty = estimate_message_tokens(ChatMessage(role="user", content=""))
    fitted = 0
    try:
        for i in range(6):
            gauge = (await sync_to_async(client.get)(url)).json()
            assert gauge["used_tokens"] == sum(gauge["tiers"].values())
            assert gauge["tiers"]["instructions"] == instructions_tokens(
                pinned_instructions(project=PROJECT_RULES, conversation=CONVERSATION_RULES)
            )
            query = f"Question {i}: " + "why does the printer jam " * 150
            before = len(ws_fake_llm.calls)
            await send(socket, type="message", content=query)
            events = await events_until(socket, "done", "error")
            assert events[-1]["type"] == "done", events[-1]
            first = next(c for c in ws_fake_llm.calls[before:] if not hint_of(c.messages[0].text()))
            assert carries_both_in_order({"messages": [m.to_openai() for m in first.messages]})
            sent = estimate_messages_tokens(first.messages) + definition_tokens(first.tools)
            question = estimate_message_tokens(ChatMessage(role="user", content=query))
            expected = gauge["used_tokens"] + question - empty
            if gauge["will_compact"]:
                fitted += 1
                assert sent <= expected
            else:
                assert sent == expected
    finally:
        await socket.disconnect()
    assert fitted >= 2


async def test_instructions_that_leave_no_room_fail_the_run_with_a_clear_error_rj_2(
    user, socket, conversation, scripted_models, settings
):
    """A small window and instructions that fill it: the run fails before any model call,
    the error says why, and the question is kept."""
    settings.LLM_CONTEXT_SIZE = 8_192
    settings.LLM_MAX_OUTPUT_TOKENS = 2_048
    settings.FIMONE_INSTRUCTIONS_MAX_CHARS = 50_000
    rules = "Always mention the ticket number and the printer's floor. " * 300
    project = await sync_to_async(make_project)(user, name="Big rules", instructions=rules)
    await sync_to_async(services.conversation_update)(
        conversation=conversation, project_id=project.pk
    )
    await send(socket, type="message", content="Why does it jam?", mode="react")
    events = await events_until(socket, "done", "error")
    error = events[-1]
    assert error["type"] == "error" and error["code"] == "instructions_leave_no_room", error
    assert "instructions" in error["message"] and "Retry" in error["message"]
    assert scripted_models.requests == []
    question = await sync_to_async(
        Message.objects.filter(conversation=conversation, role="user").get
    )()
    assert question.content == "Why does it jam?"


async def test_the_offline_model_answers_in_the_projects_language_with_the_sign_off_rj_5(
    socket, conversation_in_a_project
):
    """No model configured: the built-in one reads the project's language and the
    conversation's sign-off, in a ReAct run and in a DAG run (the README's demo)."""
    for mode in ("react", "dag"):
        await send(socket, type="message", content="What is 17 * 23?", mode=mode)
        events = await events_until(socket, "done", "error")
        assert events[-1]["type"] == "done", events[-1]
        answer = await sync_to_async(Message.objects.get)(pk=events[-1]["message_id"])
        assert PHRASES["note"]["de"] in answer.content and "391" in answer.content
        assert answer.content.endswith("— Your assistant"), answer.content
        assert answer.content.count("— Your assistant") == 1, answer.content
