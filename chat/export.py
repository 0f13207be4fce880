"""A conversation as a file to keep: Markdown to read, JSON to process (docs/protocol.md,
"Export"). ``GET /api/conversations/<id>/export/?format=markdown|json``, owner-only.

Markdown holds what the chat shows: the questions, the answers with their status, the tool
calls and results of each run, and images by reference, on the branch of versions shown
(``chat.versions``); the other versions are left out. JSON holds every stored message in
the shape of the messages API (without the rendered HTML): the other versions included,
marked ``superseded_by``, and each version listing its siblings (``versions``). Both name
the conversation's project and hold the instructions it runs with, the project's and its
own.

A project exports as JSON (``GET /api/projects/<id>/export/``): the project with its
instructions, its files by name, size and pages, and its conversations by id and title.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.http import content_disposition_header
from django.utils.text import slugify
from django.utils.translation import gettext, ngettext

from chat import selectors
from chat.api.plumbing import api_view, conversation_json, messages_json
from chat.api.projects import project_file_json, project_json
from chat.errors import InvalidInput
from chat.models import Conversation, Message, Project
from chat.projects import selectors as project_selectors
from chat.versions import is_hidden

FORMATS = {
    "markdown": ("md", "text/markdown; charset=utf-8"),
    "json": ("json", "application/json"),
}
JSON_FORMAT = "fimone.conversation/1"
PROJECT_FORMAT = "fimone.project/1"


@api_view("GET")
def export_view(request: HttpRequest, conversation_id: str) -> HttpResponse:
    conversation = selectors.conversation_get(user=request.user, conversation_id=conversation_id)
    kind = request.GET.get("format", "markdown")
    if kind not in FORMATS:
        raise InvalidInput("invalid_format", "format must be 'markdown' or 'json'.")
    stored = Message.objects.filter(conversation=conversation).order_by("created_at", "id")
    messages = page_order(list(stored))
    body = (
        conversation_json_export(conversation, messages)
        if kind == "json"
        else (conversation_markdown(conversation, messages))
    )
    extension, content_type = FORMATS[kind]
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = content_disposition_header(
        as_attachment=True, filename=f"{file_stem(conversation)}.{extension}"
    )
    return response


@api_view("GET")
def project_export_view(request: HttpRequest, project_id: str) -> HttpResponse:
    project = project_selectors.project_get(user=request.user, project_id=project_id)
    conversations = Conversation.objects.filter(project=project).order_by("-updated_at", "-pk")
    document = {
        "format": PROJECT_FORMAT,
        "exported_at": timezone.now().isoformat(),
        "project": project_json(project_selectors.project_summary(project=project)),
        "files": [project_file_json(f) for f in project_selectors.project_files(project=project)],
        "conversations": [
            {
                "id": str(c.id),
                "title": c.title,
                "created_at": c.created_at.isoformat(),
                "updated_at": c.updated_at.isoformat(),
            }
            for c in conversations.only("id", "title", "created_at", "updated_at")
        ],
    }
    response = HttpResponse(
        json.dumps(document, ensure_ascii=False, indent=2), content_type="application/json"
    )
    name = slugify(project.name, allow_unicode=True)[:60].strip("-") or "project"
    response["Content-Disposition"] = content_disposition_header(
        as_attachment=True, filename=f"{name}-{timezone.localdate():%Y-%m-%d}.json"
    )
    return response


def page_order(messages: list[Message]) -> list[Message]:
    """The messages in the order the chat shows them: a follow-up sent while an answer was
    written goes above the answer that replies to it (it was stored after that answer had
    started); one the answer never read stays below it, above the follow-up run's answer
    (as ``followUpsBeforeTheirAnswer`` in static/chat/js/history.js)."""
    ordered: list[Message] = []
    answers: dict[str, Message] = {}
    for message in messages:
        answer = answers.get(message.run_id) if message.kind == Message.Kind.INJECTED else None
        if answer is not None and _replies_to(answer, message):
            ordered.insert(ordered.index(answer), message)
            continue
        if message.role == Message.Role.ASSISTANT and message.run_id:
            answers[message.run_id] = message
        ordered.append(message)
    return ordered


def _replies_to(answer: Message, follow_up: Message) -> bool:
    if answer.status == Message.Status.RUNNING:
        return True  # it may still read it
    return follow_up.pk in ((answer.metadata or {}).get("follow_ups") or [])


def file_stem(conversation: Conversation) -> str:
    # Unicode kept: a Chinese title names its file too (sent as RFC 5987 ``filename*``).
    name = slugify(conversation.title, allow_unicode=True)[:60].strip("-") or "conversation"
    return f"{name}-{conversation.created_at:%Y-%m-%d}"


def conversation_json_export(conversation: Conversation, messages: list[Message]) -> str:
    items = messages_json(messages, conversation=conversation)
    for item in items:
        item.pop("html", None)  # derived from ``content``; the file keeps the source
    document = {
        "format": JSON_FORMAT,
        "exported_at": timezone.now().isoformat(),
        "conversation": conversation_json(conversation),
        # The project it ran in, with the instructions that came before its own; null: none.
        "project": _project_export(conversation.project),
        "messages": items,
    }
    return json.dumps(document, ensure_ascii=False, indent=2)


def _project_export(project: Project | None) -> dict[str, Any] | None:
    if project is None:
        return None
    return {"id": project.pk, "name": project.name, "instructions": project.instructions}


def conversation_markdown(conversation: Conversation, messages: list[Message]) -> str:
    # Headings in the language of the request (the user's interface language).
    title = conversation.title or gettext("Untitled conversation")
    lines = [
        f"# {_markdown_text(_one_line(title))}",
        "",
        "- " + gettext("Started: %(when)s") % {"when": _when(conversation.created_at)},
        "- " + gettext("Exported: %(when)s") % {"when": _when(timezone.now())},
        "- " + gettext("Mode: %(mode)s") % {"mode": conversation.get_mode_display()},
    ]
    project = conversation.project
    if project is not None:
        name = _markdown_text(_one_line(project.name))
        lines.append("- " + gettext("Project: %(name)s") % {"name": name})
    lines.append("")
    if project is not None and project.instructions:
        lines += ["## " + gettext("Instructions of the project"), ""]
        lines += _quoted(project.instructions)
    if conversation.instructions:
        lines += ["## " + gettext("Instructions of this conversation"), ""]
        lines += _quoted(conversation.instructions)
    for message in messages:
        metadata = message.metadata or {}
        if is_hidden(message):
            continue  # another version is shown, with its branch
        if message.role == Message.Role.USER:
            heading = (
                gettext("Follow-up") if message.kind == Message.Kind.INJECTED else gettext("User")
            )
            lines += ["---", "", f"### {heading} · {_when(message.created_at)}", ""]
            lines += _images(metadata)
            lines += _documents(metadata)
            lines += [message.content, ""]
        elif message.role == Message.Role.ASSISTANT:
            status = "" if message.status == Message.Status.DONE else f" · {message.status}"
            heading = gettext("Assistant")
            replied = len(metadata.get("follow_ups") or [])
            if replied:
                heading += " · " + ngettext(
                    "also answers %(count)d follow-up", "also answers %(count)d follow-ups", replied
                ) % {"count": replied}
            lines += ["---", "", f"### {heading} · {_when(message.created_at)}{status}", ""]
            lines += _steps(metadata)
            lines += [message.content or "*(" + gettext("no text") + ")*", ""]
            error = metadata.get("error")
            if isinstance(error, dict) and error.get("message"):
                problem = _markdown_text(_one_line(str(error["message"])))
                lines += ["> " + gettext("Error: %(problem)s") % {"problem": problem}, ""]
    return "\n".join(lines).rstrip() + "\n"


def _quoted(text: str) -> list[str]:
    """Instructions as a quoted block: their own Markdown stays theirs, set apart."""
    return [f"> {line}".rstrip() for line in text.splitlines()] + [""]


def _when(moment) -> str:
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M %Z")


def _one_line(text: str) -> str:
    return " ".join(text.split())


# Characters that would make a name a link, emphasis, HTML, an entity or code in Markdown.
_MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]()<>#+!|~&])")


def _markdown_text(text: str) -> str:
    """``text`` shown as it is in Markdown: a title or a name is a label, never a heading,
    link or markup of its own. User text the export puts into its own structure (the
    title's heading, list items, an error's line) goes through here; names shown as code
    (a document's, a tool's) through ``_code_span``."""
    return _MARKDOWN_SPECIALS.sub(r"\\\1", text)


def _code_span(text: str) -> str:
    """``text`` as an inline code span no backtick inside it can close (CommonMark: the
    span's fence is longer than any run inside; a space pads a backtick at either end)."""
    ticks = "`" * (_longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _documents(metadata: dict[str, Any]) -> list[str]:
    """A document by reference: its name and pages (its text stays in fimone)."""
    docs = [d for d in metadata.get("documents") or [] if isinstance(d, dict) and d.get("file_id")]
    lines = []
    for doc in docs:
        pages = int(doc.get("pages") or 0)
        label = ngettext(
            "Document %(name)s (%(count)d page)", "Document %(name)s (%(count)d pages)", pages
        ) % {"name": _code_span(_one_line(str(doc.get("name") or doc["file_id"]))), "count": pages}
        lines.append(f"*{label}*")
    return lines + ([""] if docs else [])


def _images(metadata: dict[str, Any]) -> list[str]:
    images = [i for i in metadata.get("images") or [] if isinstance(i, dict) and i.get("file_id")]
    image = gettext("Image %(id)s (%(type)s)")
    return [f"*{image % {'id': i['file_id'], 'type': i.get('mime_type', '')}}*" for i in images] + (
        [""] if images else []
    )


def _steps(metadata: dict[str, Any]) -> list[str]:
    """Tool calls and results as a quoted block with fenced texts (any backticks inside a
    result cannot close the fence: it is longer than any run of them)."""
    lines: list[str] = []
    for step in metadata.get("steps") or []:
        if not isinstance(step, dict):
            continue
        kind = step.get("kind")
        name = _one_line(str(step.get("name") or "tool"))
        if kind == "tool_call":
            call = gettext("**Tool call** %(tool)s") % {"tool": _code_span(name)}
            lines += [f"> {call}", *_quoted_fence(step.get("arguments"))]
        elif kind == "tool_result":
            result = gettext("**Result** of %(tool)s") % {"tool": _code_span(name)}
            lines += [f"> {result}", *_quoted_fence(step.get("result"))]
    return lines + [""] if lines else []


def _quoted_fence(value: Any) -> list[str]:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    ticks = "`" * max(3, _longest_backtick_run(text) + 1)
    return [f"> {ticks}", *(f"> {line}" for line in text.splitlines() or [""]), f"> {ticks}", ">"]


def _longest_backtick_run(text: str) -> int:
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return longest
