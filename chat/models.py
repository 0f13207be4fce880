"""Conversations, messages, attachments and persisted summaries."""

import uuid

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class Conversation(models.Model):
    class Mode(models.TextChoices):
        REACT = "react", "ReAct"
        DAG = "dag", "DAG"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations"
    )
    title = models.CharField(max_length=200, blank=True, default="")
    mode = models.CharField(max_length=8, choices=Mode.choices, default=Mode.REACT)
    # The main model this conversation's runs use; empty: the configured default (the
    # active main ModelConfig, the environment's model, or the offline model).
    model_config = models.ForeignKey(
        "contextmgmt.ModelConfig",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("model"),
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-created_at"]
        indexes = [models.Index(fields=["owner", "-updated_at"], name="conv_owner_updated")]

    def __str__(self) -> str:
        return self.title or f"Conversation {str(self.id)[:8]}"


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"
        SYSTEM = "system"
        TOOL = "tool"

    class Kind(models.TextChoices):
        QUERY = "query"
        INJECTED = "injected"
        ANSWER = "answer"
        ERROR = "error"

    class Status(models.TextChoices):
        PENDING = "pending"  # a user message whose run has not finished
        RUNNING = "running"  # an assistant message being produced
        DONE = "done"
        ERROR = "error"
        CANCELLED = "cancelled"
        INTERRUPTED = "interrupted"  # the server died during the run

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="messages"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField(blank=True, default="")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.QUERY)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DONE)
    # The user asked to keep this message verbatim: load-time compaction leaves it out of
    # the summary while pinned history fits in half the budget (docs/architecture.md).
    pinned = models.BooleanField(default=False)
    # images: [{"file_id", "mime_type"}]; usage; compaction facts; run id; …
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        # Creation time, with the autoincrement id as a stable tie-break for equal stamps.
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["conversation", "created_at", "id"], name="msg_conv_order"),
            models.Index(fields=["status"], name="msg_status"),
        ]
        constraints = [
            # The database's own backstop for "one active run per conversation", whatever
            # the number of server processes; chat.runs.control takes a row lock first.
            models.UniqueConstraint(
                fields=["conversation"],
                condition=models.Q(role="assistant", status="running"),
                name="one_running_answer_per_conversation",
            ),
        ]

    def __str__(self) -> str:
        preview = (self.content or "")[:40].replace("\n", " ")
        return f"{self.role}: {preview}"


def attachment_path(instance: "Attachment", filename: str) -> str:
    # The client's file name is never used on disk (path traversal, collisions).
    ext = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp", "image/gif": "gif"}
    return f"attachments/{instance.owner_id}/{instance.id}.{ext.get(instance.mime_type, 'bin')}"


class Attachment(models.Model):
    class DescriptionSource(models.TextChoices):
        NONE = "", "not described yet"
        OFFLINE = "offline", "from the file (format, size, colours, text layer)"
        MODEL = "model", "by the fast model"
        MODEL_FAILED = "model_failed", "from the file; the fast model failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="attachments"
    )
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="attachments"
    )
    message = models.ForeignKey(
        Message, on_delete=models.SET_NULL, null=True, blank=True, related_name="attachments"
    )
    file = models.FileField(upload_to=attachment_path, max_length=255)
    original_name = models.CharField(max_length=255, blank=True, default="")
    mime_type = models.CharField(max_length=64)
    size = models.PositiveIntegerField()
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    # What stands in for the image once it is no longer sent as pixels; written once
    # (chat.image_descriptions).
    description = models.TextField(blank=True, default="")
    description_source = models.CharField(
        max_length=16, choices=DescriptionSource.choices, blank=True, default=""
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"{self.original_name or self.id} ({self.mime_type}, {self.width}x{self.height})"

    @property
    def file_id(self) -> uuid.UUID:
        return self.id


class ContextSummary(models.Model):
    """A persisted load-time summary: the next load starts from it."""

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="summaries"
    )
    # The newest message the summary covers; messages after it are loaded verbatim.
    covers_through = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="+")
    content = models.TextField()
    covered_count = models.PositiveIntegerField(default=0)
    # Ids of messages up to ``covers_through`` the summary does NOT cover (pinned ones kept
    # verbatim, the verbatim tail before a pinned one): they are loaded after it.
    uncovered_ids = models.JSONField(default=list, blank=True)
    tokens = models.PositiveIntegerField(default=0)
    # facts_appended / facts_missing (the fact check's lists), covered_tokens, original
    # (the model's text, once a user edited it), …
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # A user's edit is used as it is; a discarded summary is never loaded again.
    edited_at = models.DateTimeField(null=True, blank=True)
    discarded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = _("context summary")
        verbose_name_plural = _("context summaries")
        indexes = [models.Index(fields=["conversation", "-id"], name="summary_conv_newest")]

    def __str__(self) -> str:
        return f"Summary of {self.covered_count} messages in {self.conversation_id}"


class SearchDocument(models.Model):
    """One searchable text: a message, a tool result of a run, or a conversation's title.

    Kept in step by ``chat.search_index`` (called by the services); the database's own
    full-text index over ``terms`` is created by a migration: an FTS5 table on SQLite, a
    GIN index on PostgreSQL (see docs/architecture.md).
    """

    class Kind(models.TextChoices):
        MESSAGE = "message"
        TOOL = "tool"  # a tool result stored in an answer's ``metadata["steps"]``
        TITLE = "title"

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="search_documents"
    )
    message = models.ForeignKey(
        Message, on_delete=models.CASCADE, null=True, blank=True, related_name="search_documents"
    )
    kind = models.CharField(max_length=8, choices=Kind.choices)
    label = models.CharField(max_length=100, blank=True, default="")  # e.g. the tool's name
    body = models.TextField()  # the text as it was written, quoted in results
    terms = models.TextField()  # ``chat.search_text.index_text(body)``: what is indexed
    created_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["conversation", "kind"], name="searchdoc_conv_kind")]

    def __str__(self) -> str:
        return f"{self.kind} in {self.conversation_id}: {self.body[:40]}"
