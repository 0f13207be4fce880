"""The admin of tool servers (MCP): who may do what is in docs/operations.md, "Tools: who
may do what".

- Servers of the operator's file are listed with their definition read-only (a stdio
  server's command is the file's alone); their switch, tool allow-list, approvals and
  timeout are the admin's.
- Only streamable-HTTP servers can be added here. Adding one, or changing a URL, headers
  or whether a server is on, needs the permission "Can add tool servers and change their
  URL, headers and enabling" besides the model's own; without it those fields are shown
  read-only. View-only staff change nothing and run no action.
- A header naming an environment variable off the key allow-list is refused on save, and
  so is a URL whose host is (or resolves to) an address ``fetch_url`` may not reach:
  loopback, this machine, private networks, metadata services — unless the operator
  allowed it in ``FIMONE_FETCH_ALLOWED_HOSTS``. Every connection checks it again.
"""

from __future__ import annotations

from asgiref.sync import async_to_sync
from django import forms
from django.contrib import admin, messages
from django.utils import formats
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from chat.models.tool_servers import ToolServer
from chat.tool_servers import pool as tool_servers
from contextmgmt.secrets import secret_env_refusal
from fimone.agent.tools.mcp_config import secret_names

CONNECTION_PERMISSION = "chat.change_tool_server_connection"
CONNECTION_FIELDS = ("url", "headers", "enabled")


ALL_TOOLS = "*"


def _listed_choices(row: ToolServer) -> list[tuple[str, str]]:
    """The tools a row's server listed (its last full listing), with the names its rules
    already hold, as checkbox choices labelled with their descriptions."""
    described = {
        entry["name"]: entry.get("description") or ""
        for entry in row.listed_tools or []
        if isinstance(entry, dict) and isinstance(entry.get("name"), str)
    }
    for name in (row.allowed_set or set()) | row.approval_set:
        if name != ALL_TOOLS:
            described.setdefault(name, "")
    return [
        (name, f"{name} — {text[:120]}" if text else name)
        for name, text in sorted(described.items())
    ]


class ToolServerForm(forms.ModelForm):
    """A server whose tools are known (listed once: by a run or the "test connection"
    action) has a checkbox per tool for "offered" and for "needs approval"; until then the
    rules are names typed one per line."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        row = self.instance
        choices = _listed_choices(row) if row.pk is not None else []
        if not choices:
            return
        names = [name for name, _ in choices]
        if "allowed_tools" in self.fields and not self.fields["allowed_tools"].disabled:
            self.fields["allowed_tools"] = forms.MultipleChoiceField(
                choices=choices,
                required=False,
                widget=forms.CheckboxSelectMultiple,
                label=gettext("offered tools"),
                help_text=gettext(
                    "Every tool checked is offered; with all checked, tools the server adds "
                    "later are offered too."
                ),
                initial=sorted(row.allowed_set) if row.allowed_set else names,
            )
        if "approval_tools" in self.fields and not self.fields["approval_tools"].disabled:
            self.fields["approval_tools"] = forms.MultipleChoiceField(
                choices=[(ALL_TOOLS, gettext("every tool (*)")), *choices],
                required=False,
                widget=forms.CheckboxSelectMultiple,
                label=gettext("tools that need approval"),
                help_text=gettext("The user approves each call of a tool checked here."),
                initial=sorted(row.approval_set),
            )
        self._listed_names = names

    def clean_allowed_tools(self):
        value = self.cleaned_data.get("allowed_tools")
        if not isinstance(value, list):
            return value
        if not value:
            raise forms.ValidationError(
                gettext("Check at least one tool, or switch the server off.")
            )
        # All checked: every tool, those the server adds later too (a blank allow-list).
        return "" if set(value) >= set(self._listed_names) else "\n".join(sorted(value))

    def clean_approval_tools(self):
        value = self.cleaned_data.get("approval_tools")
        return "\n".join(sorted(value)) if isinstance(value, list) else value

    class Meta:
        model = ToolServer
        fields = (
            "name",
            "url",
            "headers",
            "enabled",
            "allowed_tools",
            "approval_tools",
            "timeout_seconds",
        )

    def clean_headers(self):
        headers = self.cleaned_data.get("headers") or {}
        if not isinstance(headers, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
        ):
            raise forms.ValidationError(
                gettext('Headers are an object of names and texts, e.g. {"X-Team": "docs"}.')
            )
        refusals = [
            secret_env_refusal(name) for value in headers.values() for name in secret_names(value)
        ]
        refusals = [r for r in refusals if r]
        if refusals:
            raise forms.ValidationError(refusals)
        return headers

    def clean_url(self):
        url = self.cleaned_data.get("url") or ""
        refusal = tool_servers.url_refusal(url) if url else None
        if refusal is not None:
            raise forms.ValidationError(
                gettext("This URL cannot be used: %(reason)s.") % {"reason": refusal}
            )
        return url

    def clean_timeout_seconds(self):
        timeout = self.cleaned_data.get("timeout_seconds")
        if timeout is not None and not 0 < timeout <= 3600:
            raise forms.ValidationError(gettext("Use a number of seconds between 0 and 3600."))
        return timeout

    def clean(self):
        super().clean()
        cleaned = self.cleaned_data
        row = self.instance
        adding = row.pk is None
        if adding or row.source == ToolServer.Source.ADMIN:
            if "url" in self.fields and not cleaned.get("url"):
                self.add_error("url", gettext("A streamable-HTTP server needs its URL."))
        if adding:
            names = {spec.name for spec in tool_servers.read_config_file().servers}
            if cleaned.get("name") in names:
                self.add_error(
                    "name", gettext("The configuration file already defines a server of this name.")
                )
        return cleaned


@admin.register(ToolServer)
class ToolServerAdmin(admin.ModelAdmin):
    form = ToolServerForm
    list_display = ("name", "source", "transport", "enabled", "definition", "health", "tool_rules")
    list_filter = ("source", "transport", "enabled")
    search_fields = ("name", "url")
    actions = ["test_connection", "switch_on", "switch_off"]

    # -- what may be seen and changed ----------------------------------------------------

    def has_connection_permission(self, request) -> bool:
        return request.user.has_perm(CONNECTION_PERMISSION)

    def has_add_permission(self, request) -> bool:
        return super().has_add_permission(request) and self.has_connection_permission(request)

    def has_delete_permission(self, request, obj=None) -> bool:
        if obj is not None and obj.source == ToolServer.Source.FILE:
            return False  # it is the file's; switch it off instead
        return super().has_delete_permission(request, obj) and self.has_connection_permission(
            request
        )

    def get_fields(self, request, obj=None):
        if obj is not None and obj.source == ToolServer.Source.ADMIN:
            return (
                "name",
                "url",
                "headers",
                "health",
                "enabled",
                "allowed_tools",
                "approval_tools",
                "timeout_seconds",
            )
        if obj is not None and obj.source == ToolServer.Source.FILE:
            return (
                "name",
                "transport",
                "definition",
                "health",
                "enabled",
                "allowed_tools",
                "approval_tools",
                "timeout_seconds",
            )
        return super().get_fields(request, obj)

    def get_readonly_fields(self, request, obj=None):
        readonly = ["definition", "transport", "health"] if obj is not None else []
        if obj is not None:
            readonly.append("name")  # the name prefixes the tools' names in stored answers
        if not self.has_connection_permission(request):
            readonly.extend(CONNECTION_FIELDS)
        return readonly

    # -- the list --------------------------------------------------------------------------

    def changelist_view(self, request, extra_context=None):
        # Every server of the file has a row to switch, from the first look on.
        tool_servers.sync_file_rows(tool_servers.read_config_file())
        return super().changelist_view(request, extra_context)

    @admin.display(description=_("definition"))
    def definition(self, row: ToolServer) -> str:
        if row.source == ToolServer.Source.ADMIN:
            return row.url
        spec = next(
            (s for s in tool_servers.read_config_file().servers if s.name == row.name), None
        )
        if spec is None:
            return gettext("(no longer in the configuration file: not used)")
        if spec.transport == "stdio":
            env = ", ".join(k for k, _ in spec.env)  # names only: values may be secrets
            command = " ".join([spec.command, *spec.args])
            return f"{command}  [env: {env}]" if env else command
        header_names = ", ".join(k for k, _ in spec.headers)
        return f"{spec.url}  [headers: {header_names}]" if header_names else spec.url

    @admin.display(description=_("health"))
    def health(self, row: ToolServer) -> str:
        parts = []
        if row.last_listed_at is not None:
            parts.append(
                ngettext(
                    "listed %(when)s: %(count)d tool",
                    "listed %(when)s: %(count)d tools",
                    row.tool_count or 0,
                )
                % {
                    "when": formats.date_format(row.last_listed_at, "SHORT_DATETIME_FORMAT"),
                    "count": row.tool_count or 0,
                }
            )
        if row.last_error_at is not None:
            parts.append(
                gettext("last error %(when)s: %(error)s")
                % {
                    "when": formats.date_format(row.last_error_at, "SHORT_DATETIME_FORMAT"),
                    "error": row.last_error,
                }
            )
        return "; ".join(parts) or gettext("not listed yet")

    @admin.display(description=_("tools"))
    def tool_rules(self, row: ToolServer) -> str:
        allowed = ", ".join(sorted(row.allowed_set or ())) or gettext("all")
        approval = ", ".join(sorted(row.approval_set)) or "-"
        return gettext("offered: %(allowed)s; approval: %(approval)s") % {
            "allowed": allowed,
            "approval": approval,
        }

    # -- saving and actions ----------------------------------------------------------------

    def save_model(self, request, obj, form, change) -> None:
        if not change:
            obj.source, obj.transport = ToolServer.Source.ADMIN, ToolServer.Transport.HTTP
        super().save_model(request, obj, form, change)
        tool_servers.forget_cached_servers()

    def delete_model(self, request, obj) -> None:
        super().delete_model(request, obj)
        tool_servers.forget_cached_servers()

    def _switch(self, request, queryset, enabled: bool) -> None:
        count = queryset.update(enabled=enabled)
        tool_servers.forget_cached_servers()
        text = (
            ngettext(
                "%(count)d tool server switched on.", "%(count)d tool servers switched on.", count
            )
            if enabled
            else ngettext(
                "%(count)d tool server switched off.", "%(count)d tool servers switched off.", count
            )
        )
        self.message_user(request, text % {"count": count}, messages.SUCCESS)

    @admin.action(
        description=_("Test the connection of the selected servers"), permissions=["test"]
    )
    def test_connection(self, request, queryset) -> None:
        """Start or connect to each server, list its tools and keep what was found (its
        health, and its tools for the checkboxes)."""
        for row in queryset:
            try:
                spec = tool_servers.spec_for_row(row)
            except ValueError as exc:
                spec, reason = None, str(exc)
            else:
                reason = gettext("it is no longer in the configuration file")
            if spec is None:
                self.message_user(
                    request,
                    gettext("%(server)s: cannot be tested: %(reason)s")
                    % {"server": row.name, "reason": reason},
                    messages.ERROR,
                )
                continue
            found = async_to_sync(tool_servers.test_connection)(spec)
            tool_servers.record_health(health=found, full_listing=True)
            if found.ok:
                self.message_user(
                    request,
                    ngettext(
                        "%(server)s answers: %(count)d tool listed.",
                        "%(server)s answers: %(count)d tools listed.",
                        len(found.tools),
                    )
                    % {"server": row.name, "count": len(found.tools)},
                    messages.SUCCESS,
                )
            else:
                self.message_user(
                    request,
                    gettext("%(server)s does not answer: %(error)s")
                    % {"server": row.name, "error": found.error},
                    messages.ERROR,
                )

    def has_test_permission(self, request) -> bool:
        return self.has_change_permission(request)

    @admin.action(description=_("Switch the selected servers on"), permissions=["connection"])
    def switch_on(self, request, queryset) -> None:
        self._switch(request, queryset, True)

    @admin.action(description=_("Switch the selected servers off"), permissions=["connection"])
    def switch_off(self, request, queryset) -> None:
        self._switch(request, queryset, False)
