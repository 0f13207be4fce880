"""The full-text index's documents (docs/architecture.md, "Search")."""

from django.db import models

from chat.models.conversations import Conversation, Message


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
