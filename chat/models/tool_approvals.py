"""Tools a user approved for a conversation (docs/protocol.md, "Tool approval")."""

from django.db import models
from django.utils.translation import gettext_lazy as _

from chat.models.conversations import Conversation


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
