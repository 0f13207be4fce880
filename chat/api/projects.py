"""The projects API (docs/protocol.md, "Projects"): thin views over ``chat.projects``'s
services and selectors, owner-only (another user's project ids answer 404)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse

from chat.api.plumbing import api_view, attachment_url, read_json
from chat.errors import InvalidInput
from chat.instructions import instructions_max_chars
from chat.models import Attachment
from chat.projects import selectors, services
from chat.projects.selectors import ProjectSummary
from chat.services import UNSET


def project_json(summary: ProjectSummary) -> dict[str, Any]:
    project = summary.project
    return {
        "id": project.pk,
        "name": project.name,
        "instructions": project.instructions,
        # The longest instructions accepted (a project's or a conversation's), for a
        # counter in the settings panel.
        "instructions_max_chars": instructions_max_chars(),
        "created_at": project.created_at.isoformat(),
        "updated_at": project.updated_at.isoformat(),
        # The model and tool selection a new conversation of the project starts with.
        "model_config": project.model_config_id,
        "builtin_model": project.builtin_model,
        "disabled_tool_sources": list(project.disabled_tool_sources or []),
        "conversation_count": summary.conversation_count,
        "file_count": summary.file_count,
    }


def project_file_json(attachment: Attachment) -> dict[str, Any]:
    """A project's file as its list shows it (without the extracted text)."""
    is_document = attachment.kind == Attachment.Kind.DOCUMENT
    return {
        "id": str(attachment.id),
        "name": attachment.original_name,
        "kind": attachment.kind,
        "mime_type": attachment.mime_type,
        "size": attachment.size,
        "pages": attachment.page_count if is_document else 0,
        "created_at": attachment.created_at.isoformat(),
        "url": attachment_url(attachment.id),
    }


def _body_fields(body: dict[str, Any]) -> dict[str, Any]:
    """The fields a project's body may set, as the services name them; absent ones UNSET."""
    return {
        "name": body.get("name", UNSET),
        "instructions": body.get("instructions", UNSET),
        "model_config_id": body.get("model_config", UNSET),
        "builtin_model": body.get("builtin_model", UNSET),
        "disabled_tool_sources": body.get("disabled_tool_sources", UNSET),
    }


@api_view("GET", "POST")
def projects(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        summaries = selectors.project_summaries(user=request.user)
        return JsonResponse({"projects": [project_json(s) for s in summaries]})
    fields = {k: v for k, v in _body_fields(read_json(request)).items() if v is not UNSET}
    if "name" not in fields:
        raise InvalidInput("missing_name", "Send the project's name as 'name'.")
    project = services.project_create(owner=request.user, **fields)
    return JsonResponse(project_json(selectors.project_summary(project=project)), status=201)


@api_view("GET", "PATCH", "DELETE")
def project_detail(request: HttpRequest, project_id: str) -> HttpResponse:
    project = selectors.project_get(user=request.user, project_id=project_id)
    if request.method == "DELETE":
        choice = request.GET.get("conversations", "keep")
        if choice not in ("keep", "delete"):
            raise InvalidInput("invalid_conversations", "conversations must be 'keep' or 'delete'.")
        services.project_delete(project=project, delete_conversations=choice == "delete")
        return HttpResponse(status=204)
    if request.method == "PATCH":
        project = services.project_update(project=project, **_body_fields(read_json(request)))
    return JsonResponse(project_json(selectors.project_summary(project=project)))


@api_view("GET", "POST")
def project_files(request: HttpRequest, project_id: str) -> HttpResponse:
    project = selectors.project_get(user=request.user, project_id=project_id)
    if request.method == "GET":
        files = selectors.project_files(project=project)
        return JsonResponse({"files": [project_file_json(f) for f in files]})
    uploaded = request.FILES.get("file")
    if uploaded is None:
        raise InvalidInput("missing_file", "Send the file as the multipart field 'file'.")
    attachment = services.project_file_create(
        owner=request.user, project=project, uploaded_file=uploaded
    )
    body = project_file_json(attachment)
    # What the reading left out or could not read, said once, as a message's upload says it
    # (the list leaves the extracted text unread, so it does not repeat them).
    document = attachment.document if attachment.kind == Attachment.Kind.DOCUMENT else None
    body["warnings"] = list((document or {}).get("warnings") or [])
    return JsonResponse(body, status=201)


@api_view("DELETE")
def project_file_detail(request: HttpRequest, project_id: str, file_id: str) -> HttpResponse:
    project = selectors.project_get(user=request.user, project_id=project_id)
    attachment = selectors.project_file_get(project=project, file_id=file_id)
    services.project_file_delete(attachment=attachment)
    return HttpResponse(status=204)
