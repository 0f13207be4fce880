"""Projects: instructions and knowledge files shared by a set of conversations
(docs/projects.md).

A project's instructions, then a conversation's own, go whole into every model call of its
conversations; its files are attachments of the project (``Attachment.project``), inline
while small and searched or read in parts when large. The context core knows nothing of
projects: the run's preparation hands it the instructions and the files.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class Project(models.Model):
    REMOVED_FILES_KEPT = 50

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="projects",
        verbose_name=_("owner"),
    )
    name = models.CharField(max_length=200, verbose_name=_("name"))
    # Sent whole, before the conversation's own, in the system part of every model call of
    # the project's conversations; never compacted (docs/projects.md).
    instructions = models.TextField(blank=True, default="", verbose_name=_("instructions"))
    # The model a new conversation of the project starts with; empty: the configured default.
    model_config = models.ForeignKey(
        "contextmgmt.ModelConfig",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("default model"),
    )
    # Or the built-in offline model (then ``model_config`` is empty), as a conversation's.
    builtin_model = models.BooleanField(default=False, verbose_name=_("built-in model"))
    # The tool sources a new conversation of the project starts with switched off (the
    # conversation's own ``disabled_tool_sources`` then decides).
    disabled_tool_sources = models.JSONField(
        default=list, blank=True, verbose_name=_("tool sources switched off")
    )
    # The files removed from the project, newest last ({"id", "name"}; the last
    # REMOVED_FILES_KEPT): ``read_document`` says such a file was removed rather than that
    # it never existed.
    removed_files = models.JSONField(default=list, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated"))

    class Meta:
        verbose_name = _("project")
        verbose_name_plural = _("projects")
        ordering = ["-updated_at", "-id"]
        indexes = [models.Index(fields=["owner", "-updated_at"], name="project_owner_updated")]

    def __str__(self) -> str:
        return self.name or f"Project {self.pk}"
