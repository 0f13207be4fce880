"""The chat page (``/``) and the small JSON endpoints only the page needs.

The JSON API proper lives in ``chat/api/conversations.py``; this module renders the app shell and
answers the context gauge. Both are owner-only like the API: another user's conversation
is a 404.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.staticfiles import finders
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET

from chat import selectors
from chat.api.plumbing import api_view
from chat.compaction.ledger import compaction_ledger
from chat.instructions import instructions_max_chars
from chat.models import Conversation
from fimone.llm import OFFLINE_MODEL_NAME

if TYPE_CHECKING:
    from contextmgmt.budget import Budget, BudgetRole

log = logging.getLogger(__name__)

_UNKNOWN_LLM = {"model": "unknown", "source": "unknown", "offline": False}


def _llm_info(role: BudgetRole) -> dict[str, Any]:
    """What ``fimone.llm.registry.describe_llm(role)`` says, as plain JSON-able data.

    The page must render even if the model configuration is broken: the failure is logged
    and shown as an unknown model rather than a 500.
    """
    try:
        from fimone.llm.registry import describe_llm
    except ImportError:
        return dict(_UNKNOWN_LLM)
    try:
        info = describe_llm(role)
    except Exception:
        log.exception("describe_llm(%r) failed", role)
        return dict(_UNKNOWN_LLM)
    if not isinstance(info, dict):
        info = {k: getattr(info, k) for k in dir(info) if not k.startswith("_")}
    model = info.get("model") or info.get("model_name") or info.get("name") or "unknown"
    return {
        "model": str(model),
        "source": str(info.get("source", "unknown")),
        "offline": bool(info.get("offline", False)),
    }


def _picked_llm_info(conversation: Conversation) -> dict[str, Any]:
    """The model that answers ``conversation``: its pick, else the configured default."""
    if conversation.builtin_model:
        return {"model": OFFLINE_MODEL_NAME, "source": "offline", "offline": True}
    config_id = conversation.model_config_id
    row = None if config_id is None else selectors.model_choice(config_id)
    if row is None:
        return _llm_info("main")
    return {"model": row["model"], "source": "db", "offline": False}


def _budget(role: BudgetRole, conversation: Conversation | None = None) -> Budget:
    """The budget of ``role``, or of the model a conversation picked (the built-in one's for
    both roles, as its runs use it for both)."""
    from contextmgmt.budget import budget_for_config, builtin_budget, resolve_budget

    if conversation is not None and conversation.builtin_model:
        return builtin_budget(role)
    if conversation is None or conversation.model_config_id is None or role != "main":
        return resolve_budget(role)
    return budget_for_config(conversation.model_config_id)


def _budget_info(budget: Budget) -> dict[str, Any]:
    usable = int(budget.usable_input_tokens)
    return {
        "usable_input_tokens": usable,
        # After per-model calibration: the figure compaction really triggers at.
        "effective_input_tokens": budget.effective_input_tokens,
        "context_size": int(budget.context_size),
        "max_output_tokens": int(budget.max_output_tokens),
        "source": str(budget.source),
    }


def _next_history(conversation: Conversation, *, vision: bool):
    """The history the next run loads, before it is fitted to its room.

    Loaded exactly as the run loads it for DbMemory (newest stored summary + the messages
    after it, failed answers left out; for a main model that sees, ``vision``, the newest
    pixel turns' images as pixels, every other image as its description), so each image
    counts once, as it will be sent: pixels by their size under the tile rule, read from the
    file's header only (docs/tokens.md), descriptions as text. Nothing is stored.
    """
    from chat.history import load_history

    return load_history(conversation.id, vision=vision, for_count=True)


def _history_tokens(loaded, room: int) -> tuple[int, int, bool]:
    """(estimated tokens, message count, starts from a summary) of a loaded history,
    before it is fitted to ``room``."""
    from contextmgmt.core.compact import CompactUtils
    from contextmgmt.db_memory import summary_message

    messages = list(loaded.messages)
    if loaded.summary is not None:
        messages.insert(0, summary_message(loaded.summary, max_tokens=room))
    used = CompactUtils.estimate_messages_tokens(messages)
    return used, len(loaded.messages), loaded.summary is not None


def _ordinary_request(conversation: Conversation, budget: int, used: tuple[str, ...]):
    """The next request of this conversation before its question, as its engine sends it
    (``used``: the tools its history calls)."""
    from chat.documents.context import has_documents
    from chat.instructions import conversation_instructions
    from chat.projects.context import project_files_for, with_project_files
    from chat.runs.deps import make_tools
    from chat.tool_servers.pool import cached_server_tools
    from fimone.agent.history_room import ordinary_request

    # The project's files as the next run reads them: in the instructions tier, and a
    # reason to offer read_document.
    files = project_files_for(
        project_id=conversation.project_id, owner_id=conversation.owner_id, budget=budget
    )
    tools = make_tools(
        conversation.id,
        before_id=0,
        documents=files.any or has_documents(conversation.id),
        disabled_sources=conversation.disabled_tool_sources or (),
        project_id=files.project_id,
    )
    for tool in cached_server_tools():  # the tool servers' schemas are sent too
        if tool.name not in tools and tool.source not in conversation.disabled_tool_sources:
            tools.register(tool)
    return ordinary_request(
        conversation.mode,
        budget,
        tools=tools,
        used_tools=used,
        instructions=with_project_files(conversation_instructions(conversation), files),
    )


def _sees_images(conversation: Conversation) -> bool:
    """Whether the next run sends its history's newest images as pixels, decided as the run
    decides it."""
    from chat.runs import deps, preparation

    return preparation.history_sees_images(
        mode=conversation.mode,
        model_config_id=conversation.model_config_id,
        builtin_model=conversation.builtin_model,
        deps=deps.current(),
    )


@require_GET
def favicon(request: HttpRequest) -> FileResponse:
    """``/favicon.ico``, where browsers and feed readers look for the icon by themselves
    (the pages link it too); public, as the login page's icon."""
    path = finders.find("chat/favicon.ico")
    if not path:
        raise Http404("No icon.")
    response = FileResponse(open(path, "rb"), content_type="image/x-icon")
    response["Cache-Control"] = "public, max-age=86400"
    return response


@require_GET
@login_required
@ensure_csrf_cookie
def index(request: HttpRequest, conversation_id: str | None = None) -> HttpResponse:
    """The app shell; conversations and messages come from the JSON API and the socket."""
    if conversation_id is not None:
        try:
            selectors.conversation_get(user=request.user, conversation_id=conversation_id)
        except Conversation.DoesNotExist as exc:
            raise Http404("No such conversation.") from exc
    main = _llm_info("main")
    fast = _llm_info("fast")
    config = {
        "username": request.user.get_username(),
        "conversationId": str(conversation_id) if conversation_id else None,
        "llm": {"main": main, "fast": fast},
        "offline": main["offline"] or fast["offline"],
        # The model picker: the configured default (offline when nothing is configured)
        # and every main ModelConfig a conversation may pick instead.
        "models": selectors.model_choices(),
        # The built-in offline model, pickable beside them (it answers with no model set up).
        "builtinModel": OFFLINE_MODEL_NAME,
        "maxUploadBytes": settings.FIMONE_MAX_UPLOAD_BYTES,
        "maxMessageChars": settings.FIMONE_WS_MAX_CONTENT_CHARS,
        # A project's or a chat's instructions (the panels count against it).
        "maxInstructionsChars": instructions_max_chars(),
        # Always below the message limit: longer text is attached, never refused.
        "pasteAttachChars": max(
            1, min(settings.FIMONE_PASTE_ATTACH_CHARS, settings.FIMONE_WS_MAX_CONTENT_CHARS - 1)
        ),
    }
    context = {"ui_config": config, "offline": config["offline"], "llm": config["llm"]}
    return render(request, "chat/index.html", context)


@api_view("GET")
def context_gauge(request: HttpRequest, conversation_id: str) -> HttpResponse:
    """How full the usable input budget is for this conversation's next run (the gauge)."""
    conversation = selectors.conversation_get(user=request.user, conversation_id=conversation_id)
    # History loads against the main budget in both modes (the conversation's own pick of
    # main model, if any); DAG steps use the fast one.
    from contextmgmt.core.tokens import use_weights
    from fimone.agent.tools.finder import tools_called

    main = _budget("main", conversation)
    budget = _budget_info(main)
    # Counted as the run will count it: in the main model's calibrated weights.
    with use_weights(main.token_weights):
        loaded = _next_history(conversation, vision=_sees_images(conversation))
        ordinary = _ordinary_request(
            conversation, budget["effective_input_tokens"], tools_called(loaded.messages)
        )
        history, count, summarised = _history_tokens(loaded, ordinary.room)
    limit = max(1, budget["effective_input_tokens"])
    # What the request sends (see docs/architecture.md, "Context gauge"): a stored history
    # larger than its room is fitted to it first, so the figure never passes the budget.
    used = ordinary.sends(history)
    return JsonResponse(
        {
            "mode": conversation.mode,
            "llm": _picked_llm_info(conversation),
            "budget": budget,
            "fast_budget": _budget_info(_budget("fast", conversation)),
            "used_tokens": used,
            # The history as stored (the newest summary and the messages after it) and
            # the room the request leaves it.
            "history_tokens": history,
            "history_room_tokens": ordinary.room,
            # The request tier by tier (docs/architecture.md, "Context gauge"): the system
            # prompt, the standing instructions (the project's and the conversation's),
            # the tool definitions it sends, the history as fitted to its room.
            "tiers": {
                "system": ordinary.system,
                "instructions": ordinary.instructions,
                "tools": ordinary.tools,
                "history": min(history, ordinary.room),
            },
            # Whether the definitions were cut to a finder and the tools in use, how many
            # are sent of how many the model can call, and the share they may take.
            "tools": {
                "offered": ordinary.tools_offered,
                "enabled": ordinary.tools_enabled,
                "deferred": ordinary.tools_deferred,
                "share_tokens": ordinary.tools_share,
            },
            "message_count": count,
            "percent": round(min(100.0, 100.0 * used / limit), 1),
            # Over its room: the next run compacts history before the model sees it.
            "will_compact": history > ordinary.room,
            # Older history is already a summary: near-full is the normal state then.
            "summarised": summarised,
            # What compaction cost and saved in this conversation so far.
            "ledger": compaction_ledger(conversation=conversation),
        }
    )
