"""Writes of the chat layer: conversations, the message lifecycle, attachments.

Every function is keyword-only and transactional. The chat layer owns persistence: a user
message is stored ``pending`` before any LLM call, the assistant message is started
``running`` and finished with usage and compaction facts, so a failed or cancelled run never
loses what the user typed. Which user messages a run's end settles: docs/protocol.md.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, transaction
from django.utils import timezone
from django.utils.translation import gettext

from chat import row_updates
from chat.attachments import (  # noqa: F401 (re-exported: callers use chat.services)
    attachment_create,
    attachments_delete_unsent,
)
from chat.compaction.ledger import ledger_change
from chat.compaction.steering import (  # noqa: F401 (re-exported: callers use chat.services)
    message_pin_set,
    summary_discard,
    summary_edit,
)
from chat.documents.extraction import document_refs
from chat.errors import InvalidInput, check_storable
from chat.instructions import clean_instructions
from chat.models import Attachment, Conversation, Message, Project
from chat.rendering.markdown import RENDERER_VERSION, render_markdown
from chat.search import index as search_index
from contextmgmt.core.factstore import stored_facts
from contextmgmt.core.tokens import stored_counts
from contextmgmt.models import ModelConfig

logger = logging.getLogger(__name__)

# A CharField's declared length (Django's field type leaves it optional for other fields).
TITLE_MAX_CHARS = Conversation._meta.get_field("title").max_length or 0
AUTO_TITLE_CHARS = 60
FINISH_STATUSES = {
    Message.Status.DONE,
    Message.Status.ERROR,
    Message.Status.CANCELLED,
    Message.Status.INTERRUPTED,  # a server shutting down stopped the run (drain)
}


# --- conversations -------------------------------------------------------------------------


class Unset:
    """The type of ``UNSET``: a keyword argument that was not given (None means "clear")."""


UNSET = Unset()


@transaction.atomic
def conversation_create(
    *,
    owner,
    title: str = "",
    mode: str = "react",
    model_config_id: int | None | Unset = UNSET,
    builtin_model: bool | Unset = UNSET,
    project_id: Any = None,
    instructions: Any = "",
) -> Conversation:
    """A new conversation; in a project (``project_id``, the owner's, else
    ``Project.DoesNotExist``) it starts with the project's default model (a ModelConfig or
    the built-in one) and tool selection unless a model is given. ``builtin_model``:
    answered by the built-in offline model (then no ``model_config_id`` may be given)."""
    project = _owned_project(owner, project_id)
    if isinstance(builtin_model, Unset):
        neither_given = isinstance(model_config_id, Unset)
        builtin_model = project.builtin_model if project is not None and neither_given else False
    if isinstance(model_config_id, Unset):
        given = project.model_config_id if project is not None else None
        model_config_id = None if builtin_model is True else given
    pick = clean_model_pick(model_config_id, builtin_model)
    conversation = Conversation(
        owner=owner,
        title=_clean_title(title),
        mode=_clean_mode(mode),
        model_config_id=pick.model_config_id,
        builtin_model=pick.builtin_model,
        project=project,
        instructions=clean_instructions(instructions),
        disabled_tool_sources=list(project.disabled_tool_sources) if project is not None else [],
    )
    conversation.save()
    search_index.index_title(conversation=conversation, fresh=True)
    return conversation


@transaction.atomic
def conversation_update(
    *,
    conversation: Conversation,
    title: str | None = None,
    mode: str | None = None,
    model_config_id: int | None | Unset = UNSET,
    builtin_model: bool | Unset = UNSET,
    project_id: Any = UNSET,
    instructions: Any = UNSET,
) -> Conversation:
    """Rename, switch mode, pick the model, move it into a project or out
    (``project_id=None``; another user's project: ``Project.DoesNotExist``) or set its own
    instructions. The model: a ModelConfig (``model_config_id``), the built-in offline
    model (``builtin_model=True``) or the default (``model_config_id=None`` or
    ``builtin_model=False``); picking one leaves the other pick off."""
    fields = ["updated_at"]
    if (pick := changed_model_pick(model_config_id, builtin_model)) is not None:
        conversation.model_config_id = pick.model_config_id
        conversation.builtin_model = pick.builtin_model
        fields += ["model_config", "builtin_model"]
    if title is not None:
        conversation.title = _clean_title(title)
        fields.append("title")
    if mode is not None:
        conversation.mode = _clean_mode(mode)
        fields.append("mode")
    if not isinstance(project_id, Unset):
        conversation.project = _owned_project(conversation.owner, project_id)
        fields.append("project")
    if not isinstance(instructions, Unset):
        conversation.instructions = clean_instructions(instructions)
        fields.append("instructions")
    if len(fields) > 1:
        conversation.save(update_fields=fields)
    if title is not None:
        search_index.index_title(conversation=conversation)
    return conversation


def _owned_project(owner, project_id: Any) -> Project | None:
    if project_id is None:
        return None
    if isinstance(project_id, bool) or not isinstance(project_id, int):
        raise InvalidInput("invalid_project", "project must be a project's id or null.")
    return Project.objects.get(pk=project_id, owner=owner)


@transaction.atomic
def conversation_delete(*, conversation: Conversation) -> None:
    """Delete the conversation, its messages and attachments. On commit its files are
    removed, its run is stopped and its sockets are closed (``chat.signals``; the same for
    the admin and for cascades)."""
    conversation.delete()


# --- messages ------------------------------------------------------------------------------


def content_facts(content: str) -> dict[str, Any]:
    """The facts of a message's content as its ``facts`` column keeps them, found once
    here, when the content is stored: a compaction takes them instead of scanning the text
    (docs/architecture.md, "Compaction"). Empty for an empty content."""
    return stored_facts(content) if content else {}


def content_token_counts(content: str) -> bytes:
    """The class counts of a message's content as its ``token_counts`` column keeps them,
    counted once here, when the content is stored: a load gives them to the message
    instead of counting it again (docs/tokens.md, "Counts stored with a message")."""
    return stored_counts(content) if content else b""


@transaction.atomic
def user_message_create(
    *,
    conversation: Conversation,
    content: str,
    attachments: Sequence[Attachment] = (),
    injected: bool = False,
    run_id: str | None = None,
) -> Message:
    """Persist what the user typed, ``pending`` until its run finishes."""
    if not isinstance(content, str):
        raise InvalidInput("invalid_content", gettext("The message content must be text."))
    check_storable(content, "message")
    if not content.strip() and not attachments:
        raise InvalidInput("empty_message", gettext("The message is empty."))
    for attachment in attachments:
        # Selectors already scope ids to the owner; this guards direct callers.
        if attachment.conversation_id != conversation.pk:
            raise InvalidInput(
                "attachment_mismatch", gettext("An attachment belongs to another conversation.")
            )
    message = Message.objects.create(
        conversation=conversation,
        role=Message.Role.USER,
        kind=Message.Kind.INJECTED if injected else Message.Kind.QUERY,
        status=Message.Status.PENDING,
        content=content,
        facts=content_facts(content),
        token_counts=content_token_counts(content),
        metadata={
            "images": [
                {"file_id": str(a.id), "mime_type": a.mime_type}
                for a in attachments
                if a.kind != Attachment.Kind.DOCUMENT
            ],
            **document_refs(attachments),
        },
        run_id=run_id or "",
    )
    if attachments:
        # An attachment already used by an earlier message stays linked to that one; the
        # new message still references it through its metadata.
        linked = Attachment.objects.filter(
            pk__in=[a.pk for a in attachments], message__isnull=True
        ).update(message=message)
        if linked:
            # After the commit, in short transactions of their own (docs/operations.md,
            # "Round 4"); a failure leaves the message stored and its pages to
            # ``manage.py rebuild_search_index``.
            transaction.on_commit(
                functools.partial(
                    _index_documents_of, message_id=message.pk, created_at=message.created_at
                )
            )
    titled = not conversation.title and not injected
    if titled:
        conversation.title = title_from(content)
        conversation.save(update_fields=["updated_at", "title"])
    else:  # most messages: the update save(update_fields=…) makes, compiled
        conversation.updated_at = timezone.now()
        touched = row_updates.CONVERSATION.update(
            {"updated_at": conversation.updated_at}, conversation=conversation.pk
        )
        if not touched:  # as save(update_fields=…) says it
            raise DatabaseError("Save with update_fields did not affect any rows.")
    search_index.index_message(message=message, fresh=True)
    if titled:
        search_index.index_title(conversation=conversation)
    return message


def _index_documents_of(*, message_id: int, created_at) -> None:
    try:
        search_index.index_documents(message_id=message_id, created_at=created_at)
    except Exception:
        logger.warning("message %s: could not index its documents", message_id, exc_info=True)


@transaction.atomic
def assistant_message_start(
    *, conversation: Conversation, run_id: str, mode: str, question: Message | None = None
) -> Message:
    """Start a run's answer, ``running``; ``question``: the user message the run answers."""
    if question is not None and question.conversation_id != conversation.pk:
        raise InvalidInput("bad_question", gettext("The question belongs to another conversation."))
    return Message.objects.create(
        conversation=conversation,
        role=Message.Role.ASSISTANT,
        kind=Message.Kind.ANSWER,
        status=Message.Status.RUNNING,
        pinned=False,
        content="",
        metadata={"mode": mode},
        run_id=run_id,
        question=question,
    )


@transaction.atomic
def assistant_message_finish(
    *,
    message: Message,
    content: str,
    status: str = "done",
    usage: dict | None = None,
    compaction: dict | None = None,
    error: dict | None = None,
    extra: dict | None = None,
    answered_ids: Sequence[int] | None = None,
) -> Message:
    """Store the final text and facts, and settle the user messages the run answered.

    The rule (docs/protocol.md): a run answers its question, the follow-ups handed to it
    when it started, and the follow-ups its engine took; at its end those become ``done``
    (``interrupted`` when the run was). The run pipeline passes them as ``answered_ids``;
    without them, the pending user messages of the answer's run id are settled. Follow-ups
    stored for the run that its engine never took are left to ``user_messages_settle``.
    """
    if status not in FINISH_STATUSES:
        raise InvalidInput("invalid_status", f"Cannot finish a message as {status!r}.")
    # A running answer was never indexed (the index holds finished texts only).
    first_finish = message.status == Message.Status.RUNNING
    before = message.metadata
    metadata: dict[str, Any] = dict(message.metadata or {})
    metadata.update(extra or {})
    for key, value in (("usage", usage), ("compaction", compaction), ("error", error)):
        if value is not None:
            metadata[key] = value
    message.content = content
    message.status = status
    message.kind = Message.Kind.ERROR if status == Message.Status.ERROR else Message.Kind.ANSWER
    message.metadata = metadata
    message.facts = content_facts(content)
    message.token_counts = content_token_counts(content)
    # Rendered once, here, off the event loop: reads serve the stored HTML.
    message.html, message.html_version = render_markdown(content), RENDERER_VERSION
    # An update, not save(): if the conversation was deleted mid-run there is nothing left
    # to finish, and that must not turn into an error in the run that is winding down.
    updated = row_updates.MESSAGE.update(
        {
            "content": message.content,
            "status": message.status,
            "kind": message.kind,
            "metadata": metadata,
            "facts": message.facts,
            "token_counts": message.token_counts,
            "html": message.html,
            "html_version": message.html_version,
        },
        message=message.pk,
    )
    if updated:
        # The answer's text and the tool results of its run become searchable.
        search_index.index_message(message=message, fresh=first_finish)

    settled = Message.Status.INTERRUPTED if status == Message.Status.INTERRUPTED else "done"
    if answered_ids is not None:
        user_messages_settle(
            conversation_id=message.conversation_id, ids=answered_ids, status=settled
        )
    elif message.run_id:
        Message.objects.filter(
            conversation_id=message.conversation_id,
            run_id=message.run_id,
            role=Message.Role.USER,
            status=Message.Status.PENDING,
        ).update(status=settled)
    ledger_change(
        conversation_id=message.conversation_id,
        before=before,
        after=metadata if updated else before,
        updated_at=timezone.now(),
    )
    return message


@transaction.atomic
def assistant_usage_add_descriptions(
    *,
    message_id: int,
    images: int,
    input_tokens: int,
    output_tokens: int,
    reasoning_tokens: int = 0,
    estimated: bool = False,
) -> dict | None:
    """Add the usage of images described after an answer was stored (those it pushed out
    of the pixel turns, described in the background) to that answer's usage: to its totals
    and compaction split, as the same calls made before an answer count, and to
    ``described_after`` (``images``, ``input_tokens``, ``output_tokens``), which says what
    it was. The row is locked, so two writers add up. Returns the answer's new metadata,
    or None when the answer is gone or has no usage."""
    message = Message.objects.select_for_update().filter(pk=message_id).first()
    if message is None:
        return None
    metadata = dict(message.metadata or {})
    usage = dict(metadata.get("usage") or {})
    if not usage:
        return None
    added = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    for key, value in added.items():
        usage[key] = int(usage.get(key) or 0) + value
        usage[f"compaction_{key}"] = int(usage.get(f"compaction_{key}") or 0) + value
    if reasoning_tokens:
        usage["reasoning_tokens"] = int(usage.get("reasoning_tokens") or 0) + reasoning_tokens
    if estimated:
        usage["estimated"] = True
    entry = dict(usage.get("described_after") or {})
    for key, value in {"images": images, **added}.items():
        entry[key] = int(entry.get(key) or 0) + value
    usage["described_after"] = entry
    metadata["usage"] = usage
    Message.objects.filter(pk=message_id).update(metadata=metadata)
    ledger_change(conversation_id=message.conversation_id, before=message.metadata, after=metadata)
    return metadata


@transaction.atomic(savepoint=False)  # one statement: the caller's transaction is enough
def user_messages_settle(*, conversation_id, ids: Sequence[int], status: str) -> int:
    """Give user messages of the conversation that wait for an answer (``pending``, or
    ``interrupted`` and answered again by a retry) their final ``status``."""
    if not ids:
        return 0
    return row_updates.WAITING_QUESTIONS.update(
        {"status": status}, conversation=conversation_id, ids=list(ids)
    )


@transaction.atomic
def user_messages_reopen(*, conversation_id, ids: Sequence[int]) -> int:
    """Mark user messages ``pending`` again: a retry answers them anew."""
    if not ids:
        return 0
    return Message.objects.filter(
        conversation_id=conversation_id, role=Message.Role.USER, pk__in=list(ids)
    ).update(status=Message.Status.PENDING)


@transaction.atomic
def messages_mark_interrupted() -> int:
    """Mark every message a dead server left ``running``/``pending`` as ``interrupted``.

    Call it once when the (single) server process starts, before it accepts runs. With
    several server processes sharing a database, it would also hit live runs of the others.
    """
    return Message.objects.filter(
        status__in=[Message.Status.RUNNING, Message.Status.PENDING]
    ).update(status=Message.Status.INTERRUPTED)


# --- helpers -------------------------------------------------------------------------------


def _clean_title(title: Any) -> str:
    if not isinstance(title, str):
        raise InvalidInput("invalid_title", "The title must be text.")
    check_storable(title, "title")
    title = " ".join(title.split())
    if len(title) > TITLE_MAX_CHARS:
        raise InvalidInput("title_too_long", f"The title is longer than {TITLE_MAX_CHARS} chars.")
    return title


@dataclass(frozen=True)
class ModelPick:
    """Which main model a conversation uses: a ModelConfig id, the built-in model, or
    neither (the configured default)."""

    model_config_id: int | None
    builtin_model: bool


def clean_model_pick(model_config_id: Any, builtin_model: Any) -> ModelPick:
    """A conversation's or a project's model pick, checked: a main ModelConfig id the user
    may pick, or the built-in model, or neither; never both."""
    if not isinstance(builtin_model, bool):
        raise InvalidInput("invalid_model", "builtin_model must be true or false.")
    config_id = clean_model_config(model_config_id)
    if builtin_model and config_id is not None:
        raise InvalidInput(
            "invalid_model", "Pick either the built-in model or a model_config, not both."
        )
    return ModelPick(model_config_id=config_id, builtin_model=builtin_model)


def changed_model_pick(model_config_id: Any, builtin_model: Any) -> ModelPick | None:
    """The model pick an update gives (either part UNSET: not given), checked; None when
    it gives neither. Picking one part leaves the other off."""
    if isinstance(model_config_id, Unset) and isinstance(builtin_model, Unset):
        return None
    return clean_model_pick(
        None if isinstance(model_config_id, Unset) else model_config_id,
        False if isinstance(builtin_model, Unset) else builtin_model,
    )


def clean_model_config(value: Any) -> int | None:
    """A main-role ModelConfig id the user may pick, or None (the default model)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput("invalid_model", "model_config must be a model's id or null.")
    if not ModelConfig.objects.filter(pk=value, role=ModelConfig.Role.MAIN).exists():
        raise InvalidInput("invalid_model", "No such model to choose.")
    return value


def _clean_mode(mode: Any) -> str:
    if mode not in Conversation.Mode.values:
        allowed = ", ".join(Conversation.Mode.values)
        raise InvalidInput("invalid_mode", f"Unknown mode {mode!r}; use one of: {allowed}.")
    return mode


def title_from(content: str) -> str:
    """A title from the first query: its first non-empty line, shortened on a word."""
    line = next((ln.strip() for ln in content.splitlines() if ln.strip()), "")
    line = " ".join(line.split())
    if len(line) <= AUTO_TITLE_CHARS:
        return line
    cut = line[:AUTO_TITLE_CHARS].rsplit(" ", 1)[0] or line[:AUTO_TITLE_CHARS]
    return cut.rstrip(" ,;:.") + "…"


# A stored tool result is kept whole up to this many characters (a runaway tool must not grow
# the database without limit); the record says how long the result was.
TOOL_RESULT_MAX_CHARS = 1_000_000


@transaction.atomic
def tool_results_store(*, message: Message, results: Sequence[Any]) -> int:
    """Keep the whole results of an answer's run (``results``: items with ``call_id``,
    ``name``, ``arguments`` and ``text``); returns how many were stored."""
    from chat.models import ToolResult

    rows = []
    for kept in results:
        text = kept.text or ""
        first = next((line.strip() for line in text.splitlines() if line.strip()), "")
        rows.append(
            ToolResult(
                conversation_id=message.conversation_id,
                message=message,
                call_id=str(kept.call_id)[:200],
                name=str(kept.name)[:200],
                arguments=kept.arguments or "",
                content=text[:TOOL_RESULT_MAX_CHARS],
                chars=len(text),
                first_line=first[:300],
            )
        )
    ToolResult.objects.bulk_create(rows)
    return len(rows)
