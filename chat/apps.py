from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Receivers that remove attachment files on every delete path.
        from chat import signals  # noqa: F401
