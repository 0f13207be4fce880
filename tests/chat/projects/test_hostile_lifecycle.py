"""A project changed under a running answer (RJ.1, RJ.3, RJ.4), through the real run path:
the real openai SDK against the scripted server, the model held inside its first call
while the project, its file or the conversation's place in it changes. The run ends
cleanly with its answer kept, or stops with the conversation when that is deleted."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.urls import reverse

from chat import services
from chat.models import Conversation, Message, Project
from chat.projects import services as project_services
from chat.search.index import index_project_file
from tests.chat.projects.test_runs import NOTE, project_of, scripted_main, tool_text
from tests.support.factories import add_project_file, make_project
from tests.support.runs import events_until, send
from tests.support.scripted_replies import gated
from tests.support.scripted_server import text, tool_calls

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs"),
]

__all__ = ["scripted_main"]  # the fixture, used by name

WAIT = 30


async def held_inside_the_first_call(socket, scripted_main, question: str) -> threading.Event:
    """Send ``question``; the model's first reply (a read of note.txt) waits on the
    returned gate, and this returns once the model has been called."""
    gate, taken = threading.Event(), threading.Event()
    scripted_main.enqueue(
        gated(tool_calls(("read_document", {"file": "note.txt", "pages": "1"})), gate, taken=taken),
        text("Answered all the same."),
    )
    await send(socket, type="message", content=question, mode="react")
    assert await asyncio.to_thread(taken.wait, WAIT)
    return gate


async def last_answer(conversation) -> Message:
    return await Message.objects.filter(
        conversation_id=conversation.pk, role=Message.Role.ASSISTANT
    ).alast()


async def finished(socket) -> dict:
    events = await events_until(socket, "done", "error")
    return events[-1]


async def test_rj4_deleting_the_project_mid_run_ends_the_run_with_its_answer(
    socket, conversation, scripted_main
):
    project = await project_of(conversation, {"note.txt": NOTE.encode()})
    gate = await held_inside_the_first_call(socket, scripted_main, "When does it open?")
    await sync_to_async(project_services.project_delete)(project=project)
    gate.set()
    assert (await finished(socket))["type"] == "done"
    answer = await last_answer(conversation)
    assert answer.status == Message.Status.DONE and answer.content == "Answered all the same."
    read = tool_text(scripted_main.requests[1])
    assert "Traceback" not in read
    assert (await Conversation.objects.aget(pk=conversation.pk)).project_id is None


async def test_rj3_deleting_the_file_mid_run_says_it_was_removed(
    socket, conversation, scripted_main
):
    project = await project_of(conversation, {"note.txt": NOTE.encode()})
    gate = await held_inside_the_first_call(socket, scripted_main, "When does it open?")
    note = await project.files.aget()
    await sync_to_async(project_services.project_file_delete)(attachment=note)
    gate.set()
    assert (await finished(socket))["type"] == "done"
    assert "the file 'note.txt' was removed from the project" in tool_text(
        scripted_main.requests[1]
    )
    assert (await last_answer(conversation)).content == "Answered all the same."


async def test_rj1_moving_the_conversation_out_mid_run_ends_the_run_with_its_answer(
    socket, conversation, scripted_main
):
    await project_of(conversation, {"note.txt": NOTE.encode()})
    gate = await held_inside_the_first_call(socket, scripted_main, "When does it open?")
    fresh = await Conversation.objects.aget(pk=conversation.pk)
    await sync_to_async(services.conversation_update)(conversation=fresh, project_id=None)
    gate.set()
    assert (await finished(socket))["type"] == "done"
    assert (await last_answer(conversation)).content == "Answered all the same."


async def test_rj4_deleting_the_project_with_its_conversations_mid_run_is_a_204(
    socket, user, conversation, scripted_main
):
    project = await project_of(conversation, {"note.txt": NOTE.encode()})
    gate = await held_inside_the_first_call(socket, scripted_main, "When does it open?")
    client = Client()
    await sync_to_async(client.force_login)(user)
    url = reverse("chat:project", args=[project.pk]) + "?conversations=delete"
    response = await sync_to_async(client.delete)(url)
    gate.set()
    assert response.status_code == 204
    assert not await Project.objects.filter(pk=project.pk).aexists()
    assert not await Conversation.objects.filter(pk=conversation.pk).aexists()
    assert not await Message.objects.filter(conversation_id=conversation.pk).aexists()


async def test_rj3_a_run_never_reaches_another_users_project_file_by_name_or_id(
    socket, conversation, other_user, scripted_main
):
    """Alice's run, in a project of her own, asks for Bob's project file by its name and by
    its id, and recalls its words: nothing of it comes back."""
    secret = "The vault code is 9182."
    bobs = await sync_to_async(make_project)(other_user, name="Bob's vault")
    bobs_file = await sync_to_async(add_project_file)(
        bobs, "vault.txt", secret.encode(), "text/plain"
    )
    await sync_to_async(index_project_file)(attachment_id=bobs_file.pk)
    await project_of(conversation, {"note.txt": NOTE.encode()})
    scripted_main.enqueue(
        tool_calls(
            ("read_document", {"file": "vault.txt", "pages": "1"}),
            ("read_document", {"file": str(bobs_file.pk), "pages": "1"}),
            ("recall", {"query": "vault code"}),
        ),
        text("Nothing of Bob's."),
    )
    await send(socket, type="message", content="What is the vault code?", mode="react")
    assert (await finished(socket))["type"] == "done"
    second = scripted_main.requests[1]
    tools = [m["content"] for m in second["messages"] if m["role"] == "tool"]
    assert len(tools) == 3
    by_name, by_id, recalled = (content.replace(str(bobs_file.pk), "<id>") for content in tools)
    assert by_name.startswith("Error: no document named 'vault.txt'")
    assert by_id.startswith("Error: no document named '<id>'")
    for content in (by_name, by_id):
        listed = content.split("Documents: ", 1)[1]
        assert listed.startswith("note.txt (1 page") and "vault" not in listed
    assert "9182" not in recalled and "vault" not in recalled.replace("'vault code'", "")
    assert all("9182" not in str(m.get("content")) for m in second["messages"])


async def test_rj4_deleting_the_project_mid_dag_run_ends_it_with_its_answer(
    socket, conversation, scripted_main
):
    """In DAG mode the planner is held while the project goes: the steps, the check and the
    answer still run, with the instructions and files the run was prepared with."""
    project = await project_of(conversation, {"note.txt": NOTE.encode()})
    gate, taken = threading.Event(), threading.Event()
    plan = {"steps": [{"id": "s1", "task": "Find the opening time."}]}
    scripted_main.enqueue(
        gated(text(json.dumps(plan)), gate, taken=taken),
        text("7:15."),
        text(json.dumps({"achieved": True, "confidence": 0.9, "reason": "found"})),
        text("It opens at 7:15."),
    )
    await send(socket, type="message", content="When does the depot open?", mode="dag")
    assert await asyncio.to_thread(taken.wait, WAIT)
    await sync_to_async(project_services.project_delete)(project=project)
    gate.set()
    assert (await finished(socket))["type"] == "done"
    assert (await last_answer(conversation)).content == "It opens at 7:15."
    assert len(scripted_main.requests) == 4
