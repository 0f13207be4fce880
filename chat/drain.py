"""Whether this server process is draining: shutting down, taking no new runs.

Per process on purpose: a deploy stops one process at a time, and the others keep serving.
``/healthz`` answers 503 while draining, so a load balancer sends new sockets elsewhere.
"""

from __future__ import annotations

_state = {"draining": False}


def is_draining() -> bool:
    return _state["draining"]


def begin() -> None:
    _state["draining"] = True


def reset() -> None:
    """Back to serving (tests)."""
    _state["draining"] = False
