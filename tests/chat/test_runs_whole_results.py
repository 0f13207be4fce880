"""RT.2: a run's whole tool results are kept and indexed for ``recall`` — a value in the
middle of a long page or document read in an earlier run is found in a later one, through
the real run path (websocket, ``fetch_url`` against a local page server, ``read_document``
on an uploaded PDF)."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile

from chat import services
from chat.models import SearchDocument, ToolResult
from contextmgmt.core.messages import ChatMessage, ToolCall
from contextmgmt.core.prompts import hint_of
from tests.support import documents
from tests.support.runs import connect, events_until, of_type, send
from tests.support.web_server import long_fact, long_page, serve_pages

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs"),
]

PAGE_CHARS = 50_000


@pytest.fixture(scope="module")
def site():
    with serve_pages() as server:
        yield server


@pytest.fixture
def fetching_pages(settings):
    """``fetch_url`` may read the loopback page server, and a whole 50,000-character page."""
    settings.FIMONE_FETCH_ALLOWED_HOSTS = ["127.0.0.1"]
    settings.FIMONE_FETCH_MAX_CHARS = 60_000


def call(name: str, arguments: dict, call_id: str) -> ChatMessage:
    return ChatMessage(
        role="assistant",
        content=None,
        tool_calls=[ToolCall(call_id, name, json.dumps(arguments))],
    )


def tool_text(fake, call_id: str) -> str:
    """What the model was given as the result of ``call_id`` (the newest call with it)."""
    for c in reversed(fake.calls):
        for m in c.messages:
            if m.role == "tool" and m.tool_call_id == call_id:
                return m.text()
    raise AssertionError(f"no model call carried the result of {call_id}")


async def run(socket, fake, replies: list, content: str, **frame) -> list[dict]:
    fake.default = iter_replies(replies)
    await send(socket, type="message", content=content, **frame)
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    return events


def iter_replies(replies: list):
    """Main-model replies in order; a summariser's call gets a short summary."""
    pending = list(replies)

    def reply(messages):
        if hint_of(messages[0].text()):
            return "Earlier pages were read."
        return pending.pop(0)

    return reply


async def test_rt2_a_value_at_60_percent_of_a_fetched_page_is_recalled_in_a_later_run(
    user, conversation, ws_fake_llm, fetching_pages, site
):
    """The page is read whole by ``fetch_url`` in the first run (its record keeps a 2,000
    character preview); the second run's ``recall`` finds the value in the middle."""
    url = site.url(f"/long.txt?n=4&chars={PAGE_CHARS}&at=0.6")
    page = long_page(4, PAGE_CHARS, 0.6)
    assert 0.55 < page.index(long_fact(4)) / len(page) < 0.65
    socket = await connect(user, conversation.id)
    try:
        first = await run(
            socket,
            ws_fake_llm,
            [call("fetch_url", {"url": url}, "read-pier"), "I read the harbour page."],
            "Read the harbour notice page for me.",
        )
        [result_step] = [s for s in of_type(first, "step") if s["kind"] == "tool_result"]
        assert long_fact(4) not in result_step["result"]  # the event carries a preview
        assert long_fact(4) in tool_text(ws_fake_llm, "read-pier")  # the model read it whole

        ws_fake_llm.calls.clear()
        await run(
            socket,
            ws_fake_llm,
            [call("recall", {"query": "locker code pier 4"}, "look-back"), "QX-04-7459."],
            "What was the locker code of pier 4?",
        )
    finally:
        await socket.disconnect()

    found = tool_text(ws_fake_llm, "look-back")
    assert long_fact(4) in found, found
    stored = await ToolResult.objects.aget(conversation=conversation, call_id="read-pier")
    assert long_fact(4) in stored.content and stored.chars == len(stored.content)
    # The passage names the whole result's id, which recall and the API accept.
    assert f'whole result: recall id "{stored.result_id}"' in found
    # Indexed as passages of the whole result, each with the call and the question.
    passages = [
        d async for d in SearchDocument.objects.filter(tool_result=stored).order_by("offset")
    ]
    assert len(passages) > 30
    assert "".join(p.body for p in passages).replace("\n", "") == stored.content.replace("\n", "")
    assert all("harbour notice page for me fetch url" in p.terms for p in passages)
    # Its preview in the answer's steps is not indexed a second time.
    previews = SearchDocument.objects.filter(
        message_id=stored.message_id, kind="tool", tool_result__isnull=True
    )
    assert not await previews.aexists()


@sync_to_async
def upload(user, conversation, name: str, data: bytes) -> str:
    attachment = services.attachment_create(
        owner=user, conversation=conversation, uploaded_file=SimpleUploadedFile(name, data)
    )
    return str(attachment.pk)


def report_with_fact_at_page(pages: int, fact_page: int) -> bytes:
    body = " ".join(
        "The committee discussed routine matters, budgets and the parking rota." for _ in range(15)
    )
    texts = [f"Chapter {n}. {body}" for n in range(1, pages + 1)]
    texts[fact_page - 1] += f"\n\n{documents.FACT}"
    return documents.make_pdf(texts, title="Annual review")


async def test_rt2_a_value_at_60_percent_of_a_document_read_is_recalled_in_a_later_run(
    user, conversation, ws_fake_llm, settings
):
    """``read_document`` reads ten pages (about 11,000 characters); the fact is on page 6.
    A later run's ``recall`` quotes it from the stored whole result of that read."""
    settings.FIMONE_DOCUMENT_INLINE_TOKENS = 100  # the document goes as its outline
    settings.FIMONE_DOCUMENT_READ_CHARS = 60_000
    file_id = await upload(user, conversation, "review.pdf", report_with_fact_at_page(10, 6))
    socket = await connect(user, conversation.id)
    try:
        await run(
            socket,
            ws_fake_llm,
            [
                call("read_document", {"file": "review.pdf", "pages": "1-10"}, "read-review"),
                "I read the review.",
            ],
            "Read the annual review.",
            attachments=[file_id],
        )
        read = tool_text(ws_fake_llm, "read-review")
        assert 0.5 < read.index(documents.FACT) / len(read) < 0.7

        ws_fake_llm.calls.clear()
        await run(
            socket,
            ws_fake_llm,
            [call("recall", {"query": documents.FACT_WORDS}, "look-back"), "ZEBRA-7741."],
            "What was the launch code of project Bluebird?",
        )
    finally:
        await socket.disconnect()

    found = tool_text(ws_fake_llm, "look-back")
    stored = await ToolResult.objects.aget(conversation=conversation, call_id="read-review")
    quoted = [
        block
        for block in found.split("\n\n[")
        if f'recall id "{stored.result_id}"' in block and documents.FACT_VALUE in block
    ]
    assert quoted and "tool result of read_document" in quoted[0], found
