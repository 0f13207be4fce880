from django.apps import AppConfig


class ContextmgmtConfig(AppConfig):
    name = "contextmgmt"
    verbose_name = "Context management"
    default_auto_field = "django.db.models.BigAutoField"
