"""HTTP JSON API (docs/protocol.md): thin views over selectors and services, owner-only."""

from __future__ import annotations

from pathlib import PurePath
from typing import Literal

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import FileResponse, HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.http.response import HttpResponseBase
from django.utils.translation import gettext
from django.views import defaults

from chat import selectors, services
from chat.api.plumbing import (
    api_view,
    attachment_json,
    conversation_json,
    error_response,
    messages_json,
    query_int,
    read_json,
)
from chat.errors import InvalidInput
from chat.models import ATTACHMENT_EXTENSIONS, Attachment, Project
from chat.projects import selectors as project_selectors


@api_view("GET", "POST")
def conversations(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        page = selectors.conversation_page(
            user=request.user,
            before=request.GET.get("before") or None,
            limit=query_int(request, "limit", default=50),
            project=_project_filter(request),
        )
        return JsonResponse(
            {
                "conversations": [conversation_json(c) for c in page.conversations],
                "has_more": page.next_cursor is not None,
                "next": page.next_cursor,
            }
        )
    body = read_json(request)
    try:
        conversation = services.conversation_create(
            owner=request.user,
            title=body.get("title") or "",
            mode=body.get("mode") or "react",
            model_config_id=body.get("model_config", services.UNSET),
            builtin_model=body.get("builtin_model", services.UNSET),
            project_id=body.get("project"),
            instructions=body.get("instructions", ""),
        )
    except Project.DoesNotExist as exc:
        # The body named it, not the URL: a bad field (400), as an unknown model is.
        raise InvalidInput("unknown_project", gettext("There is no such project.")) from exc
    return JsonResponse(conversation_json(conversation), status=201)


def _project_filter(request: HttpRequest) -> Project | Literal["any", "none"]:
    """``?project=<id>``: that project's conversations (another user's: 404);
    ``?project=none``: those in no project; absent: all."""
    raw = request.GET.get("project")
    if raw is None or raw == "":
        return "any"
    if raw == "none":
        return "none"
    return project_selectors.project_get(user=request.user, project_id=raw)


@api_view("GET", "PATCH", "DELETE")
def conversation_detail(request: HttpRequest, conversation_id: str) -> HttpResponse:
    conversation = selectors.conversation_get(user=request.user, conversation_id=conversation_id)
    if request.method == "DELETE":
        services.conversation_delete(conversation=conversation)
        return HttpResponse(status=204)
    if request.method == "PATCH":
        body = read_json(request)
        conversation = services.conversation_update(
            conversation=conversation,
            title=body.get("title"),
            mode=body.get("mode"),
            model_config_id=body.get("model_config", services.UNSET),
            builtin_model=body.get("builtin_model", services.UNSET),
            project_id=body.get("project", services.UNSET),
            instructions=body.get("instructions", services.UNSET),
        )
    return JsonResponse(conversation_json(conversation))


@api_view("GET")
def conversation_messages(request: HttpRequest, conversation_id: str) -> HttpResponse:
    conversation = selectors.conversation_get(user=request.user, conversation_id=conversation_id)
    page = selectors.message_page(
        conversation=conversation,
        before_id=query_int(request, "before"),
        after_id=query_int(request, "after"),
        limit=query_int(request, "limit", default=50),
    )
    return JsonResponse(
        {
            "messages": messages_json(page.messages, conversation=conversation),
            "has_more": page.has_more,
        }
    )


@api_view("POST")
def attachment_upload(request: HttpRequest, conversation_id: str) -> HttpResponse:
    conversation = selectors.conversation_get(user=request.user, conversation_id=conversation_id)
    uploaded = request.FILES.get("file")
    if uploaded is None:
        raise InvalidInput("missing_file", "Send the file as the multipart field 'file'.")
    attachment = services.attachment_create(
        owner=request.user, conversation=conversation, uploaded_file=uploaded
    )
    return JsonResponse(attachment_json(attachment), status=201)


@api_view("GET")
def attachment_file(request: HttpRequest, file_id: str) -> HttpResponseBase:
    attachment = selectors.attachment_get(user=request.user, file_id=file_id)
    try:
        handle = attachment.file.open("rb")
    except OSError:
        return error_response("file_missing", gettext("The file is no longer stored."), 404)
    # The extension follows the verified content type, whatever the client called the file.
    stem = PurePath(attachment.original_name).stem or str(attachment.id)
    filename = f"{stem}.{ATTACHMENT_EXTENSIONS.get(attachment.mime_type, 'bin')}"
    # A document is a download, never a page of this site (an HTML file would run there).
    response = FileResponse(
        handle,
        content_type=attachment.mime_type,
        filename=filename,
        as_attachment=attachment.kind == Attachment.Kind.DOCUMENT,
    )
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response["Cache-Control"] = "private, max-age=86400"
    return response


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Django's 400 handler: bodies it refused before any view ran (too large, a broken
    multipart) answer the API's JSON error shape; other pages keep Django's own."""
    if not _is_api(request):
        return defaults.bad_request(request, exception)
    if isinstance(exception, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return error_response(
            "body_too_large",
            gettext("The request body is larger than %(limit)s bytes.") % {"limit": f"{limit:,}"},
            413,
        )
    if isinstance(exception, TooManyFieldsSent | TooManyFilesSent):
        return error_response("too_many_fields", gettext("The request has too many fields."), 400)
    if isinstance(exception, MultiPartParserError):
        return error_response(
            "invalid_multipart",
            "The multipart body cannot be read (a missing or bad boundary?).",
            400,
        )
    return error_response("bad_request", gettext("The request cannot be read."), 400)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if not _is_api(request):
        return defaults.page_not_found(request, exception)
    return error_response("not_found", gettext("Not found."), 404)


def server_error(request: HttpRequest) -> HttpResponse:
    if not _is_api(request):
        return defaults.server_error(request)
    return error_response("server_error", gettext("Something went wrong on the server."), 500)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF rejections: JSON for the API (clients parse it), Django's page elsewhere."""
    if _is_api(request):
        return error_response(
            "csrf_failed",
            "CSRF check failed: send the X-CSRFToken header from the csrftoken cookie.",
            403,
        )
    from django.views.csrf import csrf_failure as default_csrf_failure

    return default_csrf_failure(request, reason=reason)
