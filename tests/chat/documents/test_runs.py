"""Documents in a run: the fact on page 7 of an attached PDF reaches the model through
``read_document`` — with the offline model (ReAct and DAG) and with the real openai SDK
against the scripted server."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile

from chat import services
from chat.models import Message
from fimone.llm.providers.openai_client import OpenAIChatLLM
from tests.support import documents
from tests.support.runs import answer_text, events_until, of_type, send
from tests.support.scripted_server import text, tool_calls

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs"),
]


@pytest.fixture(autouse=True)
def outline_only(settings):
    """The PDF goes as its outline: the fact is only reachable through read_document."""
    settings.FIMONE_DOCUMENT_INLINE_TOKENS = 100


@sync_to_async
def upload(user, conversation, name="review.pdf", data=None) -> str:
    attachment = services.attachment_create(
        owner=user,
        conversation=conversation,
        uploaded_file=SimpleUploadedFile(name, data or documents.pdf_with_fact()),
    )
    return str(attachment.pk)


def tool_steps(events, kind="tool_call"):
    return [s for s in of_type(events, "step") if s["kind"] == kind]


async def test_the_offline_model_reads_the_fact_with_read_document(socket, user, conversation):
    file_id = await upload(user, conversation)
    await send(
        socket,
        type="message",
        content="What is the launch code of project Bluebird?",
        attachments=[file_id],
        mode="react",
    )
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    [call] = tool_steps(events)
    assert call["name"] == "read_document"
    [result] = tool_steps(events, "tool_result")
    assert documents.FACT_VALUE in result["result"] and "--- page 7 ---" in result["result"]
    answer = answer_text(events)
    assert documents.FACT_VALUE in answer and "page 7" in answer


async def test_a_dag_run_sees_the_document_the_same_way(socket, user, conversation):
    file_id = await upload(user, conversation)
    await send(
        socket,
        type="message",
        content="What is the launch code of project Bluebird?",
        attachments=[file_id],
        mode="dag",
    )
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    stored = await Message.objects.filter(role="assistant").alatest("id")
    dag = json.dumps(stored.metadata.get("dag"))
    assert "read_document" in dag and documents.FACT_VALUE in dag


async def test_without_a_document_read_document_is_not_offered(
    socket, conversation, run_deps, scripted_server
):
    run_deps.use(
        get_llm=lambda role: OpenAIChatLLM(
            model="scripted", base_url=scripted_server.base_url, api_key="k", max_retries=0
        )
    )
    scripted_server.enqueue(text("Hello."))
    await send(socket, type="message", content="hi", mode="react")
    await events_until(socket, "done", "error")
    names = [t["function"]["name"] for t in scripted_server.requests[0]["tools"]]
    assert "read_document" not in names


async def test_the_provider_gets_the_outline_then_the_page_it_asked_for(
    socket, user, conversation, run_deps, scripted_server
):
    run_deps.use(
        get_llm=lambda role: OpenAIChatLLM(
            model="scripted", base_url=scripted_server.base_url, api_key="k", max_retries=0
        )
    )
    file_id = await upload(user, conversation)
    scripted_server.enqueue(
        tool_calls(("read_document", {"file": "review.pdf", "pages": "7"})),
        text("The code is ZEBRA-7741."),
    )
    await send(socket, type="message", content="What is the code?", attachments=[file_id])
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    first, second = scripted_server.requests
    assert "read_document" in [t["function"]["name"] for t in first["tools"]]
    query = first["messages"][-1]["content"]
    assert "[document: review.pdf — PDF, 12 pages" in query
    assert documents.FACT_VALUE not in query
    [tool] = [m for m in second["messages"] if m["role"] == "tool"]
    assert tool["content"].startswith("review.pdf, pages 7 of 12:")
    assert documents.FACT in tool["content"]


async def test_a_300_page_pdf_is_read_a_few_pages_at_a_time(
    socket, user, conversation, run_deps, scripted_server
):
    run_deps.use(
        get_llm=lambda role: OpenAIChatLLM(
            model="scripted", base_url=scripted_server.base_url, api_key="k", max_retries=0
        )
    )
    file_id = await upload(user, conversation, "long.pdf", documents.long_pdf(pages=300))
    scripted_server.enqueue(
        tool_calls(("read_document", {"file": "long.pdf", "pages": "1-300"})), text("Long.")
    )
    await send(socket, type="message", content="Read it all", attachments=[file_id])
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    [tool] = [m for m in scripted_server.requests[1]["messages"] if m["role"] == "tool"]
    assert tool["content"].count("--- page ") < 20
    assert "more page(s) asked for were not shown" in tool["content"]
