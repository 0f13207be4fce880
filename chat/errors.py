"""Errors the chat layer raises on bad input; each carries a stable code for the client.

Views turn them into ``{"error": {"code", "message"}}`` with ``status``; the websocket
consumer turns them into ``error`` frames. Nothing here knows about HTTP beyond the status.
"""


class ChatError(Exception):
    """Base class: a client-facing error with a machine-readable ``code``."""

    status = 400

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


class InvalidInput(ChatError):
    """A field has a value the service refuses (unknown mode, overlong title, …)."""


class UploadRejected(ChatError):
    """An upload failed validation; nothing was stored."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(code, message)
        self.status = status


class AttachmentNotFound(ChatError):
    """A referenced file id is malformed, unknown, or belongs to someone else."""

    status = 404


class Conflict(ChatError):
    """The request is well-formed but the object's state refuses it (e.g. a summary that
    is no longer the one in force)."""

    status = 409


def check_storable(text: str, what: str) -> None:
    """Refuse text no database stores: a lone surrogate (JSON lets a client send ``\\ud800``)
    cannot be encoded as UTF-8, and PostgreSQL text cannot hold NUL. Checked here, before
    anything is written, so neither becomes a 500 or a half-stored run."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        ok = False
    else:
        ok = "\x00" not in text
    if not ok:
        raise InvalidInput(
            "invalid_text",
            f"The {what} contains characters that cannot be stored "
            "(a NUL byte or an unpaired surrogate).",
        )
