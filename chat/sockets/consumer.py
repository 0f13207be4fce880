"""The chat websocket, ``ws/chat/<conversation_id>/``.

Thin: it authenticates, checks ownership, validates frames and hands them to
``chat.runs``. Every socket of a conversation joins the conversation's group and relays
the run events published there, so a second tab sees the same run.

Close codes: 4401 anonymous, 4404 unknown or foreign conversation (the two are not told
apart, so ids of other users' conversations reveal nothing), also sent to every socket of a
conversation when it is deleted. A bad frame never closes the socket: it gets
``error {code, message}`` and the socket stays usable. Frames are parsed by
``chat.json_input`` (nesting limit), counted by ``rate_limit`` (per user, over all sockets
and processes), and every outgoing frame is cut to size by ``frames``.

Client frames: ``message``, ``cancel``, ``retry {message_id}`` — a failed, stopped or
interrupted newest answer asked again on the same persisted question (``runs.retry_answer``;
errors ``bad_message_id``, ``not_retryable``, ``run_active``), ``regenerate {message_id}``
— the same for the newest answer whatever its status (``runs.regenerate_answer``) — and
``edit {message_id, content}`` — the newest question sent again with new text
(``runs.edit_and_resend``; errors also ``not_editable`` and those of ``message``) — and
``approval {request_id, decision}`` — the answer to a run's ``tool.approval`` request
(``runs.answer_approval``; errors ``bad_request_id``, ``bad_decision``,
``no_pending_approval``).

A socket that joins while a run is active first gets ``run.active {run_id, message_id,
assistant_message_id, mode, text}`` — the answer streamed so far — and then the run's
further events (for second tabs and reconnects). One opened with ``?run_state=1`` (the chat
page's) that joins with no run under way, nor one ending, gets ``run.none`` instead.
"""

from __future__ import annotations

import logging
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext

from chat import runs
from chat.errors import AttachmentNotFound, ChatError
from chat.json_input import parse_json
from chat.models import Conversation
from chat.selectors import conversation_get
from chat.sockets import frames, rate_limit
from chat.sockets.languages import language_from_scope

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404
MAX_ATTACHMENTS = 16
# Selector/service codes about attachments, all reported to the client as bad_attachment.
_ATTACHMENT_CODES = {"invalid_attachments", "too_many_attachments", "attachment_mismatch"}


class ChatConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        self.user = self.scope.get("user")
        self.conversation_id = self.scope["url_route"]["kwargs"]["conversation_id"]
        self.group = runs.conversation_group(self.conversation_id)
        self.joined = False
        self.snapshot_gate = runs.SnapshotGate()
        # Accept first, then close with a code: a refused handshake carries no code at all.
        await self.accept()
        if self.user is None or not self.user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        if not await database_sync_to_async(_owns)(self.user, self.conversation_id):
            await self.close(code=CLOSE_NOT_FOUND)
            return
        await self.channel_layer.group_add(self.group, self.channel_name)
        self.joined = True
        # A second tab, or a client reconnecting mid-run: what it missed of the answer so
        # far (the rest arrives as events). Taken right after joining, with no await in
        # between, so no piece is missed or repeated (in-memory layer; see EventPublisher).
        here = runs.local_run(conversation_id=self.conversation_id)
        if here.snapshot is not None:
            await self.send_json({"type": "run.active", **here.snapshot})
        elif here.ending:
            pass  # its done / error / run.cancelled is still to come, to this socket too
        elif await runs.request_remote_snapshot(
            self.channel_layer, conversation_id=self.conversation_id, reply_to=self.channel_name
        ):
            # The run lives in another process : its run.active is on the way.
            self.snapshot_gate.wait()
        elif _asks_run_state(self.scope):
            # No run: a page that read the conversation while a run was writing its answer,
            # and joins after the run ended, reads it again (docs/protocol.md, "Websocket").
            await self.send_json({"type": "run.none"})

    async def disconnect(self, code) -> None:
        # The run, if any, goes on: it belongs to the conversation, not to this socket.
        if self.joined:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def dispatch(self, message) -> None:
        # Everything this socket says, and every run it starts (a task inherits the
        # context), speaks the user's interface language.
        if not hasattr(self, "language"):
            self.language = language_from_scope(self.scope)
        with translation.override(self.language):
            await self._dispatch(message)

    async def _dispatch(self, message) -> None:
        # Run events need no database connection: skip the base class's per-message
        # close_old_connections() thread hop on this hot path.
        if message.get("type") == "chat.event":
            await self.chat_event(message)
        elif message.get("type") == runs.CONVERSATION_DELETED:
            # Deleted by any path (API, admin, a deleted user): this socket has nothing left.
            await self.send_error("not_found", gettext("This conversation was deleted."))
            await self.close(code=CLOSE_NOT_FOUND)
        else:
            await super().dispatch(message)

    # --- client -> server ----------------------------------------------------------------

    async def receive(self, text_data=None, bytes_data=None, **kwargs) -> None:
        if not self.joined or self.user is None:  # a socket joins with its user only
            return
        if not await rate_limit.frame_allowed(self.user.pk):
            await self.send_error(
                "rate_limited",
                gettext("Too many messages: at most %(count)d every %(seconds)s seconds.")
                % {
                    "count": settings.FIMONE_WS_RATE_LIMIT,
                    "seconds": f"{settings.FIMONE_WS_RATE_WINDOW_SECONDS:g}",
                },
            )
            return
        if text_data is None:
            await self.send_error("invalid_json", "Frames must be JSON text, not binary.")
            return
        try:
            frame = parse_json(text_data, what="The frame")
        except ChatError as exc:
            await self.send_error(exc.code, exc.message)
            return
        await self.receive_json(frame)

    async def receive_json(self, content, **kwargs) -> None:
        if not isinstance(content, dict):
            await self.send_error("not_object", "A frame must be a JSON object.")
            return
        kind = content.get("type")
        if kind == "message":
            await self.on_message(content)
        elif kind == "cancel":
            await self.on_cancel()
        elif kind in ("retry", "regenerate"):
            await self.on_retry(content, regenerate=kind == "regenerate")
        elif kind == "edit":
            await self.on_edit(content)
        elif kind == "approval":
            await self.on_approval(content)
        else:
            await self.send_error(
                "unknown_type",
                f"Unknown frame type {kind!r}; use 'message', 'cancel', 'retry', "
                "'regenerate', 'edit' or 'approval'.",
            )

    async def on_message(self, frame: dict) -> None:
        problem = _message_problem(frame)
        if problem:
            await self.send_error(*problem)
            return
        try:
            await runs.submit_message(
                user=self.user,
                conversation_id=self.conversation_id,
                content=frame.get("content") or "",
                file_ids=frame.get("attachments") or [],
                mode=frame.get("mode"),
            )
        except Conversation.DoesNotExist:
            # Deleted (or given away) since the socket opened.
            await self.send_error("not_found", gettext("This conversation no longer exists."))
            await self.close(code=CLOSE_NOT_FOUND)
        except ChatError as exc:
            if isinstance(exc, AttachmentNotFound) or exc.code in _ATTACHMENT_CODES:
                await self.send_error("bad_attachment", exc.message)
            else:
                await self.send_error(exc.code, exc.message)
        except Exception:
            # E.g. the database is locked or gone: say so, and keep the socket.
            logger.exception("could not take a message for %s", self.conversation_id)
            await self.send_error(
                "server_error",
                gettext("The message could not be taken right now; send it again."),
            )

    async def on_retry(self, frame: dict, *, regenerate: bool = False) -> None:
        """``{"type": "retry", "message_id": <failed assistant message id>}``: a new run for
        the same question, reusing the persisted user message (``chat.runs.retry_answer``);
        ``regenerate``: any status of the newest answer (``chat.runs.regenerate_answer``)."""
        message_id = frame.get("message_id")
        if isinstance(message_id, bool) or not isinstance(message_id, int) or message_id < 1:
            await self.send_error("bad_message_id", "message_id must be an answer's id.")
            return
        again = runs.regenerate_answer if regenerate else runs.retry_answer
        await self._start_again(
            again(user=self.user, conversation_id=self.conversation_id, message_id=message_id),
            failure=gettext("The retry could not be started; try again."),
        )

    async def on_edit(self, frame: dict) -> None:
        """``{"type": "edit", "message_id": <newest question's id>, "content": "…"}``."""
        message_id = frame.get("message_id")
        if isinstance(message_id, bool) or not isinstance(message_id, int) or message_id < 1:
            await self.send_error("bad_message_id", "message_id must be a question's id.")
            return
        problem = _message_problem({"content": frame.get("content", "")})
        if problem:
            await self.send_error(*problem)
            return
        await self._start_again(
            runs.edit_and_resend(
                user=self.user,
                conversation_id=self.conversation_id,
                message_id=message_id,
                content=frame["content"],
            ),
            failure=gettext("The edit could not be sent; try again."),
        )

    async def _start_again(self, starting, *, failure: str) -> None:
        """Await a retry / regenerate / edit; its refusals become ``error`` frames."""
        try:
            await starting
        except Conversation.DoesNotExist:
            await self.send_error("not_found", gettext("This conversation no longer exists."))
            await self.close(code=CLOSE_NOT_FOUND)
        except ChatError as exc:
            await self.send_error(exc.code, exc.message)
        except Exception:
            logger.exception("could not answer again in %s", self.conversation_id)
            await self.send_error("server_error", failure)

    async def on_approval(self, frame: dict) -> None:
        """``{"type": "approval", "request_id": "…", "decision": "once" | "conversation" |
        "decline"}``: the answer to a ``tool.approval`` request of the active run."""
        request_id, decision = frame.get("request_id"), frame.get("decision")
        if not isinstance(request_id, str) or not 0 < len(request_id) <= 64:
            await self.send_error("bad_request_id", "request_id must be a tool.approval's id.")
            return
        if decision not in runs.APPROVAL_DECISIONS:
            await self.send_error(
                "bad_decision", "decision must be 'once', 'conversation' or 'decline'."
            )
            return
        try:
            taken = await runs.answer_approval(
                conversation_id=self.conversation_id, request_id=request_id, decision=decision
            )
        except Exception:
            logger.exception("could not answer an approval in %s", self.conversation_id)
            await self.send_error(
                "server_error", gettext("The answer could not be passed on; try again.")
            )
            return
        if not taken:
            await self.send_error(
                "no_pending_approval", gettext("That tool call is no longer waiting for you.")
            )

    async def on_cancel(self) -> None:
        try:
            cancelled = await runs.cancel_active_run(conversation_id=self.conversation_id)
        except Exception:
            logger.exception("could not cancel the run of %s", self.conversation_id)
            await self.send_error(
                "server_error", gettext("The run could not be stopped; try again.")
            )
            return
        if not cancelled:
            await self.send_error("no_active_run", gettext("There is no run to cancel."))

    # --- server -> client ----------------------------------------------------------------

    async def chat_event(self, message) -> None:
        if self.snapshot_gate.forward(message["event"]):
            await self.send_json(message["event"])

    async def send_error(self, code: str, text: str) -> None:
        await self.send_json({"type": "error", "code": code, "message": text})

    async def send_json(self, content, close=False) -> None:
        # Every frame under daphne's size limit: one oversized frame closes the socket.
        for text in frames.encode(content):
            await self.send(text_data=text)
        if close:
            await self.close(close)


def _asks_run_state(scope) -> bool:
    """Whether the socket was opened with ``?run_state=1``: it is told ``run.none`` when it
    joins with no run under way. Opt-in, so that clients reading the first frame after
    their own request are not handed another first."""
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    return query.get("run_state") == ["1"]


def _owns(user, conversation_id) -> bool:
    try:
        conversation_get(user=user, conversation_id=conversation_id)
    except Conversation.DoesNotExist:
        return False
    return True


def _message_problem(frame: dict) -> tuple[str, str] | None:
    """What is wrong with a ``message`` frame, as ``(code, message)``, or None."""
    content = frame.get("content", "")
    attachments = frame.get("attachments", [])
    if attachments is None:
        attachments = []
    if not isinstance(attachments, list) or not all(isinstance(a, str) for a in attachments):
        return "bad_attachment", "attachments must be a list of file ids."
    if len(attachments) > MAX_ATTACHMENTS:
        return "bad_attachment", gettext("At most %(count)d attachments per message.") % {
            "count": MAX_ATTACHMENTS
        }
    if not isinstance(content, str) or (not content.strip() and not attachments):
        return "content_missing", gettext("The message needs some text (or an image).")
    limit = settings.FIMONE_WS_MAX_CONTENT_CHARS
    if len(content) > limit:
        return "content_too_long", gettext("The message is longer than %(limit)d characters.") % {
            "limit": limit
        }
    mode = frame.get("mode")
    if mode is not None and mode not in runs.MODES:
        return "bad_mode", f"Unknown mode {mode!r}; use 'react' or 'dag'."
    return None
