"""The tools of a conversation (docs/protocol.md, "Tools of a conversation"): what a run of
it is offered, by source, and the per-conversation switch of a source. The composer's tools
menu reads and writes it."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.translation import gettext

from chat import selectors, tool_settings
from chat.api import api_view, read_json
from chat.errors import InvalidInput
from chat.runs import deps
from fimone.agent.tools import BUILTIN_SOURCE

DESCRIPTION_CHARS = 300


@api_view("GET", "PATCH")
def conversation_tools(request: HttpRequest, conversation_id: str) -> HttpResponse:
    conversation = selectors.conversation_get(user=request.user, conversation_id=conversation_id)
    if request.method == "PATCH":
        body = read_json(request)
        enabled = body.get("enabled")
        if not isinstance(enabled, bool):
            raise InvalidInput("invalid_enabled", gettext("enabled must be true or false."))
        tool_settings.tool_source_switch(
            user=request.user,
            conversation_id=conversation.pk,
            source=body.get("source"),
            enabled=enabled,
        )
    return JsonResponse({"sources": tool_sources(conversation.pk)})


@api_view("GET")
def tools_catalogue(request: HttpRequest) -> HttpResponse:
    """The tools of a conversation not started yet: every source on."""
    return JsonResponse({"sources": tool_sources(None)})


def source_label(source: str) -> str:
    if source == BUILTIN_SOURCE:
        return gettext("Built-in")
    if source.startswith("mcp:"):
        return source.removeprefix("mcp:") or source
    return source


def tool_sources(conversation_id: Any) -> list[dict[str, Any]]:
    """Every tool a run of the conversation may be offered, grouped by source (the
    switched-off ones included, marked), built-in first."""
    off, approved = frozenset(), set()
    if conversation_id is not None:
        off = tool_settings.disabled_tool_sources(conversation_id=conversation_id)
        approved = set(tool_settings.approved_tools(conversation_id=conversation_id))
    registry = deps.current().make_tools(conversation_id, before_id=0)
    groups: dict[str, list[dict[str, Any]]] = {}
    for tool in registry.tools():
        groups.setdefault(tool.source, []).append(
            {
                "name": tool.name,
                "description": tool.description[:DESCRIPTION_CHARS],
                "needs_approval": tool.needs_approval,
                "approved": tool.name in approved,
            }
        )
    order = sorted(groups, key=lambda s: (s != BUILTIN_SOURCE, s))
    # A source switched off whose tools are gone (a server removed from the config) is
    # still listed while it is off, so it can be switched on again.
    order += sorted(off - groups.keys())
    return [
        {
            "source": source,
            "label": source_label(source),
            "enabled": source not in off,
            "can_disable": source != BUILTIN_SOURCE,
            "tools": groups.get(source, []),
        }
        for source in order
    ]
