"""A run waiting for the user to approve a tool call (docs/protocol.md, "Tool approval").

The engine calls ``ask`` (handed to it as ``AgentContext.approve``) before it runs a tool
marked ``needs_approval``. Unless the user approved that tool for the whole conversation
(a ``ToolApproval`` row), the run tells every socket of the conversation
``tool.approval {request_id, …}`` and waits. The answer, an ``approval`` frame from any
socket of any server process, reaches the run through its control group like a cancel
(``control.send_approval`` → the run's listener → ``RunApprovals.resolve``); every socket
is then told ``tool.approval.resolved``. The request is part of the run's record, so a
socket that joins while the run waits (a second tab, a reload, a reconnect) gets it with
``run.active``.

No answer within ``FIMONE_TOOL_APPROVAL_SECONDS``: the run is stopped as by the user's Stop
and ends ``cancelled``, its answer noting why (``finish``). Stop while waiting ends the wait
like any other await of the run.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings

from chat.tools import settings as tool_settings
from fimone.agent import ApprovalRequest, Decision
from fimone.agent.approval import DECISIONS
from fimone.agent.loop import preview

REQUESTED = "tool.approval"
RESOLVED = "tool.approval.resolved"
# The decisions a request can end with besides the user's (DECISIONS).
TIMED_OUT = "timed_out"
STOPPED = "cancelled"
DESCRIPTION_CHARS = 300


def approval_seconds() -> float:
    return float(settings.FIMONE_TOOL_APPROVAL_SECONDS)


class RunApprovals:
    """One run's requests waiting for an answer, and what it learnt while it ran."""

    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[Decision]] = {}
        # Tools approved for the conversation during this run: asked no more.
        self.approved: set[str] = set()
        # A request went unanswered for too long: the run was stopped for it.
        self.timed_out: dict[str, Any] | None = None

    def open(self, request_id: str) -> asyncio.Future[Decision]:
        future: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        return future

    def close(self, request_id: str) -> None:
        self._waiting.pop(request_id, None)

    def resolve(self, request_id: Any, decision: Any) -> bool:
        """The user's answer; False when no such request waits (answered already, timed
        out, or another run's)."""
        future = self._waiting.get(request_id) if isinstance(request_id, str) else None
        if future is None or future.done() or decision not in DECISIONS:
            return False
        future.set_result(decision)
        return True

    def pending(self) -> int:
        return len(self._waiting)


async def ask(run, request: ApprovalRequest) -> Decision:
    """The run's ``Approve`` callback: ask the user, wait, remember a conversation-wide
    approval. ``run`` is the ``state.Run`` (its approvals, ids, ``emit``, ``request_cancel``)."""
    name = request.tool.name
    approvals: RunApprovals = run.approvals
    if name in approvals.approved:
        return "conversation"
    if await database_sync_to_async(tool_settings.tool_approved)(
        conversation_id=run.conversation_id, tool_name=name
    ):
        approvals.approved.add(name)
        return "conversation"
    request_id = uuid.uuid4().hex
    seconds = approval_seconds()
    waiting = approvals.open(request_id)
    expires = datetime.now(UTC) + timedelta(seconds=seconds)
    await run.emit(
        REQUESTED,
        {
            "request_id": request_id,
            "run_id": run.run_id,
            "tool": name,
            "source": request.tool.source,
            "description": preview(request.tool.description, DESCRIPTION_CHARS),
            "arguments": preview(request.arguments),
            "call_id": request.call_id,
            "iteration": request.iteration,
            "timeout_seconds": seconds,
            "expires_at": expires.isoformat(timespec="seconds"),
            **request.extra,
        },
    )
    try:
        async with asyncio.timeout(seconds):
            decision = await waiting
    except TimeoutError:
        approvals.timed_out = {"tool": name, "seconds": seconds}
        await run.emit(RESOLVED, {"request_id": request_id, "decision": TIMED_OUT, "tool": name})
        # Stopped as by the user: the whole run (every DAG step) ends cancelled.
        run.request_cancel()
        raise asyncio.CancelledError from None
    except asyncio.CancelledError:
        # Stop (or a shutdown) while waiting: the request ends with the run.
        run.record(RESOLVED, {"request_id": request_id, "decision": STOPPED})
        raise
    finally:
        approvals.close(request_id)
    if decision == "conversation":
        approvals.approved.add(name)
        await database_sync_to_async(tool_settings.tool_approve_for_conversation)(
            conversation_id=run.conversation_id, tool_name=name
        )
    await run.emit(RESOLVED, {"request_id": request_id, "decision": decision, "tool": name})
    return decision
