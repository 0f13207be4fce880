"""Instructions, a project's and a conversation's: text sent whole into every model call of
the conversation, so its size is limited (docs/projects.md)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.utils.translation import gettext

from chat.errors import InvalidInput, check_storable
from chat.models import Conversation, Project


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


# How the two sets of instructions are framed for the model, in this order, inside the
# core's instructions message (contextmgmt.core.instructions).
PROJECT_HEADING = "## The project's instructions"
CONVERSATION_HEADING = (
    "## This conversation's own instructions (after the project's; where they differ, these win)"
)


def pinned_instructions(*, project: str = "", conversation: str = "") -> str:
    """The text every model call of a conversation carries whole: the project's
    instructions, then the conversation's own, each under its heading ("" when neither
    has any)."""
    parts = []
    if project.strip():
        parts.append(f"{PROJECT_HEADING}\n{project.strip()}")
    if conversation.strip():
        parts.append(f"{CONVERSATION_HEADING}\n{conversation.strip()}")
    return "\n\n".join(parts)


def conversation_instructions(conversation: Conversation) -> str:
    """``pinned_instructions`` of ``conversation`` (a row as read for a run or the gauge):
    its own column, and its project's only when it has one (one small read, none when the
    project came with the row)."""
    project = ""
    if conversation.project_id is not None:
        cached = conversation.project if Conversation.project.is_cached(conversation) else None
        # The owner's project only: one put there by another user's hand (the admin) never
        # hands its instructions to a stranger's runs, as its files are not handed either.
        if cached is not None:
            project = cached.instructions if cached.owner_id == conversation.owner_id else ""
        else:
            project = (
                Project.objects.filter(pk=conversation.project_id, owner_id=conversation.owner_id)
                .values_list("instructions", flat=True)
                .first()
                or ""
            )
    return pinned_instructions(project=project, conversation=conversation.instructions)
