"""Tool servers (MCP) as the admin sees them (docs/tools.md, docs/operations.md).

A row either mirrors a server of the operator's ``FIMONE_MCP_CONFIG`` file (``source
"file"``: stdio or HTTP; its command, arguments, environment, URL and headers are read from
the file every time and never stored here) or is a streamable-HTTP server an admin added
(``source "admin"``). There is no field for a command: no row, whoever writes it, can make
this machine run a program. What a row holds for either kind: whether it is on, which of
its tools are offered, which need the user's approval, and the call timeout.
"""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

SERVER_NAME_VALIDATOR = RegexValidator(
    r"^[a-zA-Z0-9_-]{1,40}$",
    _("Use 1-40 letters, digits, '_' or '-' (the name prefixes the server's tool names)."),
)


def _names(text: str) -> frozenset[str]:
    return frozenset(line.strip() for line in (text or "").splitlines() if line.strip())


class ToolServer(models.Model):
    class Source(models.TextChoices):
        FILE = "file", _("configuration file")
        ADMIN = "admin", _("admin")

    class Transport(models.TextChoices):
        STDIO = "stdio", _("stdio (a child process)")
        HTTP = "http", _("streamable HTTP")

    name = models.CharField(
        max_length=40, unique=True, validators=[SERVER_NAME_VALIDATOR], verbose_name=_("name")
    )
    source = models.CharField(
        max_length=8,
        choices=Source.choices,
        default=Source.ADMIN,
        editable=False,
        verbose_name=_("defined in"),
    )
    transport = models.CharField(
        max_length=8,
        choices=Transport.choices,
        default=Transport.HTTP,
        editable=False,
        verbose_name=_("transport"),
    )
    url = models.URLField(
        max_length=500,
        blank=True,
        default="",
        verbose_name=_("URL"),
        help_text=_("The server's streamable-HTTP endpoint, e.g. https://mcp.example.com/mcp."),
    )
    headers = models.JSONField(
        default=dict,
        blank=True,
        verbose_name=_("headers"),
        help_text=_(
            'Sent with every request, e.g. {"Authorization": "Bearer ${GITHUB_API_KEY}"}. '
            "A secret is named as ${VARIABLE}, an environment variable on the server's "
            "allow-list; it is never stored here."
        ),
    )
    enabled = models.BooleanField(default=True, verbose_name=_("enabled"))
    allowed_tools = models.TextField(
        blank=True,
        default="",
        verbose_name=_("allowed tools"),
        help_text=_("One tool name per line; blank offers every tool the server lists."),
    )
    approval_tools = models.TextField(
        blank=True,
        default="",
        verbose_name=_("tools that need approval"),
        help_text=_("One tool name per line (* for all): the user approves each call."),
    )
    timeout_seconds = models.FloatField(default=60.0, verbose_name=_("call timeout (seconds)"))
    # Its health as this server last saw it (chat.tool_servers.pool.record_health): written when
    # a listing succeeds or fails differently from before, and by the admin's test.
    listed_tools = models.JSONField(
        default=list, blank=True, editable=False, verbose_name=_("tools listed")
    )
    tool_count = models.IntegerField(null=True, editable=False, verbose_name=_("tool count"))
    last_listed_at = models.DateTimeField(null=True, editable=False, verbose_name=_("last listing"))
    last_error = models.TextField(
        blank=True, default="", editable=False, verbose_name=_("last error")
    )
    last_error_at = models.DateTimeField(null=True, editable=False, verbose_name=_("last error at"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated"))

    class Meta:
        app_label = "chat"
        ordering = ["name"]
        verbose_name = _("tool server")
        verbose_name_plural = _("tool servers")
        permissions = [
            (
                "change_tool_server_connection",
                _("Can add tool servers and change their URL, headers and enabling"),
            )
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs) -> None:
        # Only the configuration file defines a stdio server; a row never can.
        if self.source != self.Source.FILE and self.transport != self.Transport.HTTP:
            raise ValueError("only the configuration file can define a stdio tool server")
        super().save(*args, **kwargs)

    @property
    def allowed_set(self) -> frozenset[str] | None:
        return _names(self.allowed_tools) or None

    @property
    def approval_set(self) -> frozenset[str]:
        return _names(self.approval_tools)
