"""Run orchestration over the websocket (SPEC R4.4, RU.2, RU.3, RP.1).

The engine is replaced by small scripted coroutines, so each test controls exactly what
the "agent" does (emit, fail, wait for a cancel, read injections); budgets and DbMemory
are the real ones and the LLM is a FakeLLM. test_runs_engines.py drives the real ReAct
and DAG engines.
"""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile

from chat import services
from chat.models import ContextSummary, Message
from chat.runs import work
from chat.runs.registry import registry
from contextmgmt.budget import Budget
from contextmgmt.core.llm import LLMAuthError, LLMUnavailable
from fimone.agent.context import AgentOutcome
from tests.chat.images import image_bytes
from tests.support.runs import (
    WAIT,
    answer_text,
    connect,
    events_until,
    next_event,
    of_type,
    send,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs", "ws_fake_llm"),
]


async def answer(ctx, text: str = "Hello **world**", *, usage=None) -> AgentOutcome:
    for piece in text.split(" "):
        await ctx.sink("answer.delta", {"text": piece + " "})
    return AgentOutcome(answer=text, usage=usage or ctx.llm.usage)


async def messages_of(conversation) -> list[Message]:
    return [m async for m in Message.objects.filter(conversation=conversation).order_by("id")]


# --- the happy path ------------------------------------------------------------------------


async def test_events_in_order_and_everything_persisted(socket, conversation, engine, ws_fake_llm):
    ws_fake_llm.enqueue("thinking done")
    calls = []

    async def script(ctx):
        await ctx.sink("step", {"iteration": 1, "kind": "thought", "text": "hm"})
        calls.append(await ctx.llm.chat([ctx.query]))
        return await answer(ctx)

    engine.use(script)
    await send(socket, type="message", content="Say hello", mode="react")
    events = await events_until(socket, "done", "error")

    started, done = events[0], events[-1]
    assert started["type"] == "run.started" and started["mode"] == "react"
    assert started["content"] == "Say hello" and started["images"] == []
    assert [e["type"] for e in events[1:-1] if e["type"] != "answer.delta"] == ["step"]
    assert answer_text(events).strip() == "Hello **world**"
    assert done["type"] == "done"
    usage = calls[0].usage
    assert done["usage"] == {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "compaction_input_tokens": 0,
        "compaction_output_tokens": 0,
        "model": "fake-main",  # which model answered, for the usage card
    }
    assert "<strong>world</strong>" in done["html"]
    assert isinstance(done["elapsed_ms"], int) and done["elapsed_ms"] >= 0

    query, reply = await messages_of(conversation)
    assert started["message_id"] == query.id and done["message_id"] == reply.id
    # Stored unpinned: ``pinned`` is the user's own "keep verbatim" (RV.2); the run's query
    # is pinned in the engine (ctx.query), not in the table.
    assert (query.role, query.kind, query.status, query.pinned) == ("user", "query", "done", False)
    assert query.content == "Say hello"
    assert query.run_id == started["run_id"] == done["run_id"]
    assert (reply.role, reply.kind, reply.status) == ("assistant", "answer", "done")
    assert reply.content == "Hello **world**"
    assert reply.metadata["usage"] == done["usage"]
    assert reply.run_id == started["run_id"]


async def test_mode_comes_from_the_frame_else_from_the_conversation(socket, engine):
    engine.use(answer, answer)
    await send(socket, type="message", content="plan it", mode="dag")
    first = await events_until(socket, "done")
    await send(socket, type="message", content="and now?")
    second = await events_until(socket, "done")
    assert engine.modes == ["dag", "react"]  # the conversation's mode is react
    assert first[0]["mode"] == "dag" and second[0]["mode"] == "react"


async def test_engine_sees_history_and_the_pinned_query_once(socket, engine):
    engine.use(answer, answer)
    await send(socket, type="message", content="first question")
    await events_until(socket, "done")
    await send(socket, type="message", content="second question")
    await events_until(socket, "done")

    ctx = engine.contexts[1]
    assert [(m.role, m.text()) for m in ctx.history] == [
        ("user", "first question"),
        ("assistant", "Hello **world**"),
    ]
    assert ctx.query.text() == "second question"
    assert ctx.query.pinned and not ctx.query.injected
    assert ctx.main_budget == 60_000 and ctx.fast_budget == 60_000  # R5.1 defaults


async def test_engine_gets_the_configured_per_call_llm_timeout(socket, engine, settings):
    """Runs bound every model call themselves: the SDK's per-attempt timeout alone
    lets retries hold a user for minutes."""
    settings.LLM_TIMEOUT_SECONDS = 7.5
    engine.use(answer)
    await send(socket, type="message", content="question")
    await events_until(socket, "done")
    assert engine.contexts[0].llm_timeout == 7.5


async def test_compaction_sizes_its_input_in_the_fast_models_weights_rk_2(socket, engine, run_deps):
    """RK.2: the run estimates in the main model's weights, and its compaction LLM (the
    fast model) carries the fast model's, which summarising sizes its input with."""
    from contextmgmt.core.tokens import BASE_WEIGHTS, current_weights

    main_weights = tuple(1.5 * w for w in BASE_WEIGHTS)
    fast_weights = tuple(3 * w for w in BASE_WEIGHTS)

    def resolve(role):
        weights = main_weights if role == "main" else fast_weights
        return Budget(role, 40_000, 4_000, 20_000, "db", token_weights=weights)

    run_deps.use(resolve_budget=resolve)
    seen = {}

    async def script(ctx):
        seen["run"] = current_weights()
        seen["compact"] = ctx.compact_llm.token_weights
        return await answer(ctx)

    engine.use(script)
    await send(socket, type="message", content="question")
    await events_until(socket, "done")
    assert seen == {"run": main_weights, "compact": fast_weights}


async def test_usage_totals_include_compaction_calls(socket, conversation, engine, ws_fake_llm):
    """RU.2: ``input_tokens`` / ``output_tokens`` are totals; compaction is also split out."""
    ws_fake_llm.enqueue("an answer call", "a compaction call")
    results = {}

    async def script(ctx):
        results["main"] = await ctx.llm.chat([ctx.query])
        results["compact"] = await ctx.compact_llm.chat([ctx.query, ctx.query])
        return AgentOutcome(answer="ok")

    engine.use(script)
    await send(socket, type="message", content="count it")
    done = (await events_until(socket, "done"))[-1]
    main, compact = results["main"].usage, results["compact"].usage
    assert done["usage"] == {
        "input_tokens": main.input_tokens + compact.input_tokens,
        "output_tokens": main.output_tokens + compact.output_tokens,
        "compaction_input_tokens": compact.input_tokens,
        "compaction_output_tokens": compact.output_tokens,
        "model": done["usage"]["model"],
    }
    reply = (await messages_of(conversation))[-1]
    assert reply.metadata["usage"] == done["usage"]


# --- failures (RU.3) -------------------------------------------------------------------------


async def test_failure_keeps_partial_text_and_the_next_run_works(socket, conversation, engine):
    async def failing(ctx):
        await ctx.sink("answer.delta", {"text": "The first half"})
        raise LLMUnavailable("connection refused")

    engine.use(failing, answer)
    await send(socket, type="message", content="tell me")
    events = await events_until(socket, "done", "error")
    error = events[-1]
    assert error["type"] == "error" and error["code"] == "llm_unavailable"
    assert "connection refused" in error["message"]
    assert answer_text(events) == "The first half"

    query, reply = await messages_of(conversation)
    assert error["message_id"] == reply.id
    assert query.content == "tell me" and query.status == "done"
    assert (reply.status, reply.kind, reply.content) == ("error", "error", "The first half")
    assert reply.metadata["error"]["code"] == "llm_unavailable"

    await send(socket, type="message", content="try again")
    assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"


async def test_internal_error_says_nothing_about_internals(socket, engine):
    async def broken(ctx):
        raise RuntimeError("secret at /srv/fimone/settings.py line 3")

    engine.use(broken)
    await send(socket, type="message", content="boom?")
    error = (await events_until(socket, "done", "error"))[-1]
    assert error["code"] == "internal_error"
    assert "secret" not in error["message"] and "settings" not in error["message"]


async def test_failure_before_the_engine_still_keeps_the_user_message(
    socket, conversation, engine, run_deps
):
    def no_llm(role):
        raise LLMAuthError("401 invalid key")

    run_deps.use(get_llm=no_llm)
    engine.use(answer)
    await send(socket, type="message", content="are you there?")
    error = (await events_until(socket, "done", "error"))[-1]
    assert error["code"] == "llm_auth"
    query, reply = await messages_of(conversation)
    assert query.content == "are you there?"
    assert (reply.status, reply.content) == ("error", "")
    assert engine.contexts == []


# --- cancel ---------------------------------------------------------------------------------


async def test_cancel_stops_the_engine_and_keeps_the_partial_answer(socket, conversation, engine):
    cancelled = asyncio.Event()

    async def endless(ctx):
        await ctx.sink("answer.delta", {"text": "Halfway there"})
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    engine.use(endless, answer)
    await send(socket, type="message", content="go on forever")
    events = await events_until(socket, "answer.delta")
    await send(socket, type="cancel")
    events += await events_until(socket, "run.cancelled", "done", "error")

    final = events[-1]
    assert final["type"] == "run.cancelled"
    assert cancelled.is_set()
    query, reply = await messages_of(conversation)
    ids = {"type": "run.cancelled", "message_id": reply.id, "run_id": events[0]["run_id"]}
    assert {key: final[key] for key in ids} == ids
    # What the stopped answer cost, as stored, for its usage card (RU.13).
    assert final["usage"] == reply.metadata["usage"]
    assert final["elapsed_ms"] >= 0
    assert (reply.status, reply.content) == ("cancelled", "Halfway there")
    assert query.status == "done"

    # The socket stays usable: nothing to cancel now, and a new run works.
    await send(socket, type="cancel")
    assert (await next_event(socket))["code"] == "no_active_run"
    await send(socket, type="message", content="short one please")
    assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"


# --- injection (RP.1) ------------------------------------------------------------------------


async def test_message_during_a_run_is_injected_pinned(socket, conversation, engine):
    async def waits_for_follow_up(ctx):
        await ctx.sink("answer.delta", {"text": "Working… "})
        # The queue has nothing to await on: poll it the way the engines do.
        while not (follow_ups := ctx.injections.drain()):  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        return AgentOutcome(answer="Also: " + follow_ups[0].text())

    engine.use(waits_for_follow_up)
    await send(socket, type="message", content="write a poem")
    await events_until(socket, "answer.delta")
    await send(socket, type="message", content="make it rhyme")
    events = await events_until(socket, "done", "error")

    injected = of_type(events, "injected")
    assert len(injected) == 1 and injected[0]["content"] == "make it rhyme"
    assert events[-1]["type"] == "done"
    query, reply, follow_up = await messages_of(conversation)
    assert injected[0]["message_id"] == follow_up.id
    assert (follow_up.kind, follow_up.pinned, follow_up.role) == ("injected", False, "user")
    assert follow_up.run_id == query.run_id
    assert reply.content == "Also: make it rhyme"
    assert engine.modes == ["react"]  # one run, not two


async def test_follow_up_the_engine_never_took_gets_its_own_run(socket, conversation, engine):
    gate = asyncio.Event()

    async def answers_without_draining(ctx):
        await ctx.sink("answer.delta", {"text": "Almost done"})
        await gate.wait()
        return AgentOutcome(answer="Almost done")

    engine.use(answers_without_draining, answer)
    await send(socket, type="message", content="first")
    first_started = (await events_until(socket, "run.started"))[-1]
    await send(socket, type="message", content="one more thing")
    injected = (await events_until(socket, "injected"))[-1]
    gate.set()
    events = await events_until(socket, "done")
    events += await events_until(socket, "done")

    starts = of_type(events, "run.started")
    assert len(starts) == 1 and starts[0]["run_id"] != first_started["run_id"]
    assert starts[0]["message_id"] == injected["message_id"]
    follow_up_ctx = engine.contexts[1]
    assert follow_up_ctx.query.text() == "one more thing"
    assert follow_up_ctx.query.pinned and not follow_up_ctx.query.injected
    assert [m.text() for m in follow_up_ctx.history] == ["first", "Almost done"]
    replies = [m for m in await messages_of(conversation) if m.role == "assistant"]
    assert [r.status for r in replies] == ["done", "done"]


async def test_a_message_sent_as_done_arrives_starts_a_run_of_its_own(socket, conversation, engine):
    """A run has left the registry when its sockets hear ``done``: the next message, sent
    the moment it arrives, is a question of its own, not a follow-up of the finished run
    (which would store it as injected and answer it with a follow-up run)."""
    engine.use(answer, answer)
    await send(socket, type="message", content="first")
    first = await events_until(socket, "done")
    assert registry.get(conversation.id) is None
    await send(socket, type="message", content="second, at once")
    events = await events_until(socket, "done", "error", "injected")

    assert not of_type(events, "injected"), events
    started = of_type(events, "run.started")
    assert len(started) == 1 and started[0]["content"] == "second, at once"
    assert started[0]["run_id"] != first[0]["run_id"]
    second = (await messages_of(conversation))[-2]
    assert (second.content, second.kind) == ("second, at once", "query")


async def test_cancelled_run_starts_no_follow_up(socket, engine):
    async def endless(ctx):
        await ctx.sink("answer.delta", {"text": "…"})
        await asyncio.Event().wait()

    engine.use(endless)
    await send(socket, type="message", content="first")
    await events_until(socket, "answer.delta")
    await send(socket, type="message", content="second")
    await events_until(socket, "injected")
    await send(socket, type="cancel")
    await events_until(socket, "run.cancelled")
    async with asyncio.timeout(WAIT):
        await registry.wait_idle()
    assert engine.modes == ["react"]


# --- several sockets ---------------------------------------------------------------------------


async def test_two_sockets_see_the_same_events(user, conversation, engine):
    engine.use(answer)
    tab_a = await connect(user, conversation.id)
    tab_b = await connect(user, conversation.id)
    await send(tab_a, type="message", content="hello from tab A")
    seen_a = await events_until(tab_a, "done")
    seen_b = await events_until(tab_b, "done")
    assert seen_a == seen_b
    assert [e["type"] for e in seen_a][0] == "run.started"
    await tab_a.disconnect()
    await tab_b.disconnect()


async def test_second_tab_can_cancel_the_run(user, conversation, engine):
    async def endless(ctx):
        await ctx.sink("answer.delta", {"text": "…"})
        await asyncio.Event().wait()

    engine.use(endless)
    tab_a = await connect(user, conversation.id)
    tab_b = await connect(user, conversation.id)
    await send(tab_a, type="message", content="long job")
    await events_until(tab_b, "answer.delta")
    await send(tab_b, type="cancel")
    assert (await events_until(tab_a, "run.cancelled"))[-1]["type"] == "run.cancelled"
    await tab_a.disconnect()
    await tab_b.disconnect()


async def test_run_survives_its_socket_closing(user, conversation, engine):
    gate = asyncio.Event()

    async def slow(ctx):
        await gate.wait()
        return await answer(ctx, "finished anyway")

    engine.use(slow)
    comm = await connect(user, conversation.id)
    await send(comm, type="message", content="answer even if I leave")
    await events_until(comm, "run.started")
    await comm.disconnect()
    gate.set()
    async with asyncio.timeout(WAIT):
        await registry.wait_idle()
    reply = (await messages_of(conversation))[-1]
    assert (reply.status, reply.content) == ("done", "finished anyway")


# --- history compaction (R4.4, RU.1) -----------------------------------------------------------


@pytest.fixture
def tiny_budget(run_deps):
    budget = Budget(
        role="main",
        context_size=10_000,
        max_output_tokens=2_000,
        usable_input_tokens=4_000,
        source="env",
    )
    run_deps.use(resolve_budget=lambda role: budget)
    return budget


def _long_history(conversation, turns: int) -> None:
    for i in range(turns):
        run_id = f"old{i}"
        services.user_message_create(
            conversation=conversation, content=f"Question {i}: " + "detail " * 300, run_id=run_id
        )
        reply = services.assistant_message_start(
            conversation=conversation, run_id=run_id, mode="react"
        )
        services.assistant_message_finish(message=reply, content=f"Answer {i}: " + "fact " * 300)


async def test_history_compaction_is_announced_persisted_and_counted(
    socket, conversation, engine, ws_fake_llm, tiny_budget
):
    await sync_to_async(_long_history)(conversation, 10)
    ws_fake_llm.default = "[Conversation summary] Questions 0-7 were about details and facts."
    engine.use(answer)
    await send(socket, type="message", content="and now?")
    events = await events_until(socket, "done", "error")

    compact = of_type(events, "compact")
    assert len(compact) == 1
    facts = compact[0]
    assert facts["scope"] == "history" and facts["strategy"] == "llm"
    assert facts["original_count"] == 20
    assert facts["compacted_count"] < 20
    assert facts["tokens_after"] < facts["tokens_before"]
    # The history the engine got is the compacted one, summary first.
    history = engine.contexts[0].history
    assert history[0].is_summary and len(history) == facts["compacted_count"]

    done = events[-1]
    assert done["usage"]["compaction_input_tokens"] > 0
    assert done["usage"]["input_tokens"] >= done["usage"]["compaction_input_tokens"]
    reply = (await messages_of(conversation))[-1]
    assert reply.metadata["compaction"] == {
        k: v for k, v in facts.items() if k != "type" and k != "scope"
    }
    assert await ContextSummary.objects.filter(conversation=conversation).acount() == 1


async def test_no_compact_event_when_history_fits(socket, engine):
    engine.use(answer, answer)
    await send(socket, type="message", content="one")
    await events_until(socket, "done")
    await send(socket, type="message", content="two")
    events = await events_until(socket, "done")
    assert of_type(events, "compact") == []


# --- images and tools ------------------------------------------------------------------------


async def test_attached_image_reaches_the_engine_as_a_data_url(socket, user, conversation, engine):
    upload = SimpleUploadedFile("cat.png", image_bytes("PNG"), content_type="image/png")
    attachment = await sync_to_async(services.attachment_create)(
        owner=user, conversation=conversation, uploaded_file=upload
    )
    engine.use(answer)
    await send(socket, type="message", content="what is this?", attachments=[str(attachment.id)])
    await events_until(socket, "done")
    parts = engine.contexts[0].query.content
    assert parts[0] == {"type": "text", "text": "what is this?"}
    assert parts[1]["type"] == "image_url"
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")
    query = (await messages_of(conversation))[0]
    assert query.metadata["images"] == [{"file_id": str(attachment.id), "mime_type": "image/png"}]


async def test_recall_tool_searches_the_persisted_conversation(socket, engine):
    found = {}

    async def recalls(ctx):
        found["text"] = await ctx.tools.run("recall", '{"query": "launch code"}')
        return AgentOutcome(answer="ok")

    engine.use(answer, recalls)
    await send(socket, type="message", content="Remember: the launch code is 7-4-1-9.")
    await events_until(socket, "done")
    await send(socket, type="message", content="What was the launch code?")
    await events_until(socket, "done")
    assert "the launch code is 7-4-1-9." in found["text"]
    # The current question is not a match for itself.
    assert "What was the launch code?" not in found["text"]


async def test_socket_joining_mid_run_gets_the_answer_so_far_exactly_once(
    user, conversation, engine
):
    gate = asyncio.Event()

    async def two_halves(ctx):
        await ctx.sink("answer.delta", {"text": "Part one. "})
        await gate.wait()
        await ctx.sink("answer.delta", {"text": "Part two."})
        return AgentOutcome(answer="Part one. Part two.")

    engine.use(two_halves)
    tab_a = await connect(user, conversation.id)
    await send(tab_a, type="message", content="two parts please")
    started = (await events_until(tab_a, "answer.delta"))[0]
    tab_b = await connect(user, conversation.id)
    snapshot = await next_event(tab_b)
    assert snapshot == {
        "type": "run.active",
        "run_id": started["run_id"],
        "message_id": started["message_id"],
        "assistant_message_id": started["assistant_message_id"],
        "mode": "react",
        "text": "Part one. ",
    }
    gate.set()
    rest = await events_until(tab_b, "done")
    assert snapshot["text"] + answer_text(rest) == "Part one. Part two."
    await tab_a.disconnect()
    await tab_b.disconnect()


async def test_no_snapshot_when_nothing_runs(socket):
    await send(socket, type="cancel")
    assert (await next_event(socket))["code"] == "no_active_run"


async def test_a_socket_asking_for_the_run_state_hears_run_none_when_nothing_runs(
    user, conversation, engine
):
    """RD.6: the chat page's socket (``run_state=1``) is told there is no run, so an answer
    it read as running that ended before it joined is read again."""
    engine.use(answer)
    tab = await connect(user, conversation.id)
    await send(tab, type="message", content="hello")
    await events_until(tab, "done")
    joiner = await connect(user, conversation.id, query="run_state=1")
    await send(joiner, type="cancel")  # answered whatever the state: ends what it was told
    told = await events_until(joiner, "error")
    assert [e["type"] for e in told] == ["run.none", "error"]
    await tab.disconnect()
    await joiner.disconnect()


async def test_a_socket_asking_for_the_run_state_mid_run_gets_run_active_only(
    user, conversation, engine
):
    gate = asyncio.Event()

    async def held(ctx):
        await ctx.sink("answer.delta", {"text": "So far. "})
        await gate.wait()
        return AgentOutcome(answer="So far. ")

    engine.use(held)
    tab = await connect(user, conversation.id)
    await send(tab, type="message", content="hold on")
    await events_until(tab, "answer.delta")
    joiner = await connect(user, conversation.id, query="run_state=1")
    assert (await next_event(joiner))["type"] == "run.active"
    gate.set()
    rest = await events_until(joiner, "done")
    assert "run.none" not in [e["type"] for e in rest]
    await tab.disconnect()
    await joiner.disconnect()


async def test_a_socket_joining_as_the_run_ends_gets_that_end_not_run_none(
    user, conversation, engine, monkeypatch
):
    """Joined once the finished run is stored but before it told its sockets: the run's
    ``done`` comes to this socket too, so it is not told there is none."""
    from chat.runs import control

    ending, release = asyncio.Event(), asyncio.Event()
    real_stop_listener = control.stop_listener

    async def held_stop_listener(*args, **kwargs):
        ending.set()  # stored, still registered, its sockets not told yet
        await release.wait()
        return await real_stop_listener(*args, **kwargs)

    monkeypatch.setattr(control, "stop_listener", held_stop_listener)
    engine.use(answer)
    tab = await connect(user, conversation.id)
    await send(tab, type="message", content="hello")
    async with asyncio.timeout(WAIT):
        await ending.wait()
    joiner = await connect(user, conversation.id, query="run_state=1")
    # The handshake is accepted before the socket joins the conversation: a frame is read
    # only once it has joined, so the answer to this one says the join is done (released
    # earlier, the run could end before the join, and run.none would then be right).
    await send(joiner, type="probe")
    joined = await events_until(joiner, "error")
    assert [(e["type"], e.get("code")) for e in joined] == [("error", "unknown_type")]
    release.set()
    await events_until(tab, "done")
    told = await events_until(joiner, "done", "run.none")
    assert [e["type"] for e in told] == ["done"]
    await tab.disconnect()
    await joiner.disconnect()


async def test_cancel_sent_right_after_the_message_is_not_lost(socket, conversation, engine):
    async def endless(ctx):
        await asyncio.Event().wait()

    engine.use(endless)
    await send(socket, type="message", content="never mind")
    await send(socket, type="cancel")  # before run.started has even arrived
    events = await events_until(socket, "run.cancelled", "done", "error")
    assert [e["type"] for e in events] == ["run.started", "run.cancelled"]
    reply = (await messages_of(conversation))[-1]
    assert reply.status == "cancelled"


async def test_a_run_left_running_by_a_dead_server_does_not_block_the_conversation(
    socket, conversation, engine
):
    def orphan():
        return services.assistant_message_start(
            conversation=conversation, run_id="dead-process", mode="react"
        )

    stale = await sync_to_async(orphan)()
    engine.use(answer)
    await send(socket, type="message", content="still there?")
    assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"
    await stale.arefresh_from_db()
    assert stale.status == "interrupted"


async def test_partial_answer_is_saved_while_it_streams(socket, conversation, engine, monkeypatch):
    """A crash mid-answer keeps what the user saw; a reload shows it (status running)."""
    monkeypatch.setattr(work, "CHECKPOINT_SECONDS", 0.01)
    gate = asyncio.Event()

    async def slow_second_half(ctx):
        await ctx.sink("answer.delta", {"text": "First half, "})
        await gate.wait()
        await ctx.sink("answer.delta", {"text": "second half."})
        return AgentOutcome(answer="First half, second half.")

    engine.use(slow_second_half)
    await send(socket, type="message", content="long answer please")
    await events_until(socket, "answer.delta")
    reply = (await messages_of(conversation))[-1]
    async with asyncio.timeout(WAIT):
        while reply.content != "First half, ":  # noqa: ASYNC110 - the checkpoint's write
            await asyncio.sleep(0.01)
            await reply.arefresh_from_db()
    assert reply.status == "running"
    gate.set()
    await events_until(socket, "done")
    await reply.arefresh_from_db()
    assert (reply.status, reply.content) == ("done", "First half, second half.")
