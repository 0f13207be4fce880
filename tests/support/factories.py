"""Builders for the rows tests start from: users, conversations, messages, attachments and
model configurations, each in one place (docs/testing.md, "Factories and fixtures").

Each builder takes keyword arguments for whatever a test cares about and fills in the rest;
it returns the saved row. ``add_message`` writes a row as it is stored (a test of what reads
messages sets any field); ``said`` goes through the services, as a run stores its question
and answer (the search index and the conversation's counters follow).
"""

from __future__ import annotations

import uuid

from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile

from chat import services
from chat.models import Attachment, Conversation, Message, Project
from chat.projects import services as project_services
from contextmgmt.models import ModelConfig
from tests.chat.images import image_bytes


def make_user(username: str = "", *, password: str = "pw-test-123!", **fields):
    """A user; a unique name unless ``username`` is given."""
    return get_user_model().objects.create_user(
        username=username or f"user-{uuid.uuid4().hex[:10]}", password=password, **fields
    )


def make_conversation(owner=None, *, title: str = "") -> Conversation:
    """A conversation as the API creates it (a new user owns it unless ``owner`` is given)."""
    return services.conversation_create(owner=owner or make_user(), title=title)


def add_message(conversation: Conversation, role: str, content: str, **fields) -> Message:
    """A message row as stored: a user's question or an assistant's answer unless ``kind``
    says otherwise; ``done`` unless ``status`` does."""
    fields.setdefault("kind", "query" if role == "user" else "answer")
    return Message.objects.create(conversation=conversation, role=role, content=content, **fields)


def said(conversation: Conversation, content: str, role: str = "user", **finish) -> Message:
    """A question, or a finished answer (``finish``: the rest of what the run stores), stored
    through the services as a run stores it."""
    if role == "user":
        return services.user_message_create(conversation=conversation, content=content)
    message = services.assistant_message_start(conversation=conversation, run_id="r", mode="react")
    return services.assistant_message_finish(message=message, content=content, **finish)


def make_attachment(
    owner, conversation: Conversation, *, fmt: str = "PNG", name: str = "a.png"
) -> Attachment:
    """An image uploaded into ``conversation`` (validated and described as an upload is)."""
    uploaded = SimpleUploadedFile(name, image_bytes(fmt), content_type=f"image/{fmt.lower()}")
    return services.attachment_create(
        owner=owner, conversation=conversation, uploaded_file=uploaded
    )


def make_model_config(role: str = "main", **fields) -> ModelConfig:
    """A model configuration for ``role``, active unless ``is_active`` says otherwise."""
    values = {"name": f"{role} model", "model": f"provider-{role}", "role": role, "is_active": True}
    values.update(fields)
    return ModelConfig.objects.create(**values)


def make_project(owner=None, *, name: str = "Project", instructions: str = "") -> Project:
    """A project as the API creates it (a new user owns it unless ``owner`` is given)."""
    return project_services.project_create(
        owner=owner or make_user(), name=name, instructions=instructions
    )


def add_project_file(project: Project, name: str, data: bytes, content_type: str) -> Attachment:
    """A file uploaded to ``project`` as the API stores it (extracted, then indexed once the
    upload's transaction commits)."""
    uploaded = SimpleUploadedFile(name, data, content_type=content_type)
    return project_services.project_file_create(
        owner=project.owner, project=project, uploaded_file=uploaded
    )
