"""A conversation and its messages: the chat itself."""

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
    # JSON, contextmgmt.core.factstore.stored_facts; empty for rows stored before): a
    # compaction takes them instead of scanning the text again (docs/architecture.md,
    # "Compaction").
    facts = models.JSONField(default=dict, blank=True, editable=False, verbose_name=_("facts"))
    # The class counts of its content, counted when the content was stored
    # (contextmgmt.core.tokens.stored_counts; empty for rows never counted): a load gives
    # them to the message, which each model's budget weighs with its own weights, instead
    # of counting the text again (docs/tokens.md, "Counts stored with a message").
    token_counts = models.BinaryField(
        default=b"", blank=True, editable=False, verbose_name=_("token counts")
    )
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
