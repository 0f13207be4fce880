"""Django admin for conversations, messages, attachments, persisted summaries and
projects."""

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.utils.html import format_html
from django.utils.text import Truncator
from django.utils.translation import gettext_lazy as _

from chat.errors import InvalidInput
from chat.instructions import clean_instructions
from chat.models import Attachment, ContextSummary, Conversation, Message, Project
from chat.projects.selectors import with_counts
from chat.tool_servers import admin as tool_server_admin  # noqa: F401 — registers the tool servers' admin


class MessageInline(admin.TabularInline):
    model = Message
    fields = ("created_at", "role", "kind", "status", "pinned", "content")
    readonly_fields = fields
    extra = 0
    show_change_link = True
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


# A change list must fit a 1,280 px window beside the sidebar and the filters: a long
# title is cut to this many characters there, the whole of it in the cell's tooltip.
LIST_TEXT_CHARS = 32


def shortened(text: str) -> str:
    """``text`` cut for a change-list cell, the whole of it in the cell's ``title``."""
    cut = Truncator(text).chars(LIST_TEXT_CHARS)
    return format_html('<span class="list-short" title="{}">{}</span>', text, cut)


class InstructionsForm(forms.ModelForm):
    """Instructions saved by staff keep the limit the API keeps (docs/projects.md): they go
    whole into every model call."""

    def clean_instructions(self) -> str:
        try:
            return clean_instructions(self.cleaned_data.get("instructions") or "")
        except InvalidInput as exc:
            raise ValidationError(exc.message, code=exc.code) from exc


class ConversationForm(InstructionsForm):
    """A conversation stays in a project of its own owner: another user's project would
    hand its instructions and files to a stranger's runs."""

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        project, owner = cleaned.get("project"), cleaned.get("owner")
        if project is not None and owner is not None and project.owner_id != owner.pk:
            self.add_error(
                "project", _("The project belongs to another user than the conversation.")
            )
        return cleaned


class ProjectForm(InstructionsForm):
    """A project's owner stays while it has conversations or files: they are the owner's
    (their attachments too), and would be another user's knowledge under a new owner."""

    def clean_owner(self):
        owner = self.cleaned_data.get("owner")
        project = self.instance
        if project.pk is None or owner is None or owner.pk == project.owner_id:
            return owner
        in_use = (
            Conversation.objects.filter(project=project).exists()
            or Attachment.objects.filter(project=project).exists()
        )
        if in_use:
            raise ValidationError(
                _("A project with conversations or files keeps its owner."), code="owner_kept"
            )
        return owner


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    form = ConversationForm
    list_display = ("short_title", "owner", "short_project", "mode", "created_at", "updated_at")
    list_filter = ("mode", "created_at", "updated_at")
    search_fields = ("title", "owner__username", "id", "project__name")
    list_select_related = ("owner", "project")
    readonly_fields = ("id", "created_at", "updated_at")
    raw_id_fields = ("owner", "project")
    date_hierarchy = "created_at"
    inlines = [MessageInline]

    @admin.display(description=Conversation._meta.get_field("title").verbose_name, ordering="title")
    def short_title(self, conversation: Conversation) -> str:
        return shortened(str(conversation))

    @admin.display(
        description=Conversation._meta.get_field("project").verbose_name, ordering="project__name"
    )
    def short_project(self, conversation: Conversation) -> str:
        return shortened(conversation.project.name) if conversation.project else "–"


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ("id", "short_conversation", "role", "kind", "status", "pinned", "created_at")
    list_filter = ("role", "kind", "status", "pinned", "created_at")
    search_fields = ("content", "conversation__title", "conversation__id")
    list_select_related = ("conversation",)
    readonly_fields = ("created_at",)
    raw_id_fields = ("conversation",)

    @admin.display(description=Message._meta.get_field("conversation").verbose_name)
    def short_conversation(self, message: Message) -> str:
        return shortened(str(message.conversation))


@admin.register(Attachment)
class AttachmentAdmin(admin.ModelAdmin):
    list_display = (
        "short_id", "owner", "short_conversation", "kind", "mime_type", "size",
    )  # fmt: skip
    list_filter = ("kind", "mime_type", "created_at")
    search_fields = ("id", "original_name", "sha256", "owner__username")
    list_select_related = ("owner", "conversation", "project")
    # The file is validated on upload; the admin must not swap in an unchecked one. A
    # document's text was extracted from it once: shown by its outline, never edited.
    readonly_fields = (
        "id", "file", "original_name", "kind", "mime_type", "size", "width", "height", "sha256",
        "page_count", "text_tokens", "outline", "created_at",
    )  # fmt: skip
    exclude = ("document",)
    raw_id_fields = ("owner", "conversation", "project", "message")

    def has_add_permission(self, request) -> bool:
        return False

    @admin.display(description="ID", ordering="id")
    def short_id(self, attachment: Attachment) -> str:
        # A UUID would break inside itself in a narrow column; its first block tells rows apart.
        return format_html(
            '<span class="list-short" title="{}">{}</span>', attachment.id, str(attachment.id)[:8]
        )

    @admin.display(description=_("conversation or project"))
    def short_conversation(self, attachment: Attachment) -> str:
        # A file has one home: a conversation's upload or a project's file.
        if attachment.project is not None:
            return shortened(f"{Project._meta.verbose_name}: {attachment.project}")
        return shortened(str(attachment.conversation))


@admin.register(ContextSummary)
class ContextSummaryAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "short_conversation",
        "covered_count",
        "tokens",
        "created_at",
        "discarded_at",
    )  # edited_at: in the filter and on the form, no room in the list
    list_filter = ("created_at", "edited_at", "discarded_at")
    search_fields = ("conversation__id", "conversation__title", "content")
    list_select_related = ("conversation",)
    readonly_fields = ("created_at",)
    raw_id_fields = ("conversation", "covers_through")

    @admin.display(description=ContextSummary._meta.get_field("conversation").verbose_name)
    def short_conversation(self, summary: ContextSummary) -> str:
        return shortened(str(summary.conversation))


class ProjectFileInline(admin.TabularInline):
    """A project's files as uploaded: validated and extracted once, so read-only here."""

    model = Attachment
    fk_name = "project"
    fields = ("original_name", "kind", "mime_type", "size", "page_count", "created_at")
    readonly_fields = fields
    extra = 0
    show_change_link = True
    can_delete = False
    verbose_name = _("file")
    verbose_name_plural = _("files")

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def get_queryset(self, request):
        return super().get_queryset(request).defer("document")


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    form = ProjectForm
    list_display = ("short_name", "owner", "conversations", "files", "updated_at")
    list_filter = ("created_at", "updated_at")
    search_fields = ("name", "owner__username")
    list_select_related = ("owner",)
    readonly_fields = ("created_at", "updated_at")
    raw_id_fields = ("owner", "model_config")
    inlines = [ProjectFileInline]

    def get_queryset(self, request):
        return with_counts(super().get_queryset(request))

    @admin.display(description=Project._meta.get_field("name").verbose_name, ordering="name")
    def short_name(self, project: Project) -> str:
        return shortened(str(project))

    # ``project`` comes from ``get_queryset``: its counts are columns of the query.
    @admin.display(description=_("conversations"), ordering="conversation_count")
    def conversations(self, project: Any) -> int:
        return project.conversation_count

    @admin.display(description=_("files"), ordering="file_count")
    def files(self, project: Any) -> int:
        return project.file_count
