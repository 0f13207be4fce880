"""Conversations, messages, attachments and persisted summaries."""

import uuid

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class Conversation(models.Model):
    class Mode(models.TextChoices):
        REACT = "react", "ReAct"
        DAG = "dag", "DAG"

    # Set by the pre-delete signal for its post-delete twin: the runs to stop (chat.signals).
    _running_run_ids: list[str]

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="conversations",
        verbose_name=_("owner"),
    )
    title = models.CharField(max_length=200, blank=True, default="", verbose_name=_("title"))
    mode = models.CharField(
        max_length=8, choices=Mode.choices, default=Mode.REACT, verbose_name=_("mode")
    )
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
    # The user picked fimone's built-in offline model for this conversation, whatever is
    # configured (``model_config`` is then empty): its runs use it for every call.
    builtin_model = models.BooleanField(default=False, verbose_name=_("built-in model"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated"))
    # Tool sources (``Tool.source``, e.g. "mcp:github") the user switched off for this
    # conversation: their tools are not offered to its runs (chat/runs/deps.py).
    disabled_tool_sources = models.JSONField(
        default=list, blank=True, verbose_name=_("tool sources switched off")
    )
    # The compaction ledger's totals over the conversation's answers, kept as each answer is
    # stored (chat.compaction.ledger, written by chat.services): the gauge reads them, not
    # every answer.
    ledger = models.JSONField(default=dict, blank=True, verbose_name=_("compaction totals"))
    # The project the conversation belongs to (its instructions and files join the
    # context); moved in or out at any time. Deleting a project detaches its conversations.
    project = models.ForeignKey(
        "chat.Project",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="conversations",
        verbose_name=_("project"),
    )
    # The conversation's own instructions: sent whole after the project's, never compacted.
    instructions = models.TextField(blank=True, default="", verbose_name=_("instructions"))

    class Meta:
        verbose_name = _("conversation")
        verbose_name_plural = _("conversations")
        ordering = ["-updated_at", "-created_at"]
        indexes = [models.Index(fields=["owner", "-updated_at"], name="conv_owner_updated")]

    def __str__(self) -> str:
        return self.title or f"Conversation {str(self.id)[:8]}"


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user", _("User")
        ASSISTANT = "assistant", _("Assistant")
        SYSTEM = "system", _("System")
        TOOL = "tool", _("Tool")

    class Kind(models.TextChoices):
        QUERY = "query", _("Query")
        INJECTED = "injected", _("Injected")
        ANSWER = "answer", _("Answer")
        ERROR = "error", _("Error")

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")  # a user message whose run has not finished
        RUNNING = "running", _("Running")  # an assistant message being produced
        DONE = "done", _("Done")
        ERROR = "error", _("Error")
        CANCELLED = "cancelled", _("Cancelled")
        INTERRUPTED = "interrupted", _("Interrupted")  # the server died during the run

    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="messages",
        verbose_name=_("conversation"),
    )
    role = models.CharField(max_length=16, choices=Role.choices, verbose_name=_("role"))
    content = models.TextField(blank=True, default="", verbose_name=_("content"))
    kind = models.CharField(
        max_length=16, choices=Kind.choices, default=Kind.QUERY, verbose_name=_("kind")
    )
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.DONE, verbose_name=_("status")
    )
    # The user asked to keep this message verbatim: load-time compaction leaves it out of
    # the summary while pinned history fits in half the budget (docs/architecture.md).
    pinned = models.BooleanField(default=False, verbose_name=_("pinned"))
    # images: [{"file_id", "mime_type"}]; usage; compaction facts; mode; … Facts that relate
    # rows are the columns below, indexed for the queries that follow them; they are
    # written only through chat.services (docs/architecture.md, "Messages").
    metadata = models.JSONField(default=dict, blank=True, verbose_name=_("metadata"))
    # The run the message belongs to: an answer's own run, a question's or follow-up's run
    # it was sent to (a uuid hex; empty for rows no run wrote).
    run_id = models.CharField(max_length=64, blank=True, default="", verbose_name=_("run"))
    # The message that replaces this one (a retried or regenerated answer's successor; an
    # edited question's new copy, and the answer's for what followed it). Kept, but hidden
    # by the UI and left out of the history, search and the gauge.
    superseded_by = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="supersedes",
        verbose_name=_("superseded by"),
    )
    # An answer's question: the user message its run answered (stored when it started).
    question = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="answers",
        verbose_name=_("question"),
    )
    # An answer's content rendered as safe HTML when it was finished, and the renderer's
    # version then (chat.rendering.markdown.RENDERER_VERSION; 0: never rendered). A read serves it
    # as stored; a renderer change re-renders an answer once, on its next read.
    html = models.TextField(blank=True, default="", verbose_name=_("rendered HTML"))
    html_version = models.PositiveSmallIntegerField(default=0, verbose_name=_("renderer version"))
    # The facts of its content, found when the content was stored (the fact check's own
    # JSON, contextmgmt.core.factscan.stored_facts; empty for rows stored before): a
    # compaction takes them instead of scanning the text again (docs/architecture.md,
    # "Compaction").
    facts = models.JSONField(default=dict, blank=True, editable=False, verbose_name=_("facts"))
    created_at = models.DateTimeField(auto_now_add=True, db_index=True, verbose_name=_("created"))
    # Versions (docs/architecture.md, "Versions"): an edited question or a regenerated
    # answer is a new version of the first one, which it names here; and a message hidden
    # because another version is shown names the version whose branch holds it (showing
    # that version shows it again). Written only by chat.versions.
    version_of = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("version of"),
    )
    branch_of = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("hidden with version"),
    )

    class Meta:
        verbose_name = _("message")
        verbose_name_plural = _("messages")
        # Creation time, with the autoincrement id as a stable tie-break for equal stamps.
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["conversation", "created_at", "id"], name="msg_conv_order"),
            models.Index(fields=["status"], name="msg_status"),
            # A run's messages (its follow-ups, the questions its end settles).
            models.Index(fields=["conversation", "run_id"], name="msg_conv_run"),
            # The pinned messages a summary covers, found without reading the others.
            models.Index(
                fields=["conversation", "created_at", "id"],
                condition=models.Q(pinned=True),
                name="msg_conv_pinned",
            ),
            # The hidden messages (another version shown): a message's place in the chat
            # is the messages before it in msg_conv_order, less these (docs/architecture.md,
            # "Search").
            models.Index(
                fields=["conversation", "created_at", "id"],
                condition=models.Q(superseded_by__isnull=False),
                name="msg_conv_hidden",
            ),
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


class ContextSummary(models.Model):
    """A persisted load-time summary: the next load starts from it."""

    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="summaries",
        verbose_name=_("conversation"),
    )
    # The newest message the summary covers; messages after it are loaded verbatim.
    covers_through = models.ForeignKey(
        Message, on_delete=models.CASCADE, related_name="+", verbose_name=_("covers through")
    )
    content = models.TextField(verbose_name=_("content"))
    covered_count = models.PositiveIntegerField(default=0, verbose_name=_("messages covered"))
    # Ids of messages up to ``covers_through`` the summary does NOT cover (pinned ones kept
    # verbatim, the verbatim tail before a pinned one): they are loaded after it.
    uncovered_ids = models.JSONField(
        default=list, blank=True, verbose_name=_("messages left out of it")
    )
    tokens = models.PositiveIntegerField(default=0, verbose_name=_("tokens"))
    # facts_appended / facts_missing (the fact check's lists), covered_tokens, original
    # (the model's text, once a user edited it), …
    metadata = models.JSONField(default=dict, blank=True, verbose_name=_("metadata"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created"))
    # A user's edit is used as it is; a discarded summary is never loaded again.
    edited_at = models.DateTimeField(null=True, blank=True, verbose_name=_("edited"))
    discarded_at = models.DateTimeField(null=True, blank=True, verbose_name=_("discarded"))

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = _("context summary")
        verbose_name_plural = _("context summaries")
        indexes = [models.Index(fields=["conversation", "-id"], name="summary_conv_newest")]

    def __str__(self) -> str:
        return f"Summary of {self.covered_count} messages in {self.conversation_id}"


class SearchDocument(models.Model):
    """One searchable text: a message, a tool result of a run, or a conversation's title, or
    one passage of a long one.

    Kept in step by ``chat.search.index`` (called by the services); the database's own
    full-text index over ``terms`` is created by a migration: an FTS5 table on SQLite, a
    GIN index on PostgreSQL (see docs/architecture.md).
    """

    class Kind(models.TextChoices):
        MESSAGE = "message"
        # A tool result: a passage of a stored whole one (``tool_result``), else the preview
        # an answer's ``metadata["steps"]`` keeps (runs before whole results were kept, DAG
        # step results).
        TOOL = "tool"
        TITLE = "title"
        DOCUMENT = "document"  # a page of a document sent with a user message or of a project file

    # A project file's passages belong to the project (searched from each of its
    # conversations), everything else to its conversation.
    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="search_documents",
    )
    project = models.ForeignKey(
        "chat.Project",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="search_documents",
    )
    # The project file a passage is of (deleting the file removes its passages at once).
    attachment = models.ForeignKey(
        "chat.Attachment",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="search_documents",
    )
    message = models.ForeignKey(
        Message, on_delete=models.CASCADE, null=True, blank=True, related_name="search_documents"
    )
    kind = models.CharField(max_length=8, choices=Kind.choices)
    # The tool's name, or a document's file name and page ("report.pdf, page 7").
    label = models.CharField(max_length=100, blank=True, default="")
    body = models.TextField()  # the text as it was written (one passage of it), quoted
    terms = models.TextField()  # ``chat.search.text.index_text(body)``: what is indexed
    # Where ``body`` starts in its source's text: a long text is indexed as passages
    # (``chat.search.passages``), each its own document.
    offset = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField()
    # The whole tool result this passage is of (``recall`` names its id).
    tool_result = models.ForeignKey(
        "ToolResult",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="search_documents",
    )

    class Meta:
        indexes = [
            models.Index(fields=["conversation", "kind"], name="searchdoc_conv_kind"),
            models.Index(fields=["project", "kind"], name="searchdoc_project_kind"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} in {self.conversation_id}: {self.body[:40]}"


class ToolResult(models.Model):
    """One tool call of a finished run and its whole result (a run's events and its
    ``metadata["steps"]`` keep previews only). The next runs' history carries each call as a
    compact record whose stub points here; ``recall`` with the record's id brings the whole
    result back (docs/architecture.md, "Context tiers")."""

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="tool_results"
    )
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="tool_results")
    call_id = models.CharField(max_length=200)
    name = models.CharField(max_length=200)
    arguments = models.TextField(blank=True, default="")
    content = models.TextField(blank=True, default="")
    chars = models.PositiveIntegerField(default=0)  # of the whole result
    first_line = models.CharField(max_length=300, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["message", "id"], name="toolresult_message")]

    def __str__(self) -> str:
        return f"{self.name} ({self.chars} chars) in {self.message_id}"

    @property
    def result_id(self) -> str:
        """The id a stub names (``recall`` with it brings the result back)."""
        return f"r{self.pk}"


class ToolApproval(models.Model):
    """A tool the user approved for the rest of a conversation: its later calls there run
    without asking (docs/protocol.md, "Tool approval")."""

    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="tool_approvals",
        verbose_name=_("conversation"),
    )
    tool_name = models.CharField(max_length=200, verbose_name=_("tool"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("approved"))

    class Meta:
        verbose_name = _("tool approval")
        verbose_name_plural = _("tool approvals")
        constraints = [
            models.UniqueConstraint(fields=["conversation", "tool_name"], name="tool_approval_once")
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} in {self.conversation_id}"


from chat.models.projects import Project  # noqa: E402, F401 — a model of this app
from chat.models.tool_servers import ToolServer  # noqa: E402, F401 — a model of this app
