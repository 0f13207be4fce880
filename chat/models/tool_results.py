"""The whole results of earlier runs' tool calls (docs/architecture.md, "Context tiers")."""

from django.db import models

from chat.models.conversations import Conversation, Message


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
