"""Helpers and fixtures for the websocket run tests (a pytest plugin: tests/conftest.py
loads it through ``pytest_plugins``).

Sockets are real Channels ``WebsocketCommunicator``s on the project's routes; the user is
put in the scope directly (``deployed_socket`` goes through the full ASGI stack with a
session cookie and an Origin header instead). A run's collaborators (LLMs, budgets,
memory, engine, tools) are replaced through the ``run_deps`` fixture.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from chat.runs import ahead, deps
from chat.runs.deps import RunDeps
from chat.runs.registry import registry
from chat.sockets.routing import websocket_urlpatterns
from tests.support.fake_llm import FakeLLM

# Guards against a hang, not a speed requirement: a healthy run answers in milliseconds.
WAIT = 30.0


@pytest.fixture
async def clean_runs():
    """An empty in-memory channel layer before, and no run (nor a description it left
    working in the background) left behind after, each test."""
    layer = get_channel_layer()
    await layer.flush()
    yield layer
    try:
        async with asyncio.timeout(WAIT):
            await registry.wait_idle()
            await ahead.wait_idle()
    finally:
        for run in registry.active():
            run.task.cancel()
        await ahead.stop()
        await layer.flush()


class RunDepsOverride:
    """The collaborators new runs are built with, for one test."""

    @property
    def current(self) -> RunDeps:
        return deps.current()

    def use(self, **changes) -> RunDeps:
        """Build new runs with these collaborators (``get_llm=…``, ``engine_for=…``)."""
        replaced = deps.current().replace(**changes)
        deps.install(replaced)
        return replaced


@pytest.fixture
def run_deps():
    """Replace a run's collaborators for this test: ``run_deps.use(get_llm=…)``."""
    previous = deps.current()
    yield RunDepsOverride()
    deps.install(previous)


@pytest.fixture
def ws_fake_llm(run_deps) -> FakeLLM:
    """One scripted LLM for every role (main, fast, compaction)."""
    llm = FakeLLM(model_name="fake-main")
    run_deps.use(get_llm=lambda role: llm)
    return llm


async def connect(user, conversation_id, *, query: str = "") -> WebsocketCommunicator:
    """An accepted socket on the conversation, as ``user`` (None: anonymous); ``query``:
    the address's query string (``run_state=1``: the chat page's)."""
    from django.contrib.auth.models import AnonymousUser

    path = f"/ws/chat/{conversation_id}/" + (f"?{query}" if query else "")
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path)
    comm.scope["user"] = user if user is not None else AnonymousUser()
    connected, _ = await comm.connect(timeout=WAIT)
    assert connected
    return comm


async def deployed_socket(
    user,
    conversation_id,
    *,
    origin: bytes = b"http://127.0.0.1:8000",
    cookies: str = "",
    headers: tuple[tuple[bytes, bytes], ...] = (),
) -> WebsocketCommunicator:
    """A socket through the whole ASGI stack as deployed (``config.asgi``: origin
    validation, session authentication), with ``user``'s session cookie (and ``cookies``);
    not connected yet."""
    from django.test import Client

    from config.asgi import application

    client = Client()
    await sync_to_async(client.force_login)(user)
    cookie = "; ".join(filter(None, [f"sessionid={client.cookies['sessionid'].value}", cookies]))
    return WebsocketCommunicator(
        application,
        f"/ws/chat/{conversation_id}/",
        headers=[(b"origin", origin), (b"cookie", cookie.encode()), *headers],
    )


async def next_event(comm: WebsocketCommunicator) -> dict[str, Any]:
    return await comm.receive_json_from(timeout=WAIT)


async def events_until(comm: WebsocketCommunicator, *types: str) -> list[dict[str, Any]]:
    """Every event up to and including the first whose type is one of ``types``."""
    seen = []
    while True:
        event = await next_event(comm)
        seen.append(event)
        if event["type"] in types:
            return seen


def answer_text(events: list[dict]) -> str:
    return "".join(e["text"] for e in events if e["type"] == "answer.delta")


def of_type(events: list[dict], kind: str) -> list[dict]:
    return [e for e in events if e["type"] == kind]


async def send(comm: WebsocketCommunicator, **frame) -> None:
    await comm.send_json_to(frame)


class ScriptedEngine:
    """Stands in for ReAct/DAG: ``use(coro_fn, …)`` scripts the next runs, one each, in order.

    ``contexts`` holds the AgentContext each run was given, ``modes`` the mode it asked for.
    """

    def __init__(self) -> None:
        self.scripts: list = []
        self.modes: list[str] = []
        self.contexts: list = []

    def use(self, *scripts) -> None:
        self.scripts.extend(scripts)

    def engine_for(self, mode: str) -> ScriptedEngine:
        self.modes.append(mode)
        return self

    async def __call__(self, ctx):
        self.contexts.append(ctx)
        return await self.scripts.pop(0)(ctx)


def install_scripted_engine(run_deps: RunDepsOverride) -> ScriptedEngine:
    scripted = ScriptedEngine()
    run_deps.use(engine_for=scripted.engine_for)
    return scripted


@pytest.fixture
def engine(run_deps) -> ScriptedEngine:
    """Scripted engines: ``engine.use(coro_fn, …)``, one per run, in order;
    ``engine.contexts`` holds what each run was given."""
    return install_scripted_engine(run_deps)


def use_small_budget(run_deps: RunDepsOverride, *, usable: int = 4_000) -> None:
    """Every role's budget: a 12,000-token window, 4,000 for output, ``usable`` for input."""
    from contextmgmt.budget import Budget

    budget = Budget(
        role="main",
        context_size=12_000,
        max_output_tokens=4_000,
        usable_input_tokens=usable,
        source="env",
    )
    run_deps.use(resolve_budget=lambda role: budget)


def history_just_under(conversation, tokens: int) -> None:
    """Eight stored turns whose estimate is exactly ``tokens``: DbMemory
    loads them all, and a system prompt on top pushes the first iteration over budget."""
    from chat import services
    from contextmgmt.core.messages import ChatMessage
    from contextmgmt.core.tokens import estimate_messages_tokens

    roles = ["user", "assistant"] * 4

    def estimate(ts):
        return estimate_messages_tokens(
            [ChatMessage(role=r, content=t) for r, t in zip(roles, ts, strict=True)]
        )

    def turns(repeat):
        return [f"Turn {i}: " + "words and numbers 12345 " * repeat for i in range(8)]

    # The fewest repetitions that reach ``tokens``, then the last turn trimmed a character
    # at a time (each costs less than a token, so the estimate meets ``tokens`` exactly).
    repeat = 1
    while estimate(turns(repeat)) < tokens:
        repeat += 1
    texts = turns(repeat)
    while estimate(texts) > tokens:
        texts[-1] = texts[-1][:-1]
    assert estimate(texts) == tokens
    for i in range(0, 8, 2):
        services.user_message_create(conversation=conversation, content=texts[i], run_id=f"h{i}")
        reply = services.assistant_message_start(
            conversation=conversation, run_id=f"h{i}", mode="react"
        )
        services.assistant_message_finish(message=reply, content=texts[i + 1])


def history_filling_the_load_budget(conversation, query: str, main_budget: int) -> int:
    """Stored turns taking exactly what the run leaves history for ``query`` (the budget
    less the engine's system prompt, tool schemas and the query): DbMemory loads them all
    and the first call fits; one tool round more does not. Returns that history budget."""
    from chat.runs.deps import make_tools
    from contextmgmt.core.messages import ChatMessage
    from fimone.agent.react import history_budget

    tokens = history_budget(
        main_budget,
        query=ChatMessage(role="user", content=query),
        tools=make_tools(conversation.id, before_id=0),
    )
    history_just_under(conversation, tokens)
    return tokens
