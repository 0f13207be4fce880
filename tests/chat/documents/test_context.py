"""Documents in the context: small ones inline with their message, larger ones as an
outline; ``read_document``'s pages and queries, capped; ``recall`` cites file and page."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import TestCase

from chat import services
from chat.documents.context import has_documents, read_document_text
from chat.history import load_history, query_message
from chat.recall.lookup import recall_passages
from tests.support import documents

pytestmark = pytest.mark.django_db


def attach(user, conversation, name: str, data: bytes, content: str = "see attached"):
    attachment = services.attachment_create(
        owner=user, conversation=conversation, uploaded_file=SimpleUploadedFile(name, data)
    )
    # Its pages are indexed once the message is committed (the test's transaction never is).
    with TestCase.captureOnCommitCallbacks(execute=True):
        message = services.user_message_create(
            conversation=conversation, content=content, attachments=[attachment]
        )
    return attachment, message


def test_a_small_document_goes_inline_framed_with_its_name(user, conversation):
    _, message = attach(user, conversation, "notes.docx", documents.docx_bytes(), "summarise")
    text = query_message(message).content
    assert text.startswith("summarise\n\n[document: notes.docx — Word, 1 page, ")
    assert documents.FACT in text
    assert text.endswith("[end of document: notes.docx]")


def test_a_larger_document_goes_as_its_outline(user, conversation, settings):
    settings.FIMONE_DOCUMENT_INLINE_TOKENS = 100
    _, message = attach(user, conversation, "review.pdf", documents.pdf_with_fact())
    text = query_message(message).content
    assert "[document: review.pdf — PDF, 12 pages," in text
    assert 'call read_document with file "review.pdf"' in text
    assert "Headings: Introduction (p. 1); Secrets (p. 7)" in text
    assert "Begins (p. 1): Page 1 of the quarterly review." in text
    assert documents.FACT_VALUE not in text
    assert text.endswith("[end of outline: review.pdf]")


def test_the_history_shows_earlier_documents_the_same_way(user, conversation, settings):
    settings.FIMONE_DOCUMENT_INLINE_TOKENS = 100
    attach(user, conversation, "review.pdf", documents.pdf_with_fact(), "first")
    services.user_message_create(conversation=conversation, content="second")  # the query
    [first] = load_history(conversation.id).messages
    assert first.content.startswith("first\n\n[document: review.pdf — PDF, 12 pages")


def test_a_message_with_only_a_document_is_context(user, conversation):
    attach(user, conversation, "notes.docx", documents.docx_bytes(), content="")
    services.user_message_create(conversation=conversation, content="and?")
    [first] = load_history(conversation.id).messages
    assert first.content.startswith("[document: notes.docx")


def test_a_missing_document_is_a_note_not_an_error(user, conversation):
    attachment, message = attach(user, conversation, "notes.docx", documents.docx_bytes())
    attachment.delete()
    message.refresh_from_db()
    assert query_message(message).content.endswith("[document: notes.docx unavailable]")


def test_read_document_returns_the_pages_asked_for(user, conversation):
    _, message = attach(user, conversation, "review.pdf", documents.pdf_with_fact())
    text = read_document_text(conversation.id, file="review.pdf", pages="7")
    assert text.startswith("review.pdf, pages 7 of 12:")
    assert "--- page 7 ---" in text and documents.FACT in text
    assert "--- page 6 ---" not in text
    both = read_document_text(conversation.id, file="REVIEW.PDF", pages="6-7")
    assert "--- page 6 ---" in both and "--- page 7 ---" in both


def test_read_document_finds_the_best_pages_for_a_query(user, conversation):
    attach(user, conversation, "review.pdf", documents.pdf_with_fact())
    text = read_document_text(conversation.id, file="review", query="Bluebird launch code")
    assert "(7 of 12)" in text.split("\n")[0]
    assert documents.FACT in text


def test_read_document_never_returns_300_pages_at_once(user, conversation, settings):
    settings.FIMONE_DOCUMENT_INLINE_TOKENS = 100
    attach(user, conversation, "long.pdf", documents.long_pdf(pages=300))
    text = read_document_text(conversation.id, file="long.pdf", pages="1-300", max_chars=12_000)
    assert len(text) < 13_000
    shown = text.count("--- page ")
    assert 1 <= shown < 20
    # Where the part stands and how to read on, as one read-on line (RT.4).
    assert text.endswith(
        f"[Pages 1-{shown} of 300 shown; {300 - shown} more page(s) asked for were not shown "
        "(at most 20 pages and 12,000 characters a call); read on with "
        f'read_document(file="long.pdf", pages="{shown + 1}-300")]'
    )
    whole = read_document_text(conversation.id, file="long.pdf", max_chars=12_000)
    assert len(whole) < 13_000 and "more page(s)" in whole


@pytest.mark.parametrize(
    ("pages", "error"),
    [("13", "page 13 does not exist"), ("seven", "is not a page number"), ("", None)],
)
def test_read_document_bad_pages_are_errors_the_model_can_correct(user, conversation, pages, error):
    attach(user, conversation, "review.pdf", documents.pdf_with_fact())
    text = read_document_text(conversation.id, file="review.pdf", pages=pages or None)
    if error is None:
        assert text.startswith("review.pdf, from the start")
    else:
        assert text.startswith("Error:") and error in text


def test_read_document_unknown_file_lists_the_documents(user, conversation):
    attach(user, conversation, "review.pdf", documents.pdf_with_fact())
    text = read_document_text(conversation.id, file="budget.xlsx", pages="1")
    assert text.startswith("Error: no document named 'budget.xlsx'")
    assert "review.pdf (12 pages)" in text


def test_read_document_never_reads_a_file_whose_name_only_contains_the_one_asked_for(
    user, conversation
):
    """Asked for "report", neither "report-old.txt" nor "my_report.txt" is read: the answer
    names them as the close names to read by their exact name, and reads nothing."""
    attach(user, conversation, "report-old.txt", b"Old figures: 17 tons.")
    attach(user, conversation, "my_report.txt", b"My figures: 23 tons.")
    attach(user, conversation, "budget.txt", b"Budget: 5 euros.")
    for asked in ("report", "REPORT.txt", "report.pdf", "old"):
        text = read_document_text(conversation.id, file=asked)
        assert text.startswith(f"Error: no document named {asked!r}"), text
        assert "tons" not in text, text
    close = read_document_text(conversation.id, file="report")
    assert "report-old.txt" in close and "my_report.txt" in close
    names = re.search(r"Close names: (.*?)\. Ask again", close)
    assert names is not None and "budget" not in names.group(1), close
    assert "23 tons" in read_document_text(conversation.id, file="My_Report.TXT")
    assert "17 tons" in read_document_text(conversation.id, file=" report-old ")


def test_read_document_by_name_without_extension_needs_one_file_of_that_stem(user, conversation):
    """A name without its extension reads the one file it names; two files of that stem
    with other extensions are both offered instead."""
    attach(user, conversation, "plan.txt", b"Plan text: Tuesday.")
    assert "Tuesday" in read_document_text(conversation.id, file="plan")
    attach(user, conversation, "plan.md", b"Plan notes: Friday.")
    both = read_document_text(conversation.id, file="Plan")
    assert both.startswith("Error: no document named 'Plan'"), both
    assert "plan.txt" in both and "plan.md" in both and "day" not in both
    assert "Friday" in read_document_text(conversation.id, file="plan.md")


def test_read_document_reads_by_id_whatever_its_name(user, conversation):
    attachment, _ = attach(user, conversation, "report.txt", b"By id: 99 balloons.")
    assert "99 balloons" in read_document_text(conversation.id, file=str(attachment.pk))
    shouting = str(attachment.pk).upper()
    assert "99 balloons" in read_document_text(conversation.id, file=shouting)


def test_read_document_sees_only_this_conversations_sent_documents(
    user, other_user, conversation, foreign_conversation
):
    attach(other_user, foreign_conversation, "secret.pdf", documents.pdf_with_fact())
    services.attachment_create(  # uploaded, never sent
        owner=user,
        conversation=conversation,
        uploaded_file=SimpleUploadedFile("draft.pdf", documents.pdf_with_fact()),
    )
    assert not has_documents(conversation.id)
    assert read_document_text(conversation.id, file="secret.pdf", pages="7").startswith("Error")
    assert read_document_text(conversation.id, file="draft.pdf", pages="7").startswith("Error")


def test_an_image_only_pdf_says_it_has_no_text_when_read(user, conversation):
    attach(user, conversation, "scan.pdf", documents.image_only_pdf())
    assert "without a text layer" in read_document_text(conversation.id, file="scan.pdf")


def test_recall_finds_a_passage_of_a_document_with_its_file_and_page(user, conversation):
    attach(user, conversation, "review.pdf", documents.pdf_with_fact())
    services.user_message_create(conversation=conversation, content="something else")
    passages = recall_passages(conversation_id=conversation.id, query="Bluebird launch code")
    assert passages
    first = passages[0]
    assert first.startswith("document review.pdf, page 7 (sent ")
    assert documents.FACT in first


def test_a_csv_is_read_with_its_header(user, conversation):
    attach(user, conversation, "cities.csv", documents.csv_bytes())
    text = read_document_text(conversation.id, file="cities.csv", query="Bluebird")
    assert "city | population | country" in text and documents.FACT_VALUE in text


def test_a_page_longer_than_a_call_is_read_on_from_where_it_stopped_rt_4(user, conversation):
    """A page larger than one call ends with where it stands and the call that reads on
    within it; that call gives the rest of the page from exactly there."""
    long_page = " ".join(f"Clause {i} sets limit L{i} at {100 + i} units." for i in range(100))
    attach(user, conversation, "terms.pdf", documents.make_pdf(["Cover", long_page]))
    first = read_document_text(conversation.id, file="terms.pdf", pages="2", max_chars=1_500)
    *_, line = first.split("\n")
    whole = read_document_text(conversation.id, file="terms.pdf", pages="2", max_chars=99_999)
    page = whole.split("--- page 2 ---\n", 1)[1]
    end = int(line.rsplit("start=", 1)[1].rstrip(")]"))
    assert line == (
        f"[Page 2: characters 0–{end:,} of {len(page):,} of this page shown; read on with "
        f'read_document(file="terms.pdf", pages="2", start={end})]'
    )
    second = read_document_text(
        conversation.id, file="terms.pdf", pages="2", max_chars=1_500, start=end
    )
    body = second.split("--- page 2 ---\n", 1)[1]
    assert page[end:].startswith(body.rsplit("\n[Page 2:", 1)[0])
    assert f"[Page 2: characters {end:,}–" in second
    refused = read_document_text(conversation.id, file="terms.pdf", pages="1-2", start=5)
    assert refused.startswith("Error: start reads on within one page")
