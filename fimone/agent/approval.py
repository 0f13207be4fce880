"""Asking the user before a tool runs: what the engines hand to the chat layer and get back.

A tool marked ``needs_approval`` is not run until the user says so. The engine calls the
``Approve`` callback it was given (the chat layer's: it pauses the run and asks every socket
of the conversation, docs/protocol.md "Tool approval") with an ``ApprovalRequest`` and gets
a ``Decision``: run it this once, run it now and for the rest of the conversation, or not at
all. A declined call is not run; the model reads ``declined_result`` as the tool's result
and goes on. An engine given no callback runs no such tool (``no_approver_result``): a
tool that needs approval never runs without it.

How long the user may take, and Stop while waiting, are the callback's business: it ends
the run (cancellation propagates through the engine like any Stop).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from .tools import Tool

Decision = Literal["once", "conversation", "decline"]
DECISIONS: tuple[Decision, ...] = ("once", "conversation", "decline")


@dataclass(frozen=True)
class ApprovalRequest:
    """One tool call waiting for the user: the tool, the model's arguments (JSON text,
    already checked against the tool's schema), the call's id and where it happens
    (``extra``: a DAG step's ``step_id``; ``iteration``)."""

    tool: Tool
    arguments: str
    call_id: str
    iteration: int
    extra: dict[str, Any] = field(default_factory=dict)


Approve = Callable[[ApprovalRequest], Awaitable[Decision]]


def declined_result(name: str) -> str:
    """What the model reads when the user declined a call (it is not run)."""
    return (
        f"The user declined this call of {name}: it was not run. Do not call {name} again "
        "for this request unless the user asks for it; answer with what you have, or say "
        "what you would need."
    )


def no_approver_result(name: str) -> str:
    """What the model reads when no one can approve a call (an engine run without a user)."""
    return f"Error: tool {name} needs the user's approval, and no one can give it here."
