"""Writes of projects: create, change and delete a project, add and remove its files.

Keyword-only and transactional, as ``chat.services`` is. A project's file is an attachment
of the project; its pages are indexed after the upload's transaction, in short
transactions of their own (``chat.search.index.index_project_file``). Deleting a file
removes its passages with it (a foreign key), and its stored file on commit
(``chat.signals``).
"""

from __future__ import annotations

import functools
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext, ngettext

from chat.attachments import CheckedUpload, attachment_store, upload_check
from chat.errors import InvalidInput, UploadRejected, check_storable
from chat.instructions import clean_instructions
from chat.models import Attachment, Conversation, Project
from chat.search import index as search_index
from chat.services import UNSET, Unset, changed_model_pick, clean_model_pick
from chat.tools.settings import MAX_SOURCE_CHARS, nameable

NAME_MAX_CHARS = Project._meta.get_field("name").max_length or 0


def _clean_name(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidInput("invalid_name", gettext("The project's name must be text."))
    check_storable(value, "name")
    value = " ".join(value.split())
    if not value:
        raise InvalidInput("empty_name", gettext("Give the project a name."))
    if len(value) > NAME_MAX_CHARS:
        raise InvalidInput(
            "name_too_long",
            gettext("The name is longer than %(limit)s characters.") % {"limit": NAME_MAX_CHARS},
        )
    return value


# More entries than any set of tools has: the list is copied into every new conversation.
TOOL_SOURCES_MAX = 500


def _clean_tool_sources(value: Any) -> list[str]:
    if (
        not isinstance(value, list)
        or len(value) > TOOL_SOURCES_MAX
        or not all(nameable(v) for v in value)
    ):
        raise InvalidInput(
            "invalid_tool_sources",
            f"disabled_tool_sources must be a list of at most {TOOL_SOURCES_MAX} tool sources "
            f"(names of at most {MAX_SOURCE_CHARS} characters).",
        )
    return sorted(set(value))


@transaction.atomic
def project_create(
    *,
    owner,
    name: Any,
    instructions: Any = "",
    model_config_id: Any = None,
    builtin_model: Any = False,
    disabled_tool_sources: Any = None,
) -> Project:
    pick = clean_model_pick(model_config_id, builtin_model)
    project = Project(
        owner=owner,
        name=_clean_name(name),
        instructions=clean_instructions(instructions),
        model_config_id=pick.model_config_id,
        builtin_model=pick.builtin_model,
        disabled_tool_sources=_clean_tool_sources(disabled_tool_sources or []),
    )
    project.save()
    return project


@transaction.atomic
def project_update(
    *,
    project: Project,
    name: Any = UNSET,
    instructions: Any = UNSET,
    model_config_id: Any = UNSET,
    builtin_model: Any = UNSET,
    disabled_tool_sources: Any = UNSET,
) -> Project:
    """Change what is given; a conversation of the project sees the change from its next
    message on. The default model as a conversation's: picking a ModelConfig or the
    built-in model leaves the other pick off."""
    fields = ["updated_at"]
    if not isinstance(name, Unset):
        project.name = _clean_name(name)
        fields.append("name")
    if not isinstance(instructions, Unset):
        project.instructions = clean_instructions(instructions)
        fields.append("instructions")
    if (pick := changed_model_pick(model_config_id, builtin_model)) is not None:
        project.model_config_id = pick.model_config_id
        project.builtin_model = pick.builtin_model
        fields += ["model_config", "builtin_model"]
    if not isinstance(disabled_tool_sources, Unset):
        project.disabled_tool_sources = _clean_tool_sources(disabled_tool_sources)
        fields.append("disabled_tool_sources")
    if len(fields) > 1:
        project.save(update_fields=fields)
    return project


@transaction.atomic
def project_delete(*, project: Project, delete_conversations: bool = False) -> None:
    """Delete the project and its files; its conversations are moved out of it (kept,
    without the project's instructions and files), or deleted with it."""
    if delete_conversations:
        # One by one: a conversation's delete stops its run and closes its sockets.
        for conversation in Conversation.objects.filter(project=project):
            conversation.delete()
    project.delete()


def project_max_files() -> int:
    """The most files one project holds (``FIMONE_PROJECT_MAX_FILES``, read when asked):
    each is knowledge in every call of its conversations (docs/projects.md, "Limits")."""
    return max(0, int(settings.FIMONE_PROJECT_MAX_FILES))


def _check_room_for_a_file(project_id: int) -> None:
    limit = project_max_files()
    if Attachment.objects.filter(project_id=project_id).count() >= limit:
        raise UploadRejected(
            "too_many_files",
            ngettext(
                "A project holds at most %(limit)s file: remove one to add another.",
                "A project holds at most %(limit)s files: remove one to add another.",
                limit,
            )
            % {"limit": f"{limit:,}"},
        )


def project_file_create(*, owner, project: Project, uploaded_file: UploadedFile) -> Attachment:
    """Store an upload as the project's file and index its pages after the commit; the
    same types and limits as a conversation's uploads, and at most ``project_max_files``
    files in the project."""
    if project.owner_id != owner.pk:
        raise InvalidInput("project_mismatch", "The project belongs to someone else.")
    # A full project refuses at once, before the upload is read; checked again where the
    # file is stored, the project locked, so two uploads at once cannot both take the
    # last place.
    _check_room_for_a_file(project.pk)
    # Extraction may take seconds of CPU: it runs before the short transaction that stores.
    upload = upload_check(owner=owner, uploaded_file=uploaded_file, project=project)
    return _project_file_store(project=project, upload=upload)


@transaction.atomic
def _project_file_store(*, project: Project, upload: CheckedUpload) -> Attachment:
    # DoesNotExist (a 404) when the project was deleted while the upload was read.
    Project.objects.select_for_update().only("pk").get(pk=project.pk)
    _check_room_for_a_file(project.pk)
    attachment = attachment_store(upload=upload)
    Project.objects.filter(pk=project.pk).update(updated_at=timezone.now())
    transaction.on_commit(
        functools.partial(search_index.index_project_file, attachment_id=attachment.pk)
    )
    return attachment


@transaction.atomic
def project_file_delete(*, attachment: Attachment) -> None:
    """Remove a project's file: its passages leave the index at once, its stored file on
    commit; ``read_document`` then says it was removed."""
    if attachment.project_id is None:
        raise InvalidInput("not_a_project_file", "The file is not a project's file.")
    project = Project.objects.select_for_update().get(pk=attachment.project_id)
    removed = [*project.removed_files, {"id": str(attachment.pk), "name": attachment.original_name}]
    project.removed_files = removed[-Project.REMOVED_FILES_KEPT :]
    project.save(update_fields=["removed_files", "updated_at"])
    attachment.delete()
