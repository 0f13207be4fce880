"""Files the user sent: a conversation's uploads and a project's files."""

import uuid

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from chat.models.conversations import Conversation, Message

ATTACHMENT_EXTENSIONS = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/webp": "webp",
    "image/gif": "gif",
    "application/pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/plain": "txt",
    "text/markdown": "md",
    "text/csv": "csv",
    "application/json": "json",
    "text/html": "html",
}


def attachment_path(instance: "Attachment", filename: str) -> str:
    # The client's file name is never used on disk (path traversal, collisions).
    ext = ATTACHMENT_EXTENSIONS.get(instance.mime_type, "bin")
    return f"attachments/{instance.owner_id}/{instance.id}.{ext}"


class Attachment(models.Model):
    class Kind(models.TextChoices):
        IMAGE = "image", _("image")
        DOCUMENT = "document", _("document")

    class DescriptionSource(models.TextChoices):
        NONE = "", _("not described yet")
        OFFLINE = "offline", _("from the file (format, size, colours, text layer)")
        MODEL = "model", _("by the fast model")
        MODEL_FAILED = "model_failed", _("from the file; the fast model failed")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="attachments",
        verbose_name=_("owner"),
    )
    # An upload to a conversation (sent with a message), or a file of a project (no
    # conversation, no message: it is knowledge of every conversation of the project).
    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="attachments",
        verbose_name=_("conversation"),
    )
    project = models.ForeignKey(
        "chat.Project",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="files",
        verbose_name=_("project"),
    )
    message = models.ForeignKey(
        Message,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="attachments",
        verbose_name=_("message"),
    )
    file = models.FileField(upload_to=attachment_path, max_length=255, verbose_name=_("file"))
    original_name = models.CharField(
        max_length=255, blank=True, default="", verbose_name=_("original name")
    )
    kind = models.CharField(
        max_length=8, choices=Kind.choices, default=Kind.IMAGE, verbose_name=_("kind")
    )
    mime_type = models.CharField(max_length=128, verbose_name=_("MIME type"))
    size = models.PositiveIntegerField(verbose_name=_("size"))
    # An image's pixels; 0 for a document.
    width = models.PositiveIntegerField(default=0, verbose_name=_("width"))
    height = models.PositiveIntegerField(default=0, verbose_name=_("height"))
    sha256 = models.CharField(max_length=64, verbose_name=_("SHA-256"))
    # What stands in for the image once it is no longer sent as pixels; written once
    # (chat.images.descriptions).
    description = models.TextField(blank=True, default="", verbose_name=_("description"))
    description_source = models.CharField(
        max_length=16,
        choices=DescriptionSource.choices,
        blank=True,
        default="",
        verbose_name=_("description source"),
    )
    # A document's text, extracted once at upload (chat.documents.extraction): {"kind", "title",
    # "pages": [text, …], "headings": [[text, page, level], …], "warnings", "text_layer",
    # "truncated"}; its page count, its size in tokens (inline or outline in the context)
    # and its outline (title, headings, first lines) as columns, read without the text.
    document = models.JSONField(default=dict, blank=True, verbose_name=_("document text"))
    page_count = models.PositiveIntegerField(default=0, verbose_name=_("pages"))
    text_tokens = models.PositiveIntegerField(default=0, verbose_name=_("text tokens"))
    outline = models.TextField(blank=True, default="", verbose_name=_("outline"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created"))

    class Meta:
        verbose_name = _("attachment")
        verbose_name_plural = _("attachments")
        ordering = ["created_at"]
        constraints = [
            # Exactly one home: a conversation's upload or a project's file.
            models.CheckConstraint(
                condition=models.Q(conversation__isnull=False, project__isnull=True)
                | models.Q(conversation__isnull=True, project__isnull=False),
                name="attachment_one_home",
            ),
        ]

    def __str__(self) -> str:
        if self.kind == self.Kind.DOCUMENT:
            return f"{self.original_name or self.id} ({self.mime_type}, {self.page_count} pages)"
        return f"{self.original_name or self.id} ({self.mime_type}, {self.width}x{self.height})"

    @property
    def file_id(self) -> uuid.UUID:
        return self.id
