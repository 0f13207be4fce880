from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ContextmgmtConfig(AppConfig):
    name = "contextmgmt"
    verbose_name = _("Context management")
    default_auto_field = "django.db.models.BigAutoField"
