"""The pages of a message's documents in the full-text index (chat/search/index.py): indexed
after the message's transaction, in short transactions of their own, so another user's
write goes in meanwhile; a failure loses nothing the rebuild cannot recompute (RO.13)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from chat import services
from chat.models import Attachment, Conversation, SearchDocument
from chat.search import index as search_index

PAGE = "The harbour pilot reads the tide tables before every crossing. " * 40


def document(owner, conversation, name: str, pages: int) -> Attachment:
    """A document attachment as an upload stores it (its text already extracted)."""
    return Attachment.objects.create(
        owner=owner,
        conversation=conversation,
        original_name=name,
        kind=Attachment.Kind.DOCUMENT,
        mime_type="text/plain",
        size=len(PAGE) * pages,
        sha256="0" * 64,
        page_count=pages,
        document={"kind": "text", "pages": [f"{name} page {n}. {PAGE}" for n in range(pages)]},
    )


def write_from_another_connection(owner) -> str:
    """Another user's write, from a connection of its own that waits at most 2 s for the
    database's write lock: ``written``, or the error it got."""
    outcome: list[str] = []

    def write() -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("PRAGMA busy_timeout = 2000")
            Conversation.objects.create(owner=owner, title="meanwhile")
            outcome.append("written")
        except Exception as exc:
            outcome.append(f"{type(exc).__name__}: {exc}")
        finally:
            connection.close()

    thread = threading.Thread(target=write)
    thread.start()
    thread.join(60)
    return outcome[0]


@pytest.mark.django_db(transaction=True)
def test_ro13_another_users_write_goes_in_while_a_messages_pages_are_indexed(
    user, other_user, monkeypatch
):
    if connection.vendor != "sqlite":
        pytest.skip("the write lock of the whole database is SQLite's")
    conversation = Conversation.objects.create(owner=user)
    sent = [document(user, conversation, f"report-{n}.txt", pages=30) for n in range(3)]
    meanwhile: list[str] = []
    pages_of = search_index._page_documents

    def let_another_user_write_then_read_pages(attachment, *args):
        if attachment.pk == sent[1].pk:  # the first document's pages are in by now
            meanwhile.append(write_from_another_connection(other_user))
        return pages_of(attachment, *args)

    monkeypatch.setattr(search_index, "_page_documents", let_another_user_write_then_read_pages)
    with transaction.atomic():  # as a run opens: the message in the run's transaction
        message = services.user_message_create(
            conversation=conversation, content="read these", attachments=sent
        )

    # The other user's write went in while the pages were being indexed.
    assert meanwhile == ["written"]
    assert Conversation.objects.filter(owner=other_user, title="meanwhile").exists()
    pages = SearchDocument.objects.filter(kind=SearchDocument.Kind.DOCUMENT, message=message)
    assert len(set(pages.values_list("label", flat=True))) == 90  # every page of the three


@pytest.mark.django_db
def test_ro13_pages_that_cannot_be_indexed_leave_the_message_stored_and_the_rebuild_adds_them(
    user, monkeypatch, caplog, django_capture_on_commit_callbacks
):
    conversation = Conversation.objects.create(owner=user)
    sent = [document(user, conversation, "notes.txt", pages=4)]

    def broken(*args, **kwargs):
        raise RuntimeError("the index is broken")

    monkeypatch.setattr(search_index, "_page_documents", broken)
    with django_capture_on_commit_callbacks(execute=True):
        message = services.user_message_create(
            conversation=conversation, content="read this", attachments=sent
        )
    assert message.pk and Attachment.objects.get(pk=sent[0].pk).message_id == message.pk
    assert not SearchDocument.objects.filter(kind=SearchDocument.Kind.DOCUMENT).exists()
    assert f"message {message.pk}: could not index its documents" in caplog.text

    monkeypatch.undo()
    search_index.rebuild()
    labels = SearchDocument.objects.filter(kind=SearchDocument.Kind.DOCUMENT).values_list(
        "label", flat=True
    )
    assert set(labels) == {f"notes.txt, page {n}" for n in range(1, 5)}
