"""The offline model and documents: a question asked with a document in view becomes a
``read_document`` call, and the answer quotes the sentences that hold its words."""

from __future__ import annotations

import json

from contextmgmt.core.messages import ChatMessage, ToolCall
from fimone.llm.offline.documents import answer_lines, document_call, document_names
from fimone.llm.offline.model import OfflineLLM, request_text

OUTLINE = (
    "[document: review.pdf — PDF, 12 pages, 7 KB; too long to include here: call "
    'read_document with file "review.pdf" and pages (e.g. "7" or "3-5") or a query]\n'
    "Title: Quarterly review\n[end of outline: review.pdf]"
)
INLINE = (
    "[document: notes.docx — Word, 1 page, 36 KB]\nWe met on Monday.\n[end of document: notes.docx]"
)
READ_DOCUMENT = {"type": "function", "function": {"name": "read_document", "parameters": {}}}


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


def test_the_notes_are_not_the_users_words():
    assert request_text(user(f"What is the code?\n\n{OUTLINE}")) == "What is the code?"


def test_newest_document_first():
    messages = [user(f"first\n\n{INLINE}"), user(f"second\n\n{OUTLINE}")]
    assert document_names(messages) == ["review.pdf", "notes.docx"]


def test_a_question_becomes_a_query_of_its_content_words():
    args = document_call("What is the launch code of project Bluebird?", [user(OUTLINE)])
    assert args == {"file": "review.pdf", "query": "launch code project Bluebird"}


def test_a_named_document_and_a_page():
    messages = [user(OUTLINE), user(INLINE)]
    assert document_call("What does page 7 of review say?", messages) == {
        "file": "review.pdf",
        "pages": "7",
    }


def test_no_document_or_no_question_means_no_call():
    assert document_call("What is the code?", [user("hello")]) is None
    assert document_call("Thanks, that helps.", [user(OUTLINE)]) is None


def test_the_model_calls_read_document_then_answers_with_the_page():
    model = OfflineLLM()
    messages = [user(f"What is the launch code?\n\n{OUTLINE}")]
    reply = model.reply(messages, [READ_DOCUMENT], {})
    [call] = reply.tool_calls
    assert call.name == "read_document"
    assert json.loads(call.arguments) == {"file": "review.pdf", "query": "launch code"}
    result = (
        "review.pdf, the pages matching 'launch code' best (7 of 12):\n\n--- page 7 ---\n"
        "Page 7 of the review. Routine matters,\nbudgets. The launch code of project Bluebird\n"
        "is ZEBRA-7741."
    )
    messages += [
        ChatMessage(
            role="assistant",
            content=None,
            tool_calls=[ToolCall(id=call.id, name=call.name, arguments=call.arguments)],
        ),
        ChatMessage(role="tool", content=result, tool_call_id=call.id, name="read_document"),
    ]
    answer = model.reply(messages, [READ_DOCUMENT], {}).text()
    assert "From review.pdf, page 7:" in answer
    assert "The launch code of project Bluebird is ZEBRA" in answer and "7741." in answer
    assert "Routine matters" not in answer


def test_calculations_still_go_to_the_calculator_with_a_document_in_view():
    model = OfflineLLM()
    calculator = {"type": "function", "function": {"name": "calculator", "parameters": {}}}
    reply = model.reply([user(f"What is 12*12?\n\n{OUTLINE}")], [READ_DOCUMENT, calculator], {})
    assert [c.name for c in reply.tool_calls] == ["calculator"]


def test_nothing_matching_says_so_in_the_users_language():
    lines = answer_lines(
        {"file": "review.pdf", "query": "Zebra"},
        "review.pdf …\n\n--- page 1 ---\nNothing here.",
        "de",
    )
    assert lines == ["Ich habe in review.pdf nichts Passendes gefunden."]


def test_an_error_is_shown_as_it_came():
    lines = answer_lines({"file": "x.pdf"}, "Error: no document named 'x.pdf'.", "en")
    assert lines and lines[0].startswith("Error")


ELEVEN = (
    "[document: report.pdf — PDF, 11 pages, 40 KB; too long to include here: call "
    'read_document with file "report.pdf" and pages (e.g. "7" or "3-5") or a query]\n'
    "Title: Annual report\n[end of outline: report.pdf]"
)


def answered(model, messages, call_results) -> str:
    """The model's answer once each of its calls got ``call_results[file]``."""
    reply = model.reply(messages, [READ_DOCUMENT], {})
    messages = [*messages, reply]
    for call in reply.tool_calls:
        file = json.loads(call.arguments)["file"]
        messages.append(
            ChatMessage(
                role="tool", content=call_results[file], tool_call_id=call.id, name=call.name
            )
        )
    return model.reply(messages, [READ_DOCUMENT], {}).text()


def test_a_summary_request_reads_every_page_and_takes_its_points_from_all_of_them():
    """RU.11: "Summarise this document in three points." reads pages 1-11 (it used to
    search the pages for "three points" and find none), and the points span the document."""
    question = user(f"Summarise this document in three points.\n\n{ELEVEN}")
    reply = OfflineLLM().reply([question], [READ_DOCUMENT], {})
    assert [json.loads(c.arguments) for c in reply.tool_calls] == [
        {"file": "report.pdf", "pages": "1-11"}
    ]
    pages = "\n\n".join(
        f"--- page {n} ---\nShort line {n}. Page {n} explains the topic number {n} at length."
        for n in range(1, 12)
    )
    result = f"report.pdf, pages 1-11 of 11:\n\n{pages}"
    answer = answered(OfflineLLM(), [question], {"report.pdf": result})
    assert "report.pdf (11 pages), in short:" in answer
    points = [line for line in answer.splitlines() if line.startswith("- ")]
    assert len(points) == 3
    cited = [int(line.rsplit("(p. ", 1)[1].rstrip(")")) for line in points]
    assert cited[0] <= 3 and 4 <= cited[1] <= 7 and cited[2] >= 8  # the whole document
    assert "matches" not in answer


def test_a_question_sent_with_a_pdf_and_a_docx_reads_both():
    """RU.11: each document sent with the question is read, not only the newest."""
    question = user(f"What do these say about the budget?\n\n{ELEVEN}\n\n{INLINE}")
    reply = OfflineLLM().reply([question], [READ_DOCUMENT], {})
    files = [json.loads(c.arguments)["file"] for c in reply.tool_calls]
    assert sorted(files) == ["notes.docx", "report.pdf"]
    answer = answered(
        OfflineLLM(),
        [question],
        {
            "report.pdf": "report.pdf, pages:\n\n--- page 4 ---\nThe budget is 4 million.",
            "notes.docx": "notes.docx, pages:\n\n--- page 1 ---\nThe budget was cut in May.",
        },
    )
    assert "The budget is 4 million." in answer and "The budget was cut in May." in answer


def test_an_image_is_described_from_its_stored_description_saying_so():
    """RU.11: the offline model cannot see, but every upload has a stored description."""
    question = user(
        "What is in this picture?\n[image: dot.png, 64x64 — a small picture, mostly red]"
    )
    answer = OfflineLLM().reply([question], [], {}).text()
    assert "I cannot see images" in answer
    assert "dot.png (64x64) is described as: a small picture, mostly red" in answer
    german = OfflineLLM(language="de").reply(
        [user("Was ist auf diesem Bild?\n[image: dot.png, 64x64 — rot]")], [], {}
    )
    assert "Beschreibung gespeichert" in german.text()


def test_rj5_a_projects_files_in_the_system_part_are_read_after_the_conversations_own():
    project = ChatMessage(role="system", content=f"[Standing instructions] …\n\n{OUTLINE}")
    assert document_call("Where is the launch code?", [project, user("hi")]) == {
        "file": "review.pdf",
        "query": "launch code",
    }
    own = user(f"Here are my notes.\n\n{INLINE}")
    assert document_names([project, own]) == ["notes.docx", "review.pdf"]
    assert document_call("Where is the launch code?", [project, own, user("and?")]) == {
        "file": "notes.docx",
        "query": "launch code",
    }
