"""Persisted load-time summaries of a conversation (docs/architecture.md, "Compaction")."""

from django.db import models
from django.utils.translation import gettext_lazy as _

from chat.models.conversations import Conversation, Message


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
