"""Routes of the chat app: the page at ``/`` and the JSON API (docs/protocol.md)."""

from django.urls import path

from chat import export, pages
from chat.api import conversations as views
from chat.api import projects as project_views
from chat.api import search as search_views
from chat.api import summaries as summary_views
from chat.api import tool_results as tool_result_views
from chat.api import tools as tool_views
from chat.api import versions as version_views

app_name = "chat"

urlpatterns = [
    path("", pages.index, name="index"),
    path("favicon.ico", pages.favicon, name="favicon"),
    path("c/<str:conversation_id>/", pages.index, name="conversation_page"),
    path(
        "api/conversations/<str:conversation_id>/context/",
        pages.context_gauge,
        name="context_gauge",
    ),
    path("api/conversations/", views.conversations, name="conversations"),
    path(
        "api/conversations/<str:conversation_id>/",
        views.conversation_detail,
        name="conversation",
    ),
    path(
        "api/conversations/<str:conversation_id>/messages/",
        views.conversation_messages,
        name="messages",
    ),
    path(
        "api/conversations/<str:conversation_id>/messages/<str:message_id>/",
        summary_views.message_detail,
        name="message",
    ),
    path(
        "api/conversations/<str:conversation_id>/messages/<str:message_id>/show/",
        version_views.version_show,
        name="message_show",
    ),
    path(
        "api/conversations/<str:conversation_id>/summaries/<str:summary_id>/",
        summary_views.summary_detail,
        name="summary",
    ),
    path(
        "api/conversations/<str:conversation_id>/summaries/<str:summary_id>/messages/",
        summary_views.summary_messages,
        name="summary_messages",
    ),
    path(
        "api/conversations/<str:conversation_id>/attachments/",
        views.attachment_upload,
        name="attachment_upload",
    ),
    path(
        "api/conversations/<str:conversation_id>/tools/",
        tool_views.conversation_tools,
        name="tools",
    ),
    path(
        "api/conversations/<str:conversation_id>/tool-results/<str:result_id>/",
        tool_result_views.tool_result_detail,
        name="tool_result",
    ),
    path("api/tools/", tool_views.tools_catalogue, name="tools_catalogue"),
    path("api/attachments/<str:file_id>/", views.attachment_file, name="attachment"),
    path("api/search/", search_views.search_view, name="search"),
    path("api/projects/", project_views.projects, name="projects"),
    path("api/projects/<str:project_id>/", project_views.project_detail, name="project"),
    path(
        "api/projects/<str:project_id>/files/",
        project_views.project_files,
        name="project_files",
    ),
    path(
        "api/projects/<str:project_id>/export/",
        export.project_export_view,
        name="project_export",
    ),
    path(
        "api/projects/<str:project_id>/files/<str:file_id>/",
        project_views.project_file_detail,
        name="project_file",
    ),
    path(
        "api/conversations/<str:conversation_id>/export/",
        export.export_view,
        name="export",
    ),
]
