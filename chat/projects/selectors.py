"""Reads of projects, scoped to their owner: another user's project does not exist."""

from __future__ import annotations

from typing import Any

from chat.models import Attachment, Project
from chat.selectors import as_uuid


def project_list(*, user) -> list[Project]:
    """The user's projects, the most recently changed first."""
    if not user.is_authenticated:
        return []
    return list(Project.objects.filter(owner=user))


def project_get(*, user, project_id: Any) -> Project:
    """The user's project ``project_id``; ``Project.DoesNotExist`` for any other id (a 404)."""
    if not user.is_authenticated or isinstance(project_id, bool):
        raise Project.DoesNotExist
    try:
        pk = int(project_id)
    except (TypeError, ValueError) as exc:
        raise Project.DoesNotExist from exc
    return Project.objects.get(pk=pk, owner=user)


def project_files(*, project: Project) -> list[Attachment]:
    """The project's files, oldest first, without their extracted text."""
    return list(Attachment.objects.filter(project=project).defer("document").order_by("created_at"))


def project_file_get(*, project: Project, file_id: Any) -> Attachment:
    """One file of the project; ``Attachment.DoesNotExist`` for any other id."""
    pk = as_uuid(file_id)
    if pk is None:
        raise Attachment.DoesNotExist
    return Attachment.objects.defer("document").get(pk=pk, project=project)
