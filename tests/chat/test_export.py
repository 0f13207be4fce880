"""GET /api/conversations/<id>/export/?format=markdown|json (chat/export.py): owner-only
downloads of a conversation."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.utils import translation

from chat import services
from chat.export import conversation_markdown
from chat.models import Message
from tests.support.search_scenarios import say

pytestmark = pytest.mark.django_db


def url(conversation) -> str:
    return f"/api/conversations/{conversation.id}/export/"


@pytest.fixture
def answered(user):
    """A conversation: a question, a retried failure, an answer with a tool call."""
    chat = services.conversation_create(owner=user, title="Übergabe: Q3 plan")
    say(chat, "What is 6*7? Use ```backticks``` freely.")
    failed = say(chat, "half an answer", role="assistant", status="error")
    answer = services.assistant_message_start(conversation=chat, run_id="r2", mode="react")
    Message.objects.filter(pk=failed.pk).update(superseded_by=answer)
    steps = [
        {"kind": "tool_call", "name": "calculator", "arguments": '{"expression": "6*7"}'},
        {"kind": "tool_result", "name": "calculator", "result": "42 ```` four ticks"},
    ]
    services.assistant_message_finish(
        message=answer, content="It is **42**.", extra={"steps": steps, "retry_of": failed.pk}
    )
    return chat


def test_markdown_download(logged_in_client, answered):
    response = logged_in_client.get(url(answered))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    disposition = response["Content-Disposition"]
    assert disposition == (
        f"attachment; filename*=utf-8''%C3%BCbergabe-q3-plan-{answered.created_at:%Y-%m-%d}.md"
    )
    text = response.content.decode()
    assert text.startswith("# Übergabe: Q3 plan\n")
    assert "### User · " in text and "What is 6*7? Use ```backticks``` freely." in text
    assert "### Assistant · " in text and "It is **42**." in text
    assert "half an answer" not in text  # replaced by the retry
    assert "> **Tool call** `calculator`" in text
    # The result holds four backticks: its fence is longer, so it cannot be closed early.
    assert "> `````\n> 42 ```` four ticks\n> `````" in text


def test_json_download(logged_in_client, answered):
    response = logged_in_client.get(url(answered), {"format": "json"})
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response["Content-Disposition"].endswith(".json")
    data = json.loads(response.content)
    assert data["format"] == "fimone.conversation/1"
    assert data["conversation"]["id"] == str(answered.id)
    roles = [(m["role"], m["status"], m["superseded_by"] is not None) for m in data["messages"]]
    assert roles == [("user", "pending", False), ("assistant", "error", True),
                     ("assistant", "done", False)]  # fmt: skip
    assert all("html" not in m for m in data["messages"])
    assert data["messages"][2]["steps"][1]["result"] == "42 ```` four ticks"


def test_file_names_keep_chinese_and_fall_back_for_symbols(logged_in_client, user):
    chinese = services.conversation_create(owner=user, title="项目 预算")
    symbols = services.conversation_create(owner=user, title="???")
    day = f"{chinese.created_at:%Y-%m-%d}"
    response = logged_in_client.get(url(chinese))
    assert response["Content-Disposition"].endswith(
        "%E9%A1%B9%E7%9B%AE-%E9%A2%84%E7%AE%97-" + day + ".md"
    )
    response = logged_in_client.get(url(symbols), {"format": "json"})
    assert response["Content-Disposition"] == f'attachment; filename="conversation-{day}.json"'


def test_someone_elses_conversation_is_404(logged_in_client, foreign_conversation):
    for fmt in ("markdown", "json"):
        response = logged_in_client.get(url(foreign_conversation), {"format": fmt})
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"
    assert logged_in_client.get("/api/conversations/not-a-uuid/export/").status_code == 404


def test_unknown_format_and_anonymous(logged_in_client, answered):
    response = logged_in_client.get(url(answered), {"format": "pdf"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_format"
    assert Client().get(url(answered)).status_code == 401


def test_ru13_follow_ups_are_exported_in_the_order_the_page_shows(logged_in_client, user):
    """A follow-up the answer read goes above that answer, marked; one it never read stays
    below it, above the follow-up run's answer."""
    chat = services.conversation_create(owner=user, title="Follow-ups")
    say(chat, "Plan the trip")
    first = services.assistant_message_start(conversation=chat, run_id="r1", mode="react")
    read = services.user_message_create(
        conversation=chat, content="Also book a hut", injected=True, run_id="r1"
    )
    unread = services.user_message_create(
        conversation=chat, content="And the train back", injected=True, run_id="r1"
    )
    services.assistant_message_finish(
        message=first, content="Trip planned, hut booked.", extra={"follow_ups": [read.pk]}
    )
    second = services.assistant_message_start(
        conversation=chat, run_id="r2", mode="react", question=unread
    )
    services.assistant_message_finish(message=second, content="Train booked.")

    text = logged_in_client.get(url(chat)).content.decode()
    order = ["Plan the trip", "Also book a hut", "Trip planned", "And the train", "Train booked"]
    assert [text.index(part) for part in order] == sorted(text.index(part) for part in order)
    assert text.count("also answers 1 follow-up") == 1
    exported = logged_in_client.get(url(chat), {"format": "json"}).json()["messages"]
    assert [m["content"][:5] for m in exported] == ["Plan ", "Also ", "Trip ", "And t", "Train"]
    assert exported[2]["follow_ups"] == [read.pk]


@pytest.fixture
def in_a_project(user):
    """A conversation of a project, both with instructions (two lines in the project's)."""
    from tests.support.factories import make_project

    project = make_project(user, name="Trip to Lyon", instructions="Answer in French.\nBe brief.")
    chat = services.conversation_create(
        owner=user, title="Hotels", project_id=project.pk, instructions="Sign off with 'Bye'."
    )
    say(chat, "Which hotel?")
    return chat


def test_rj4_the_json_export_names_the_project_and_holds_both_instructions(
    logged_in_client, in_a_project
):
    data = json.loads(logged_in_client.get(url(in_a_project), {"format": "json"}).content)
    project = in_a_project.project
    assert data["project"] == {
        "id": project.pk,
        "name": "Trip to Lyon",
        "instructions": "Answer in French.\nBe brief.",
    }
    assert data["conversation"]["project"] == project.pk
    assert data["conversation"]["instructions"] == "Sign off with 'Bye'."


def test_rj4_the_markdown_export_names_the_project_and_quotes_both_instructions(
    logged_in_client, in_a_project
):
    text = logged_in_client.get(url(in_a_project)).content.decode()
    assert "- Project: Trip to Lyon\n" in text
    assert "## Instructions of the project\n\n> Answer in French.\n> Be brief.\n" in text
    assert "## Instructions of this conversation\n\n> Sign off with 'Bye'.\n" in text
    assert text.index("Instructions of the project") < text.index("Which hotel?")


def test_rj4_a_conversation_in_no_project_exports_none(logged_in_client, answered):
    data = json.loads(logged_in_client.get(url(answered), {"format": "json"}).content)
    assert data["project"] is None
    assert "Project:" not in logged_in_client.get(url(answered)).content.decode()


def test_rj4_a_project_exports_its_instructions_files_and_conversations(
    logged_in_client, user, in_a_project, django_capture_on_commit_callbacks
):
    from tests.support.documents import docx_bytes
    from tests.support.factories import add_project_file, make_conversation

    project = in_a_project.project
    docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    with django_capture_on_commit_callbacks(execute=True):
        add_project_file(project, "depot.docx", docx_bytes(["The gate code is 4471."]), docx)
    make_conversation(user, title="Elsewhere")
    response = logged_in_client.get(f"/api/projects/{project.pk}/export/")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response["Content-Disposition"].startswith("attachment; filename=")
    assert "trip-to-lyon-" in response["Content-Disposition"]
    data = json.loads(response.content)
    assert data["format"] == "fimone.project/1"
    assert data["project"]["name"] == "Trip to Lyon"
    assert data["project"]["instructions"] == "Answer in French.\nBe brief."
    assert [(f["name"], f["pages"] >= 1, f["size"] > 0) for f in data["files"]] == [
        ("depot.docx", True, True)
    ]
    assert [(c["id"], c["title"]) for c in data["conversations"]] == [
        (str(in_a_project.id), "Hotels")
    ]
    assert "4471" not in response.content.decode()  # files by reference, not their text


def test_rj4_a_project_export_is_owner_only(client, logged_in_client, other_user):
    from tests.support.factories import make_project

    foreign = make_project(other_user, name="Mallory's plans")
    response = logged_in_client.get(f"/api/projects/{foreign.pk}/export/")
    assert response.status_code == 404
    assert "Mallory" not in response.content.decode()
    assert client.get(f"/api/projects/{foreign.pk}/export/").status_code == 401


@pytest.mark.parametrize(
    ("language", "marker"), [("de", "*(kein Text)*"), ("zh-hans", "*(无文本)*")]
)
def test_an_answer_without_text_is_marked_in_the_readers_language(user, language, marker):
    chat = services.conversation_create(owner=user, title="Leer")
    say(chat, "Anything?")
    answer = services.assistant_message_start(conversation=chat, run_id="r", mode="react")
    services.assistant_message_finish(message=answer, content="")
    with translation.override(language):
        text = conversation_markdown(chat, list(chat.messages.order_by("created_at", "id")))
    assert marker in text


HOSTILE_TEXT = (
    "# x\n[link](javascript:alert(1)) *em* __strong__ `code` <script>alert(1)</script> "
    "![pic](x.png) | a | ~~s~~ &amp; \\ {b} +1"
)


def _inline_children(markdown: str, block: str, tag: str = "") -> list[list]:
    """The inline tokens of each ``block`` (``heading_open`` of ``tag``, ``paragraph_open``…)
    of ``markdown`` as a CommonMark reader with raw HTML on parses it."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(markdown)
    return [
        tokens[i + 1].children or []
        for i, token in enumerate(tokens)
        if token.type == block and (not tag or token.tag == tag)
    ]


def _as_text(children: list) -> str:
    """The inline tokens' text, asserting they are text (no link, emphasis, code, HTML)."""
    kinds = {child.type for child in children}
    assert kinds <= {"text", "text_special"}, kinds
    return "".join(child.content for child in children)


def test_rj4_a_title_and_names_of_markdown_stay_text_in_the_markdown_export(logged_in_client, user):
    """A title, a project name, a document's name and an error that hold Markdown and HTML
    are shown as the text they are: no heading, link, emphasis, code span or HTML of theirs
    in the file a Markdown reader renders (the message itself is Markdown by design)."""
    from tests.support.factories import make_project

    flat = " ".join(HOSTILE_TEXT.split())
    project = make_project(user, name=HOSTILE_TEXT)
    chat = services.conversation_create(owner=user, title=HOSTILE_TEXT, project_id=project.pk)
    question = say(chat, "Hello")
    document = {"file_id": "f1", "name": "a`b*c*.pdf` <b>x</b>", "pages": 1}
    Message.objects.filter(pk=question.pk).update(metadata={"documents": [document]})
    failed = say(chat, "", role="assistant", status="error")
    steps = [{"kind": "tool_call", "name": "fs`<b>", "arguments": "{}"}]
    error = {"message": "no model [x](http://evil.example) <i>y</i>"}
    Message.objects.filter(pk=failed.pk).update(metadata={"error": error, "steps": steps})
    markdown = logged_in_client.get(url(chat)).content.decode()

    (heading,) = _inline_children(markdown, "heading_open", "h1")
    assert _as_text(heading) == flat
    assert markdown.count("\n# ") == 0 and markdown.startswith("# ")
    paragraphs = _inline_children(markdown, "paragraph_open")

    def starting(prefix: str) -> list:
        (found,) = [c for c in paragraphs if c and c[0].content.startswith(prefix)]
        return found

    assert _as_text(starting("Project: ")) == f"Project: {flat}"
    (label,) = [c for c in paragraphs if "Document" in str(c)]
    kinds = [t.type for t in label]
    assert kinds == ["em_open", "text", "code_inline", "text", "em_close"], kinds
    assert label[2].content == "a`b*c*.pdf` <b>x</b>"
    error_line = _as_text(starting("Error: "))
    assert error_line == "Error: no model [x](http://evil.example) <i>y</i>"
    (call,) = [c for c in paragraphs if "Tool call" in str(c)]
    assert [t.type for t in call][-1] == "code_inline" and call[-1].content == "fs`<b>"


def test_rj4_the_markdown_exports_code_spans_hold_any_backticks():
    from chat.export import _code_span

    for text in ("plain", "a`b", "``x", "y`", "a ``` b"):
        (children,) = _inline_children(f"Tool {_code_span(text)}\n", "paragraph_open")
        assert children[-1].type == "code_inline" and children[-1].content == text, text


def test_rj4_the_json_export_keeps_a_title_and_names_as_they_are(logged_in_client, user):
    """Escaping is the Markdown's: the JSON export holds the title and the project's name
    exactly as stored."""
    from tests.support.factories import make_project

    project = make_project(user, name="Plan *b* [x](y)")
    chat = services.conversation_create(owner=user, title="# x `y` <b>", project_id=project.pk)
    data = json.loads(logged_in_client.get(url(chat), {"format": "json"}).content)
    assert data["conversation"]["title"] == "# x `y` <b>"
    assert data["project"]["name"] == "Plan *b* [x](y)"
    exported = json.loads(logged_in_client.get(f"/api/projects/{project.pk}/export/").content)
    assert exported["project"]["name"] == "Plan *b* [x](y)"
    assert exported["conversations"][0]["title"] == "# x `y` <b>"
