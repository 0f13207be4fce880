"""pydantic validation errors as one line a model can act on when it is asked again."""

from __future__ import annotations

from pydantic import ValidationError

MAX_REPORTED = 3


def json_path(loc: tuple[int | str, ...]) -> str:
    """``("steps", 0, "id")`` → ``steps[0].id``."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def describe(exc: ValidationError, *, prefix: str = "") -> str:
    """The first few errors as ``<prefix><path>: <message>``, joined with "; "."""
    errors = exc.errors(include_url=False)
    parts = []
    for error in errors[:MAX_REPORTED]:
        path = json_path(error["loc"])
        parts.append(f"{prefix}{path}: {error['msg']}" if path else error["msg"])
    if len(errors) > MAX_REPORTED:
        parts.append(f"and {len(errors) - MAX_REPORTED} more")
    return "; ".join(parts)
