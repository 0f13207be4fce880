"""RT.2: a run's whole tool result through the HTTP API — what a step's "show all" reads
after a reload. Owner-only (another user 404, anonymous 401); the messages API gives each
stored result's step its URL."""

from __future__ import annotations

import pytest
from django.urls import reverse

from chat import services
from chat.models import Message, ToolResult
from chat.runs.record import RECORD_TEXT_CHARS
from fimone.agent.tools import KeptResult

pytestmark = pytest.mark.django_db

WHOLE = "\n".join(f"row {i}: the value of cell {i} is {i * 7}" for i in range(400))


@pytest.fixture
def answered(conversation) -> Message:
    """A finished answer whose run read one long result (its step keeps a preview)."""
    Message.objects.create(conversation=conversation, role="user", content="Read the sheet")
    preview = WHOLE[:RECORD_TEXT_CHARS] + f"… [{len(WHOLE) - RECORD_TEXT_CHARS:,} more chars]"
    answer = Message.objects.create(
        conversation=conversation,
        role="assistant",
        kind="answer",
        status="done",
        content="Read.",
        metadata={
            "steps": [
                {"kind": "tool_call", "name": "read_sheet", "arguments": "{}", "call_id": "c1"},
                {"kind": "tool_result", "name": "read_sheet", "result": preview, "call_id": "c1"},
            ]
        },
    )
    services.tool_results_store(
        message=answer, results=[KeptResult("c1", "read_sheet", '{"sheet": 2}', WHOLE)]
    )
    return answer


def result_url(conversation, result_id) -> str:
    return reverse(
        "chat:tool_result",
        kwargs={"conversation_id": str(conversation.pk), "result_id": str(result_id)},
    )


def test_rt2_the_owner_reads_the_whole_result(logged_in_client, conversation, answered):
    stored = ToolResult.objects.get(message=answered)
    response = logged_in_client.get(result_url(conversation, stored.pk))
    assert response.status_code == 200
    body = response.json()
    assert body["content"] == WHOLE and body["chars"] == len(WHOLE)
    assert body["truncated"] is False
    assert body["id"] == stored.result_id and body["message_id"] == answered.pk
    call = ("read_sheet", '{"sheet": 2}', "c1")
    assert (body["name"], body["arguments"], body["call_id"]) == call
    # The id a stub names ("r12") is accepted too.
    assert logged_in_client.get(result_url(conversation, stored.result_id)).json() == body


def test_rt2_the_messages_api_gives_the_stored_results_step_its_url(
    logged_in_client, conversation, answered
):
    stored = ToolResult.objects.get(message=answered)
    page = logged_in_client.get(
        reverse("chat:messages", kwargs={"conversation_id": str(conversation.pk)})
    ).json()
    [answer] = [m for m in page["messages"] if m["id"] == answered.pk]
    call, result = answer["steps"]
    assert "result_url" not in call
    assert result["result_url"] == result_url(conversation, stored.pk)
    assert result["result"].endswith("more chars]")  # the step itself stays a preview


def test_rt2_a_result_kept_cut_says_so(logged_in_client, conversation, answered, monkeypatch):
    monkeypatch.setattr(services, "TOOL_RESULT_MAX_CHARS", 1_000)
    services.tool_results_store(
        message=answered, results=[KeptResult("c2", "read_sheet", "{}", WHOLE)]
    )
    stored = ToolResult.objects.get(message=answered, call_id="c2")
    body = logged_in_client.get(result_url(conversation, stored.pk)).json()
    assert body["content"] == WHOLE[:1_000] and body["chars"] == len(WHOLE)
    assert body["truncated"] is True


def test_rt2_another_users_result_answers_404(client, other_user, conversation, answered):
    stored = ToolResult.objects.get(message=answered)
    client.force_login(other_user)
    response = client.get(result_url(conversation, stored.pk))
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert WHOLE[:50] not in response.content.decode()


def test_rt2_a_result_of_another_conversation_or_no_result_answers_404(
    logged_in_client, user, conversation, answered
):
    stored = ToolResult.objects.get(message=answered)
    mine_too = services.conversation_create(owner=user, title="another")
    assert logged_in_client.get(result_url(mine_too, stored.pk)).status_code == 404
    assert logged_in_client.get(result_url(conversation, stored.pk + 1)).status_code == 404
    assert logged_in_client.get(result_url(conversation, "nope")).status_code == 404


def test_rt2_anonymous_is_refused(client, conversation, answered):
    stored = ToolResult.objects.get(message=answered)
    response = client.get(result_url(conversation, stored.pk))
    assert response.status_code == 401
    assert WHOLE[:50] not in response.content.decode()


def test_rt2_only_get(logged_in_client, conversation, answered):
    stored = ToolResult.objects.get(message=answered)
    assert logged_in_client.delete(result_url(conversation, stored.pk)).status_code == 405
    assert ToolResult.objects.filter(pk=stored.pk).exists()
