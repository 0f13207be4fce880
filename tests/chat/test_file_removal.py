"""Attachment files leave MEDIA_ROOT on every delete path (RO.3): the API, the admin's
conversation and user deletes (cascades), and the unsent-upload cleanup."""

from __future__ import annotations

import io
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from chat import services
from chat.models import Attachment, Conversation
from tests.chat.images import image_bytes

pytestmark = pytest.mark.django_db


def _upload(user, conversation) -> Attachment:
    return services.attachment_create(
        owner=user,
        conversation=conversation,
        uploaded_file=SimpleUploadedFile("p.png", image_bytes("PNG")),
    )


def _stored_files(media_root: Path) -> list[Path]:
    return [p for p in media_root.rglob("*") if p.is_file()]


@pytest.fixture
def conversation_with_a_sent_image(user, conversation):
    attachment = _upload(user, conversation)
    services.user_message_create(conversation=conversation, content="see", attachments=[attachment])
    return conversation


def test_api_delete_removes_the_files(
    logged_in_client, conversation_with_a_sent_image, media_root, django_capture_on_commit_callbacks
):
    assert len(_stored_files(media_root)) == 1
    url = reverse("chat:conversation", args=[conversation_with_a_sent_image.id])
    with django_capture_on_commit_callbacks(execute=True):
        assert logged_in_client.delete(url).status_code == 204
    assert _stored_files(media_root) == []


def test_admin_delete_of_a_conversation_removes_its_files(
    admin_client, conversation_with_a_sent_image, media_root, django_capture_on_commit_callbacks
):
    url = reverse("admin:chat_conversation_delete", args=[conversation_with_a_sent_image.pk])
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(url, {"post": "yes"})
    assert response.status_code == 302
    assert not Conversation.objects.filter(pk=conversation_with_a_sent_image.pk).exists()
    assert _stored_files(media_root) == []


def test_admin_delete_of_a_user_removes_all_their_files(
    admin_client, user, conversation_with_a_sent_image, media_root,
    django_capture_on_commit_callbacks,
):  # fmt: skip
    second = services.conversation_create(owner=user, title="second")
    _upload(user, second)  # uploaded, never sent
    assert len(_stored_files(media_root)) == 2
    url = reverse("admin:auth_user_delete", args=[user.pk])
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(url, {"post": "yes"})
    assert response.status_code == 302
    assert not get_user_model().objects.filter(pk=user.pk).exists()
    assert _stored_files(media_root) == []


def test_a_rolled_back_delete_keeps_the_file(
    user, conversation_with_a_sent_image, media_root, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(RuntimeError), transaction.atomic():
            services.conversation_delete(conversation=conversation_with_a_sent_image)
            raise RuntimeError("rolled back")
    assert Attachment.objects.count() == 1
    assert len(_stored_files(media_root)) == 1


def test_cleanup_uploads_deletes_only_old_unsent_uploads(
    user, conversation, media_root, django_capture_on_commit_callbacks
):
    sent = _upload(user, conversation)
    services.user_message_create(conversation=conversation, content="x", attachments=[sent])
    old_unsent = _upload(user, conversation)
    fresh_unsent = _upload(user, conversation)
    day_and_a_bit = timezone.now() - timedelta(hours=25)
    Attachment.objects.filter(pk__in=[sent.pk, old_unsent.pk]).update(created_at=day_and_a_bit)
    out = io.StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("cleanup_uploads", stdout=out)
    assert "Deleted 1 unsent upload(s)" in out.getvalue()
    assert set(Attachment.objects.values_list("pk", flat=True)) == {sent.pk, fresh_unsent.pk}
    assert not Path(old_unsent.file.path).exists()
    assert Path(sent.file.path).exists() and Path(fresh_unsent.file.path).exists()


@pytest.mark.parametrize("hours", ["-5", "0", "0.5", "nan", "-inf"])
def test_cleanup_uploads_refuses_too_few_hours_and_deletes_nothing(user, conversation, hours):
    from django.core.management.base import CommandError

    unsent = _upload(user, conversation)
    Attachment.objects.filter(pk=unsent.pk).update(created_at=timezone.now() - timedelta(hours=2))
    with pytest.raises(CommandError, match="--hours must be at least 1"):
        call_command("cleanup_uploads", f"--hours={hours}")
    assert Attachment.objects.filter(pk=unsent.pk).exists()


@pytest.mark.parametrize("hours", ["99999999999999", "1e300", "876601"])
def test_ro13_cleanup_uploads_refuses_more_than_a_century(user, conversation, hours):
    """RO.13: a huge --hours was an OverflowError traceback, not a clear error."""
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="--hours must be at most 876,600"):
        call_command("cleanup_uploads", f"--hours={hours}")
    call_command("cleanup_uploads", "--hours=876600")  # the longest age allowed works
