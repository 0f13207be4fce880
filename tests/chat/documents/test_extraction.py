"""Documents as attachments over HTTP: typed by content, extracted once, stored with the
attachment, served only to their owner, deleted with their conversation."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from chat import services
from chat.models import Attachment, Message, SearchDocument
from tests.support import documents

pytestmark = pytest.mark.django_db


def upload(
    client: Client, conversation, name: str, data: bytes, content_type="application/octet-stream"
):
    return client.post(
        f"/api/conversations/{conversation.id}/attachments/",
        {"file": SimpleUploadedFile(name, data, content_type=content_type)},
    )


def test_a_pdf_upload_is_read_once_and_stored_with_its_pages(logged_in_client, conversation):
    response = upload(logged_in_client, conversation, "review.pdf", documents.pdf_with_fact())
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["kind"] == "document" and body["name"] == "review.pdf"
    assert body["pages"] == 12 and body["mime_type"] == "application/pdf"
    assert body["warnings"] == []
    stored = Attachment.objects.get(pk=body["file_id"])
    assert stored.kind == "document" and stored.page_count == 12
    assert documents.FACT_VALUE in stored.document["pages"][6]
    assert stored.text_tokens > 0
    assert "Secrets (p. 7)" in stored.outline and "Title: Quarterly review" in stored.outline


@pytest.mark.parametrize(
    ("name", "make", "kind"),
    [
        ("notes.docx", documents.docx_bytes, "docx"),
        ("cities.csv", documents.csv_bytes, "csv"),
        ("deck.pptx", documents.pptx_bytes, "pptx"),
        ("codes.xlsx", documents.xlsx_bytes, "xlsx"),
        # The name says text, the bytes say PDF: the bytes win.
        ("looks-like.txt", documents.pdf_with_fact, "pdf"),
    ],
)
def test_each_kind_is_accepted_by_its_content(logged_in_client, conversation, name, make, kind):
    response = upload(logged_in_client, conversation, name, make())
    assert response.status_code == 201, response.content
    assert response.json()["document_kind"] == kind
    stored = Attachment.objects.get(pk=response.json()["file_id"])
    assert documents.FACT_VALUE in "\n".join(stored.document["pages"])


def test_an_image_only_pdf_is_accepted_and_says_it_has_no_text_layer(
    logged_in_client, conversation
):
    response = upload(logged_in_client, conversation, "scan.pdf", documents.image_only_pdf())
    assert response.status_code == 201
    assert any("no text layer" in w for w in response.json()["warnings"])
    assert "no text layer" in Attachment.objects.get().outline


def test_a_malformed_pdf_is_a_clear_error_and_nothing_is_stored(
    logged_in_client, conversation, media_root
):
    response = upload(logged_in_client, conversation, "broken.pdf", documents.malformed_pdf())
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "damaged_document"
    assert "damaged" in error["message"]
    assert not Attachment.objects.exists()
    assert not [p for p in media_root.rglob("*") if p.is_file()]


def test_a_zip_bomb_is_refused_with_413(logged_in_client, conversation, settings):
    settings.FIMONE_MAX_UPLOAD_BYTES = 2_000_000
    response = upload(
        logged_in_client, conversation, "bomb.docx", documents.zip_bomb_docx(50_000_000)
    )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "zip_bomb"
    assert not Attachment.objects.exists()


def test_a_binary_file_is_neither_image_nor_document(logged_in_client, conversation):
    response = upload(logged_in_client, conversation, "x.bin", bytes(range(256)) * 8)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "unsupported_type"
    assert "PDF" in response.json()["error"]["message"]


def test_the_same_size_limit_applies(logged_in_client, conversation, settings):
    settings.FIMONE_MAX_UPLOAD_BYTES = 1_000
    response = upload(logged_in_client, conversation, "review.pdf", documents.pdf_with_fact())
    assert response.status_code == 413


def test_the_german_error_is_translated(logged_in_client, conversation):
    response = logged_in_client.post(
        f"/api/conversations/{conversation.id}/attachments/",
        {"file": SimpleUploadedFile("broken.pdf", documents.malformed_pdf())},
        headers={"accept-language": "de"},
    )
    assert response.status_code == 400
    assert "beschädigt" in response.json()["error"]["message"]


def test_a_document_is_served_to_its_owner_only_as_a_download(
    logged_in_client, conversation, other_user
):
    file_id = upload(
        logged_in_client, conversation, "page.html", b"<html><body>hi</body></html>"
    ).json()["file_id"]
    response = logged_in_client.get(f"/api/attachments/{file_id}/")
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment;")
    assert 'filename="page.html"' in response["Content-Disposition"]
    assert response["X-Content-Type-Options"] == "nosniff"
    stranger = Client()
    stranger.force_login(other_user)
    assert stranger.get(f"/api/attachments/{file_id}/").status_code == 404


def test_a_sent_document_becomes_a_chip_and_its_pages_are_indexed(
    user, conversation, django_capture_on_commit_callbacks
):
    attachment = services.attachment_create(
        owner=user,
        conversation=conversation,
        uploaded_file=SimpleUploadedFile("review.pdf", documents.pdf_with_fact()),
    )
    # The pages are indexed once the message is committed.
    with django_capture_on_commit_callbacks(execute=True):
        message = services.user_message_create(
            conversation=conversation, content="read this", attachments=[attachment]
        )
    assert message.metadata["images"] == []
    [chip] = message.metadata["documents"]
    assert chip == {
        "file_id": str(attachment.pk),
        "name": "review.pdf",
        "mime_type": "application/pdf",
        "kind": "pdf",
        "pages": 12,
        "size": attachment.size,
    }
    pages = SearchDocument.objects.filter(kind="document", message=message).order_by("id")
    assert [d.label for d in pages][6] == "review.pdf, page 7"
    assert pages.count() == 12
    # Editing the message's text re-indexes the text, not the document's pages.
    from chat.search import index as search_index

    Message.objects.filter(pk=message.pk).update(content="read this, please")
    message.refresh_from_db()
    search_index.index_message(message=message)
    assert SearchDocument.objects.filter(kind="document", message=message).count() == 12
    # The rebuild recomputes them.
    search_index.rebuild()
    assert SearchDocument.objects.filter(kind="document", message=message).count() == 12


def test_message_json_lists_the_documents(logged_in_client, user, conversation):
    attachment = services.attachment_create(
        owner=user,
        conversation=conversation,
        uploaded_file=SimpleUploadedFile("notes.docx", documents.docx_bytes()),
    )
    services.user_message_create(conversation=conversation, content="", attachments=[attachment])
    [message] = logged_in_client.get(f"/api/conversations/{conversation.id}/messages/").json()[
        "messages"
    ]
    [chip] = message["documents"]
    assert chip["name"] == "notes.docx" and chip["pages"] == 1 and chip["kind"] == "docx"
    assert chip["url"] == f"/api/attachments/{attachment.pk}/"


def test_documents_leave_with_their_conversation(
    user, conversation, media_root, django_capture_on_commit_callbacks
):
    attachment = services.attachment_create(
        owner=user,
        conversation=conversation,
        uploaded_file=SimpleUploadedFile("review.pdf", documents.pdf_with_fact()),
    )
    services.user_message_create(conversation=conversation, content="x", attachments=[attachment])
    path = attachment.file.path
    with django_capture_on_commit_callbacks(execute=True):
        services.conversation_delete(conversation=conversation)
    assert not Attachment.objects.exists()
    assert not SearchDocument.objects.filter(kind="document").exists()
    import os

    assert not os.path.exists(path)


def test_the_markdown_export_names_the_documents(logged_in_client, user, conversation):
    attachment = services.attachment_create(
        owner=user,
        conversation=conversation,
        uploaded_file=SimpleUploadedFile("review.pdf", documents.pdf_with_fact()),
    )
    services.user_message_create(
        conversation=conversation, content="read", attachments=[attachment]
    )
    response = logged_in_client.get(f"/api/conversations/{conversation.id}/export/")
    text = response.content.decode()
    assert "*Document `review.pdf` (12 pages)*" in text
    assert documents.FACT_VALUE not in text  # by reference: the text stays in fimone


def test_the_admin_shows_a_documents_outline_not_its_text(admin_client, user, conversation):
    attachment = services.attachment_create(
        owner=user,
        conversation=conversation,
        uploaded_file=SimpleUploadedFile("review.pdf", documents.pdf_with_fact()),
    )
    response = admin_client.get(f"/admin/chat/attachment/{attachment.pk}/change/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "Secrets (p. 7)" in page
    assert documents.FACT_VALUE not in page
    assert 'name="document"' not in page


def test_the_search_box_finds_a_page_of_a_document(
    logged_in_client, user, conversation, django_capture_on_commit_callbacks
):
    attachment = services.attachment_create(
        owner=user,
        conversation=conversation,
        uploaded_file=SimpleUploadedFile("review.pdf", documents.pdf_with_fact()),
    )
    with django_capture_on_commit_callbacks(execute=True):
        services.user_message_create(
            conversation=conversation, content="read", attachments=[attachment]
        )
    results = logged_in_client.get("/api/search/?q=Bluebird").json()["results"]
    assert [(r["kind"], r["label"]) for r in results] == [("document", "review.pdf, page 7")]
    assert "ZEBRA-7741" in results[0]["snippet"]
