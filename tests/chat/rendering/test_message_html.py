"""An answer's HTML is rendered once, when it is finished, and stored with it: a messages
read serves the stored HTML; a renderer change renders an answer again once, on its next
read; a running answer's growing text is rendered but not stored."""

from __future__ import annotations

import pytest
from django.urls import reverse

from chat import services
from chat.models import Message
from chat.rendering import markdown
from chat.rendering.markdown import RENDERER_VERSION, render_markdown

pytestmark = pytest.mark.django_db

ANSWER = "# Result\n\n| n | v |\n|:--|--:|\n| x | 42 |\n\n**done**"


def messages_url(conversation) -> str:
    return reverse("chat:messages", args=[str(conversation.id)])


@pytest.fixture
def finished_answer(conversation) -> Message:
    running = services.assistant_message_start(conversation=conversation, run_id="r1", mode="react")
    return services.assistant_message_finish(message=running, content=ANSWER)


@pytest.fixture
def counted_renders(monkeypatch) -> list[str]:
    """Every sanitising pass (one per rendering), counted."""
    calls: list[str] = []
    cleaner = markdown._cleaner()

    class Counting:
        def clean(self, html: str) -> str:
            calls.append(html)
            return cleaner.clean(html)

    monkeypatch.setattr(markdown, "_cleaner", Counting)
    return calls


def answer_html(client, conversation) -> str:
    response = client.get(messages_url(conversation))
    assert response.status_code == 200
    (answer,) = [m for m in response.json()["messages"] if m["role"] == "assistant"]
    return answer["html"]


def test_finishing_an_answer_stores_its_html(finished_answer):
    stored = Message.objects.get(pk=finished_answer.pk)
    assert stored.html == render_markdown(ANSWER) and "<h1>Result</h1>" in stored.html
    assert stored.html_version == RENDERER_VERSION


def test_a_read_serves_the_stored_html_without_rendering(
    logged_in_client, conversation, finished_answer, counted_renders
):
    for _ in range(3):
        assert answer_html(logged_in_client, conversation) == finished_answer.html
    assert counted_renders == []


def test_an_answer_of_an_older_renderer_is_rendered_once_on_its_next_read(
    logged_in_client, conversation, finished_answer, counted_renders
):
    Message.objects.filter(pk=finished_answer.pk).update(html="<p>old</p>", html_version=1)
    assert answer_html(logged_in_client, conversation) == render_markdown(ANSWER)
    renders = len(counted_renders)
    assert answer_html(logged_in_client, conversation) == render_markdown(ANSWER)
    assert len(counted_renders) == renders + 1  # only the comparison's own rendering above
    assert Message.objects.get(pk=finished_answer.pk).html_version == RENDERER_VERSION


def test_a_running_answer_is_rendered_but_not_stored(logged_in_client, conversation):
    running = services.assistant_message_start(conversation=conversation, run_id="r2", mode="react")
    Message.objects.filter(pk=running.pk).update(content="**so far**")
    assert "<strong>so far</strong>" in answer_html(logged_in_client, conversation)
    assert Message.objects.get(pk=running.pk).html_version == 0
