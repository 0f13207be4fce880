"""A project's files in its conversations' runs, on the wire (RJ.3): the real openai SDK
against the scripted OpenAI-compatible server, a 12K window. A small file is inline in
every model call, a large one is an outline whose page ``read_document`` reads by file
name, ``recall`` finds a fact deep in it, a file added later is there from the next
message, and a removed one is said to be removed."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from chat.models import Conversation, SearchDocument
from chat.projects import services as project_services
from contextmgmt.core.tokens import estimate_tokens
from fimone.llm.providers.openai_client import OpenAIChatLLM
from tests.chat.recall.test_project_files import FACT, long_text_with_fact
from tests.support.factories import add_project_file, make_project
from tests.support.runs import answer_text, events_until, send, use_small_budget
from tests.support.scripted_server import text, tool_calls

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs"),
]

NOTE = "The depot opens at 7:15 on weekdays."


@pytest.fixture
def scripted_main(run_deps, scripted_server):
    """Every model is the scripted server's, within a 12K window (8K of input)."""
    run_deps.use(
        get_llm=lambda role: OpenAIChatLLM(
            model="scripted", base_url=scripted_server.base_url, api_key="k", max_retries=0
        )
    )
    use_small_budget(run_deps, usable=8_000)
    return scripted_server


@sync_to_async
def project_of(conversation, files: dict[str, bytes]):
    """``conversation`` moved into a new project of its owner holding ``files``."""
    project = make_project(conversation.owner, name="Depots")
    for name, data in files.items():
        add_project_file(project, name, data, "text/plain")
    Conversation.objects.filter(pk=conversation.pk).update(project=project)
    return project


@sync_to_async
def add_file(project, name: str, data: bytes):
    return add_project_file(project, name, data, "text/plain")


@sync_to_async
def fact_page(project) -> int:
    [label] = [d.label for d in SearchDocument.objects.filter(project=project) if FACT in d.body]
    return int(label.rsplit("page ", 1)[1])


def system_text(request: dict) -> str:
    return "\n".join(
        m["content"] for m in request["messages"] if m["role"] == "system" and m["content"]
    )


def tool_text(request: dict) -> str:
    [tool] = [m for m in request["messages"] if m["role"] == "tool"]
    return tool["content"]


async def ask(socket, content: str) -> list[dict]:
    await send(socket, type="message", content=content, mode="react")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    return events


async def test_rj3_a_small_file_is_inline_in_every_call(socket, conversation, scripted_main):
    await project_of(conversation, {"note.txt": NOTE.encode()})
    scripted_main.enqueue(tool_calls(("recall", {"query": "anything"})), text("It opens at 7:15."))
    await ask(socket, "When does the depot open?")
    first, second = scripted_main.requests
    for request in (first, second):
        assert NOTE in system_text(request)
        assert "[document: note.txt — " in system_text(request)
    assert NOTE not in first["messages"][-1]["content"]  # not part of the question


async def test_rj3_every_dag_call_has_the_small_file(socket, conversation, scripted_main):
    await project_of(conversation, {"note.txt": NOTE.encode()})
    plan = {"steps": [{"id": "s1", "task": "Find the opening time."}]}
    scripted_main.enqueue(
        text(json.dumps(plan)),
        text("7:15."),
        text(json.dumps({"achieved": True, "confidence": 0.9, "reason": "found"})),
        text("It opens at 7:15."),
    )
    await send(socket, type="message", content="When does the depot open?", mode="dag")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    assert len(scripted_main.requests) == 4
    assert all(NOTE in system_text(r) for r in scripted_main.requests)


async def test_rj3_a_large_file_is_an_outline_and_read_document_reads_its_page(
    socket, conversation, scripted_main
):
    project = await project_of(conversation, {"handbook.txt": long_text_with_fact()})
    page = await fact_page(project)
    scripted_main.enqueue(
        tool_calls(("read_document", {"file": "handbook.txt", "pages": str(page)})),
        text(f"Behind the blue fuse box (handbook.txt, page {page})."),
    )
    await ask(socket, "Where is the spare key of the Oslo depot?")
    first, second = scripted_main.requests
    assert "read_document" in [t["function"]["name"] for t in first["tools"]]
    system = system_text(first)
    assert "[document: handbook.txt — " in system and "read_document" in system
    assert FACT not in system
    assert tool_text(second).startswith(f"handbook.txt, pages {page} of ")
    assert FACT in tool_text(second)


async def test_rj3_recall_finds_the_fact_in_the_projects_file(socket, conversation, scripted_main):
    project = await project_of(conversation, {"handbook.txt": long_text_with_fact()})
    page = await fact_page(project)
    scripted_main.enqueue(
        tool_calls(("recall", {"query": "spare key Oslo depot"})), text("Found it.")
    )
    await ask(socket, "Where is the spare key of the Oslo depot?")
    found = tool_text(scripted_main.requests[1])
    assert f"project file handbook.txt, page {page}: " in found
    assert FACT in found


async def test_rj3_a_file_added_later_is_there_from_the_next_message(
    socket, conversation, scripted_main
):
    project = await project_of(conversation, {})
    scripted_main.enqueue(text("No idea."), text("At 7:15."))
    await ask(socket, "When does the depot open?")
    assert NOTE not in system_text(scripted_main.requests[0])
    await add_file(project, "note.txt", NOTE.encode())
    await ask(socket, "And now?")
    assert NOTE in system_text(scripted_main.requests[1])


async def test_rj3_a_removed_file_is_said_to_be_removed(socket, conversation, scripted_main):
    project = await project_of(
        conversation, {"note.txt": NOTE.encode(), "handbook.txt": long_text_with_fact()}
    )
    handbook = await project.files.aget(original_name="handbook.txt")
    await sync_to_async(project_services.project_file_delete)(attachment=handbook)
    scripted_main.enqueue(
        tool_calls(("read_document", {"file": "handbook.txt", "pages": "1"})),
        text("It was removed."),
    )
    await ask(socket, "What does the handbook say?")
    first, second = scripted_main.requests
    assert "handbook.txt" not in system_text(first)
    assert "the file 'handbook.txt' was removed from the project" in tool_text(second)


async def test_rj3_the_gauge_counts_the_files_in_the_instructions_tier(
    user, conversation, settings
):
    """The files the next run pins are counted as instructions; the tiers still add up,
    and read_document's definition joins the tool tier."""
    settings.LLM_CONTEXT_SIZE = 12_288
    settings.LLM_MAX_OUTPUT_TOKENS = 2_048
    client = Client()
    await sync_to_async(client.force_login)(user)
    url = f"/api/conversations/{conversation.id}/context/"
    project = await project_of(conversation, {})
    before = (await sync_to_async(client.get)(url)).json()
    assert before["tiers"]["instructions"] == 0
    await add_file(project, "note.txt", NOTE.encode())
    after = (await sync_to_async(client.get)(url)).json()
    assert after["tiers"]["instructions"] > estimate_tokens(NOTE)
    assert after["tiers"]["tools"] > before["tiers"]["tools"]  # read_document is offered
    assert after["used_tokens"] == sum(after["tiers"].values())


async def test_rj5_the_offline_model_reads_a_projects_file(socket, conversation):
    """No model configured: the built-in one reads the project's file the question is
    about, though the conversation never had it attached, and cites its page."""
    project = await project_of(
        conversation, {"note.txt": NOTE.encode(), "handbook.txt": long_text_with_fact()}
    )
    page = await fact_page(project)
    events = await ask(socket, "Where is the spare key of the Oslo depot?")
    calls = [s for s in events if s["type"] == "step" and s["kind"] == "tool_call"]
    assert "read_document" in [c["name"] for c in calls]
    answer = answer_text(events)
    assert "blue fuse box" in answer and f"page {page}" in answer, answer
