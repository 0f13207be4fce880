from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = _("Chat")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Receivers that remove attachment files on every delete path.
        from chat import signals  # noqa: F401

        # DbMemory (contextmgmt) reads a conversation's messages through this loader: the
        # lower layer never imports the chat app.
        from chat.history import load_history
        from contextmgmt.db_memory import register_history_loader

        register_history_loader(load_history)

        # A bad fetch allow-list stops start-up with its name rather than failing each run.
        from chat.tool_servers.pool import max_tools
        from chat.tools.fetch import check_settings

        check_settings()
        max_tools()
