"""Writes of attachments: an upload validated and stored (an image, or a document with its
text extracted once) for a conversation or as a project's file, and uploads never sent
cleaned up. ``chat.services`` re-exports them: its callers see one module of writes."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone

from chat.documents.extraction import extract_upload, looks_like_image
from chat.errors import InvalidInput
from chat.images.descriptions import offline_description
from chat.images.uploads import display_name, read_limited, validate_image
from chat.models import Attachment, Conversation, Project


def attachment_create(
    *, owner, conversation: Conversation, uploaded_file: UploadedFile
) -> Attachment:
    """Validate an upload to a conversation and store it (``upload_store``)."""
    if conversation.owner_id != owner.pk:
        raise InvalidInput("conversation_mismatch", "The conversation belongs to someone else.")
    return upload_store(owner=owner, uploaded_file=uploaded_file, conversation=conversation)


@dataclass(frozen=True)
class CheckedUpload:
    """An upload validated and read, not stored yet: its attachment row (unsaved) and
    bytes, for ``attachment_store``."""

    attachment: Attachment
    data: bytes


def upload_store(
    *,
    owner,
    uploaded_file: UploadedFile,
    conversation: Conversation | None = None,
    project: Project | None = None,
) -> Attachment:
    """Validate an upload and store it, in a conversation or as a project's file
    (``upload_check``, then ``attachment_store``); rejections store nothing. The caller
    checked that the owner owns the conversation or project."""
    upload = upload_check(
        owner=owner, uploaded_file=uploaded_file, conversation=conversation, project=project
    )
    return attachment_store(upload=upload)


def upload_check(
    *,
    owner,
    uploaded_file: UploadedFile,
    conversation: Conversation | None = None,
    project: Project | None = None,
) -> CheckedUpload:
    """Validate an upload, outside any transaction: an image (checked with Pillow) or a
    document (its text extracted once, ``chat.documents.extraction``)."""
    data = read_limited(uploaded_file, max_bytes=settings.FIMONE_MAX_UPLOAD_BYTES)
    name = display_name(getattr(uploaded_file, "name", ""))
    if looks_like_image(data):
        image = validate_image(data, max_pixels=settings.FIMONE_MAX_IMAGE_PIXELS)
        attachment = Attachment(
            owner=owner,
            conversation=conversation,
            project=project,
            original_name=name,
            mime_type=image.mime_type,
            size=image.size,
            width=image.width,
            height=image.height,
            sha256=image.sha256,
            # Once, here: every later request that shows the image as text reuses it.
            description=offline_description(image.data),
            description_source=Attachment.DescriptionSource.OFFLINE,
        )
    else:
        # Seconds of CPU for a long PDF: done before the transaction, which only stores.
        document = extract_upload(data, name=name, owner_key=str(owner.pk))
        attachment = Attachment(
            owner=owner,
            conversation=conversation,
            project=project,
            original_name=name,
            kind=Attachment.Kind.DOCUMENT,
            mime_type=document.mime_type,
            size=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
            page_count=document.page_count,
            text_tokens=document.text_tokens,
            outline=document.outline,
            document=document.document,
        )
    return CheckedUpload(attachment=attachment, data=data)


@transaction.atomic
def attachment_store(*, upload: CheckedUpload) -> Attachment:
    """Store a checked upload: its file and its row, in one short transaction."""
    attachment = upload.attachment
    # The conversation or project may have gone while the upload was read (seconds,
    # outside any transaction): a DoesNotExist here (a 404) rather than a row whose key
    # fails at commit, a 500 with its stored file left behind. Locked, it stays until the
    # upload is stored.
    if attachment.project_id is not None:
        Project.objects.select_for_update().only("pk").get(pk=attachment.project_id)
    if attachment.conversation_id is not None:
        Conversation.objects.select_for_update().only("pk").get(pk=attachment.conversation_id)
    # The stored name comes from upload_to (owner id + attachment id), never from the client.
    attachment.file.save("upload", ContentFile(upload.data), save=False)
    try:
        attachment.save()
    except Exception:
        attachment.file.delete(save=False)
        raise
    return attachment


@transaction.atomic
def attachments_delete_unsent(*, older_than: timedelta) -> int:
    """Delete uploads never sent in a message and older than ``older_than``; their files
    follow on commit. Returns how many were deleted."""
    cutoff = timezone.now() - older_than
    # Sending links an upload to its message (user_message_create), so no link = never sent;
    # a project's files are never sent (they are knowledge of its conversations).
    _, by_model = Attachment.objects.filter(
        message__isnull=True, project__isnull=True, created_at__lt=cutoff
    ).delete()
    return by_model.get(Attachment._meta.label, 0)
