"""GET /api/attachments/<file_id>/ (DESIGN §4): the file, to its owner only."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from chat.models import Attachment
from tests.chat.images import image_bytes
from tests.support.factories import make_attachment

pytestmark = pytest.mark.django_db


def file_url(file_id) -> str:
    return reverse("chat:attachment", args=[str(file_id)])


def test_owner_gets_the_file_inline_with_safe_headers(logged_in_client, user, conversation):
    attachment = make_attachment(user, conversation, name="../evil.html")
    response = logged_in_client.get(file_url(attachment.id))
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == image_bytes("PNG")
    assert response["Content-Type"] == "image/png"
    assert response["X-Content-Type-Options"] == "nosniff"
    # The extension follows the verified type; the client's directories and .html are gone.
    assert response["Content-Disposition"] == 'inline; filename="evil.png"'
    assert "private" in response["Cache-Control"]


def test_each_format_is_served_with_its_content_type(logged_in_client, user, conversation):
    attachment = make_attachment(user, conversation, fmt="WEBP")
    Attachment.objects.update(original_name="")  # e.g. a client that sent no usable name
    response = logged_in_client.get(file_url(attachment.id))
    assert response["Content-Type"] == "image/webp"
    assert response["Content-Disposition"] == f'inline; filename="{attachment.id}.webp"'


def test_another_users_file_is_404(logged_in_client, other_user, foreign_conversation):
    attachment = make_attachment(other_user, foreign_conversation)
    response = logged_in_client.get(file_url(attachment.id))
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"


@pytest.mark.parametrize("file_id", ["nope", "00000000-0000-0000-0000-000000000000"])
def test_unknown_or_malformed_file_id_is_404(logged_in_client, file_id):
    assert logged_in_client.get(file_url(file_id)).status_code == 404


def test_file_missing_from_storage_is_404_not_500(logged_in_client, user, conversation):
    attachment = make_attachment(user, conversation)
    attachment.file.storage.delete(attachment.file.name)
    response = logged_in_client.get(file_url(attachment.id))
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "file_missing"


def test_upload_to_another_users_conversation_is_404_and_stores_nothing(
    logged_in_client, foreign_conversation, media_root
):
    url = reverse("chat:attachment_upload", args=[foreign_conversation.id])
    data = SimpleUploadedFile("a.png", image_bytes("PNG"), content_type="image/png")
    response = logged_in_client.post(url, {"file": data})
    assert response.status_code == 404
    assert not Attachment.objects.exists()
    assert not any(p.is_file() for p in media_root.rglob("*"))


def test_deleting_a_conversation_deletes_its_files(
    logged_in_client, user, conversation, media_root, django_capture_on_commit_callbacks
):
    attachment = make_attachment(user, conversation)
    path = media_root / attachment.file.name
    assert path.is_file()
    with django_capture_on_commit_callbacks(execute=True):
        response = logged_in_client.delete(reverse("chat:conversation", args=[conversation.id]))
    assert response.status_code == 204
    assert not path.exists()
    assert not Attachment.objects.exists()
