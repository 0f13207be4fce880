"""A conversation's tool settings: the tools the user approved for the whole conversation
and the tool sources switched off in it (selectors and services, sync: call them through
``database_sync_to_async`` from async code)."""

from __future__ import annotations

from typing import Any, TypeGuard

from django.db import IntegrityError, transaction
from django.utils.translation import gettext

from chat.errors import ChatError, InvalidInput, check_storable
from chat.models import Conversation, ToolApproval
from chat.selectors import conversation_get
from fimone.agent.tools import BUILTIN_SOURCE, tool_switch_key

MAX_SOURCE_CHARS = 200


def tool_approved(*, conversation_id: Any, tool_name: str) -> bool:
    """Whether the user approved ``tool_name`` for the rest of the conversation."""
    return ToolApproval.objects.filter(
        conversation_id=conversation_id, tool_name=tool_name
    ).exists()


def tool_approve_for_conversation(*, conversation_id: Any, tool_name: str) -> None:
    """Remember that later calls of ``tool_name`` in the conversation run without asking."""
    try:
        with transaction.atomic():
            ToolApproval.objects.get_or_create(conversation_id=conversation_id, tool_name=tool_name)
    except IntegrityError:
        pass  # approved a moment ago by another request: remembered all the same


def approved_tools(*, conversation_id: Any) -> list[str]:
    return sorted(
        ToolApproval.objects.filter(conversation_id=conversation_id).values_list(
            "tool_name", flat=True
        )
    )


def switched_off(conversation: Conversation) -> frozenset[str]:
    """The tool sources switched off in a loaded conversation."""
    return _sources(conversation.disabled_tool_sources)


def disabled_tool_sources(*, conversation_id: Any) -> frozenset[str]:
    """The tool sources switched off in the conversation (none for an unknown one)."""
    row = (
        Conversation.objects.filter(pk=conversation_id)
        .values_list("disabled_tool_sources", flat=True)
        .first()
    )
    return _sources(row)


def _sources(stored: Any) -> frozenset[str]:
    return frozenset(str(s) for s in stored or [] if isinstance(s, str))


def nameable(name: Any) -> TypeGuard[str]:
    """A name a tool or tool source may have, in text the database stores: PostgreSQL's
    jsonb holds neither a NUL nor a lone surrogate."""
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_SOURCE_CHARS:
        return False
    try:
        check_storable(name, "name")
    except InvalidInput:
        return False
    return True


@transaction.atomic
def tool_source_switch(
    *, user, conversation_id: Any, source: str | None = None, tool: str | None = None, enabled: bool
) -> frozenset[str]:
    """Switch a tool source, or one tool (``tool``, its name; built-in ones too), on or off
    for one conversation (the owner's only); returns the entries now off. The built-in
    tools as a source cannot be switched off (``bad_tool_source``), each of them can."""
    if tool is not None:
        if not nameable(tool):
            raise ChatError("bad_tool_source", gettext("Name a tool to switch."))
        entry = tool_switch_key(tool)
    else:
        if not nameable(source):
            raise ChatError("bad_tool_source", gettext("Name a tool source to switch."))
        if source == BUILTIN_SOURCE:
            raise ChatError(
                "bad_tool_source", gettext("The built-in tools cannot be switched off.")
            )
        entry = source
    conversation = conversation_get(user=user, conversation_id=conversation_id)
    conversation = Conversation.objects.select_for_update().get(pk=conversation.pk)
    off = {str(s) for s in conversation.disabled_tool_sources or [] if isinstance(s, str)}
    if enabled:
        off.discard(entry)
    else:
        off.add(entry)
    conversation.disabled_tool_sources = sorted(off)
    # Not ``updated_at``: switching a source is no activity that reorders the list.
    Conversation.objects.filter(pk=conversation.pk).update(
        disabled_tool_sources=conversation.disabled_tool_sources
    )
    return frozenset(off)


def server_source(server: str) -> str:
    """The ``Tool.source`` of a tool server's tools (as fimone.agent.tools.mcp_client names
    it), so a server that failed can be matched with the switch of its source."""
    return f"mcp:{server}"


def unavailable_note(server: str) -> str:
    """What a user reads of a tool server that could not be reached: no error text, which
    may show paths, addresses or a stack of exceptions (staff read it in the admin)."""
    return gettext(
        "The %(server)s tool server is unavailable right now; the answer goes on without its tools."
    ) % {"server": server}


def unavailable_in_menu(server: str) -> str:
    """The tools menu's word on a tool server that could not be listed."""
    return gettext("The %(server)s tool server is unavailable right now.") % {"server": server}
