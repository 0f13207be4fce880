"""Django admin for conversations, messages, attachments and persisted summaries."""

from django.contrib import admin

from chat.models import Attachment, ContextSummary, Conversation, Message
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


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ("__str__", "owner", "mode", "created_at", "updated_at")
    list_filter = ("mode", "created_at", "updated_at")
    search_fields = ("title", "owner__username", "id")
    list_select_related = ("owner",)
    readonly_fields = ("id", "created_at", "updated_at")
    raw_id_fields = ("owner",)
    date_hierarchy = "created_at"
    inlines = [MessageInline]


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ("id", "conversation", "role", "kind", "status", "pinned", "created_at")
    list_filter = ("role", "kind", "status", "pinned", "created_at")
    search_fields = ("content", "conversation__title", "conversation__id")
    list_select_related = ("conversation",)
    readonly_fields = ("created_at",)
    raw_id_fields = ("conversation",)


@admin.register(Attachment)
class AttachmentAdmin(admin.ModelAdmin):
    list_display = (
        "id", "owner", "conversation", "kind", "mime_type", "size", "width", "height", "page_count",
    )  # fmt: skip
    list_filter = ("kind", "mime_type", "created_at")
    search_fields = ("id", "original_name", "sha256", "owner__username")
    list_select_related = ("owner", "conversation")
    # The file is validated on upload; the admin must not swap in an unchecked one. A
    # document's text was extracted from it once: shown by its outline, never edited.
    readonly_fields = (
        "id", "file", "original_name", "kind", "mime_type", "size", "width", "height", "sha256",
        "page_count", "text_tokens", "outline", "created_at",
    )  # fmt: skip
    exclude = ("document",)
    raw_id_fields = ("owner", "conversation", "message")

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(ContextSummary)
class ContextSummaryAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "conversation",
        "covered_count",
        "tokens",
        "created_at",
        "edited_at",
        "discarded_at",
    )
    list_filter = ("created_at", "edited_at", "discarded_at")
    search_fields = ("conversation__id", "conversation__title", "content")
    list_select_related = ("conversation",)
    readonly_fields = ("created_at",)
    raw_id_fields = ("conversation", "covers_through")
