"""Reads of projects, scoped to their owner: another user's project does not exist."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from chat.models import Attachment, Conversation, Project
from chat.selectors import as_uuid


@dataclass(frozen=True)
class ProjectSummary:
    """A project with what its list shows of it: how many conversations and files it has."""

    project: Project
    conversation_count: int
    file_count: int


def project_list(*, user) -> list[Project]:
    """The user's projects, the most recently changed first."""
    if not user.is_authenticated:
        return []
    return list(Project.objects.filter(owner=user))


def project_summaries(*, user) -> list[ProjectSummary]:
    """The user's projects with their counts, the most recently changed first."""
    if not user.is_authenticated:
        return []
    return _summaries(Project.objects.filter(owner=user))


def project_summary(*, project: Project) -> ProjectSummary:
    """``project`` with its counts as they are now (after a change, say)."""
    return _summaries(Project.objects.filter(pk=project.pk))[0]


def _count_of(model, **link) -> Coalesce:
    # A correlated count per project: two joined counts would multiply each other.
    rows = model.objects.filter(**link).order_by().values(*link).annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(rows, output_field=IntegerField()), 0)


def with_counts(projects: QuerySet[Project]) -> QuerySet[Project]:
    """``projects`` with ``conversation_count`` and ``file_count`` computed by the query
    (the admin's list sorts by them)."""
    return projects.annotate(
        conversation_count=_count_of(Conversation, project=OuterRef("pk")),
        file_count=_count_of(Attachment, project=OuterRef("pk")),
    )


def _summaries(projects: QuerySet[Project]) -> list[ProjectSummary]:
    counts = {
        pk: (conversations, files)
        # The plugin of the type checker does not follow an annotation across a function.
        for pk, conversations, files in with_counts(projects).values_list(  # type: ignore[misc]
            "pk", "conversation_count", "file_count"
        )
    }
    summaries = []
    for project in projects:
        conversations, files = counts.get(project.pk, (0, 0))
        summaries.append(
            ProjectSummary(project=project, conversation_count=conversations, file_count=files)
        )
    return summaries


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
