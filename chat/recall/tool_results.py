"""The ``recall`` tool's whole results: an earlier run's tool result brought back by the id
its compact record names (docs/architecture.md, "Context tiers")."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from asgiref.sync import sync_to_async

from chat.models import ToolResult
from fimone.agent.tools import KeptResult


def stored_tool_result(*, conversation_id, result_id: str) -> KeptResult | None:
    """An earlier run's whole tool result by the id its record's stub names (``r<pk>``), or
    by its call id (the newest with it); only of this conversation. Sync: ORM."""
    rows = ToolResult.objects.filter(conversation_id=conversation_id)
    if result_id.startswith("r") and result_id[1:].isdigit():
        row = rows.filter(pk=int(result_id[1:])).first()
    else:
        row = rows.filter(call_id=result_id).order_by("-id").first()
    if row is None:
        return None
    return KeptResult(row.result_id, row.name, row.arguments, row.content)


def tool_result_for(conversation_id) -> Callable[[str], Awaitable[KeptResult | None]]:
    """The ``async fetch_result(id)`` the ``recall`` tool brings a masked result back with."""

    async def fetch_result(result_id: str) -> KeptResult | None:
        return await sync_to_async(stored_tool_result)(
            conversation_id=conversation_id, result_id=result_id
        )

    return fetch_result
