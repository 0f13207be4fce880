"""Instructions, a project's and a conversation's: text sent whole into every model call of
the conversation, so its size is limited (docs/projects.md)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.utils.translation import gettext

from chat.errors import InvalidInput, check_storable


def instructions_max_chars() -> int:
    """The most characters one set of instructions (a project's, a conversation's) may
    have: they go whole into every model call (docs/projects.md)."""
    return settings.FIMONE_INSTRUCTIONS_MAX_CHARS


def clean_instructions(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidInput("invalid_instructions", gettext("The instructions must be text."))
    check_storable(value, "instructions")
    value = value.strip()
    limit = instructions_max_chars()
    if len(value) > limit:
        raise InvalidInput(
            "instructions_too_long",
            gettext("The instructions are longer than %(limit)s characters.")
            % {"limit": f"{limit:,}"},
        )
    return value
