"""The tools of a conversation (docs/protocol.md, "Tools of a conversation"): what a run of
it is offered, by source — the built-in tools, the operator's extra tools and every tool
server (MCP) — and the per-conversation switch of a source. The composer's tools menu reads
and writes it.

Async views: a tool server's tools are listed through this process's shared connections
(``chat.tool_servers.pool``), which live on the server's event loop.
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.translation import gettext

from chat import selectors
from chat.api.plumbing import async_api_view, read_json
from chat.errors import InvalidInput
from chat.runs import deps
from chat.tools import settings as tool_settings
from fimone.agent.tools import BUILTIN_SOURCE, tool_switch_key
from fimone.agent.tools.mcp_config import ServerCap

logger = logging.getLogger(__name__)

DESCRIPTION_CHARS = 300


@async_api_view("GET", "PATCH")
async def conversation_tools(request: HttpRequest, conversation_id: str) -> HttpResponse:
    """GET the listing; PATCH ``{"source", "enabled"}`` switches a source, ``{"tool",
    "enabled"}`` one tool, then lists."""
    conversation = await sync_to_async(selectors.conversation_get)(
        user=request.user, conversation_id=conversation_id
    )
    if request.method == "PATCH":
        body = read_json(request)
        enabled = body.get("enabled")
        if not isinstance(enabled, bool):
            raise InvalidInput("invalid_enabled", gettext("enabled must be true or false."))
        which = {"tool": body["tool"]} if "tool" in body else {"source": body.get("source")}
        await sync_to_async(tool_settings.tool_source_switch)(
            user=request.user, conversation_id=conversation.pk, enabled=enabled, **which
        )
    return JsonResponse({"sources": await tool_sources(conversation.pk)})


@async_api_view("GET")
async def tools_catalogue(request: HttpRequest) -> HttpResponse:
    """The tools of a conversation not started yet: every source on."""
    return JsonResponse({"sources": await tool_sources(None)})


def source_label(source: str) -> str:
    if source == BUILTIN_SOURCE:
        return gettext("Built-in")
    if source.startswith("mcp:"):
        return source.removeprefix("mcp:") or source
    return source


def cap_note(cap: ServerCap) -> str:
    return gettext(
        "This server lists more tools than are offered: only its first %(count)d are "
        "(at most %(limit)d per server)."
    ) % {"count": cap.offered, "limit": cap.limit}


def _settings_and_local_tools(conversation_id: Any) -> tuple[frozenset[str], set[str], list]:
    off: frozenset[str] = frozenset()
    approved: set[str] = set()
    if conversation_id is not None:
        off = tool_settings.disabled_tool_sources(conversation_id=conversation_id)
        approved = set(tool_settings.approved_tools(conversation_id=conversation_id))
    registry = deps.current().make_tools(conversation_id, before_id=0)
    return off, approved, registry.tools()


async def tool_sources(conversation_id: Any) -> list[dict[str, Any]]:
    """Every tool a run of the conversation may be offered, grouped by source (the
    switched-off ones included, marked), built-in first; a tool server that cannot be
    listed right now is a source with its ``error`` and no tools; one that lists more tools
    than are offered has a ``note`` saying so."""
    off, approved, tools = await sync_to_async(_settings_and_local_tools)(conversation_id)
    errors: dict[str, str] = {}
    notes: dict[str, str] = {}
    try:
        served = await deps.current().server_tools(vision=False)
    except Exception as exc:  # the menu shows what it can; the log says why not more
        logger.warning("tools menu: the tool servers could not be listed: %s", exc)
    else:
        tools += [t for t in served.tools if t.name not in {x.name for x in tools}]
        # The reason is for staff (the admin's page, the log): users read a plain note.
        errors = {
            tool_settings.server_source(p.server): tool_settings.unavailable_in_menu(p.server)
            for p in served.problems
        }
        notes = {tool_settings.server_source(c.server): cap_note(c) for c in served.capped}
    groups: dict[str, list[dict[str, Any]]] = {}
    for tool in tools:
        groups.setdefault(tool.source, []).append(
            {
                "name": tool.name,
                "description": tool.description[:DESCRIPTION_CHARS],
                "needs_approval": tool.needs_approval,
                "approved": tool.name in approved,
                "enabled": tool_switch_key(tool.name) not in off,
            }
        )
    # A source switched off or failing with no tools listed is still shown, so it can be
    # switched (on again), and says why it offers nothing.
    names = set(groups) | set(errors) | set(off)
    order = sorted(names, key=lambda s: (s != BUILTIN_SOURCE, s))
    return [
        {
            "source": source,
            "label": source_label(source),
            "enabled": source not in off,
            "can_disable": source != BUILTIN_SOURCE,
            "tools": groups.get(source, []),
            **({"error": errors[source]} if source in errors else {}),
            **({"note": notes[source]} if source in notes else {}),
        }
        for source in order
    ]
