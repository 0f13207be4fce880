"""The fault matrix: every way the LLM fails × every place the agent calls it.

Each cell drives a real run through the websocket consumer (Channels'
``WebsocketCommunicator``, the real ``chat.runs``, DbMemory, ContextGuard and the ReAct or
DAG engine). The LLM of every role is a ``FaultRouter`` that fails only at the cell's call
site; transport faults go through the real ``openai`` SDK to the scripted server. The
budget is 4,000 tokens; the conversation has a long history (compacted at load), or, for the
iteration-compaction cells, a history that just fits the load budget so the ReAct system
prompt on top makes the first iteration's guard compact.

For every cell:
- the run ends with ``done`` or ``error`` — which one is stated per cell below, not
  whatever happens: compaction failures fall back silently (SPEC R3.7: ``done`` with a
  ``truncate`` compaction), a failed DAG step is reported and the run goes on (RD.4), the
  SDK retries a 429, a provider overflow is compacted and retried once in the loop, the DAG
  planner and analyser degrade on an LLM error (re-ask / fallback plan, unknown verdict);
- the fault really fired at that site (no cell passes by never reaching it);
- the user's message is persisted and the assistant message is finished (never left
  ``running``), with the partial text of a cut stream (RU.3);
- the same socket then starts a second run in the same conversation, which answers.
"""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from chat import services
from chat.models import Message
from contextmgmt.budget import Budget
from fimone.llm.providers.openai_client import OpenAIChatLLM
from tests.reliability.fault_router import (
    ANSWER,
    COMPACTION_SITES,
    DAG_SITES,
    SITES,
    FaultRouter,
    faults,
)
from tests.support.runs import (
    answer_text,
    connect,
    events_until,
    history_filling_the_load_budget,
    of_type,
    send,
)

pytestmark = [
    pytest.mark.slow,  # each timeout cell waits its timeout out (not in bin/test --fast)
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs"),
]

BUDGET = 4_000
FAULTS = {f.name: f for f in faults()}

# What a fault at an engine call site (tool loop, answer stream, planner, analyser) ends in
# when nothing recovers from it: the error code the client gets.
ERROR_CODES = {
    "raise": "internal_error",
    "hang": "llm_timeout",
    "timeout": "llm_timeout",
    "500": "llm_unavailable",
    "malformed_body": "llm_bad_response",
    "stream_cut": "llm_unavailable",
    "context_overflow": "context_overflow",
}
# Malformed tool-call JSON comes back as a tool result the model corrects; where
# no tools are offered the reply is simply unusable text (re-asked plan, unreadable verdict,
# an empty answer) — no site ends in an error.
RECOVERED_EVERYWHERE = {"429_then_success", "empty_reply", "malformed_tool_call_json"}
# The loop compacts and retries once on a provider overflow (fimone/agent/loop.py).
OVERFLOW_RETRIED_AT = {"tool_loop", "answer_stream"}
# The DAG's planner asks again after a failed call (then falls back to a one-step plan) and a
# failed analyser leaves the verdict unknown: any LLMError there ends in ``done``.
# A non-LLM exception ("raise": a bug in the client) still ends the run.
DAG_DEGRADES_AT = {"planner", "analyser"}
# A DAG step is a ReAct sub-agent: it retries an overflow, writes an answer after an empty
# reply; any other failure marks the step failed and the run goes on (RD.4).
STEP_RECOVERS = RECOVERED_EVERYWHERE | {"context_overflow"}


def expected_outcome(site: str, fault: str) -> tuple[str, str | None]:
    """``("done", None)`` or ``("error", code)`` for a cell, from the rules above."""
    if site in COMPACTION_SITES or site == "step" or fault in RECOVERED_EVERYWHERE:
        return "done", None
    if fault == "context_overflow" and site in OVERFLOW_RETRIED_AT:
        return "done", None
    if site in DAG_DEGRADES_AT and fault != "raise":
        return "done", None
    return "error", ERROR_CODES[fault]


def _long_history(conversation) -> None:
    """Eight stored turns of ~900 tokens each: far over the 4,000-token budget."""
    for i in range(0, 8, 2):
        services.user_message_create(
            conversation=conversation,
            content=f"Turn {i}: " + "words and numbers 12345 " * 150,
            run_id=f"h{i}",
        )
        reply = services.assistant_message_start(
            conversation=conversation, run_id=f"h{i}", mode="react"
        )
        services.assistant_message_finish(
            message=reply, content=f"Reply {i}: " + "noted, and more words 678 " * 150
        )


@pytest.fixture
def tiny_budget(run_deps):
    budget = Budget(
        role="main",
        context_size=12_000,
        max_output_tokens=4_000,
        usable_input_tokens=BUDGET,
        source="env",
    )
    run_deps.use(resolve_budget=lambda role: budget)
    return budget


async def _conversation(user, site: str, query: str):
    conversation = await sync_to_async(services.conversation_create)(owner=user, title="faults")
    if site == "iteration_compaction":
        await sync_to_async(history_filling_the_load_budget)(conversation, query, BUDGET)
    else:
        await sync_to_async(_long_history)(conversation)
    return conversation


HANG_LIMIT = 0.5  # seconds; production has the SDK's timeout, and these for other LLMs


def _short_time_limits(run_deps) -> None:
    """Time limits a hung call meets: the run's per-call limit (AgentContext.llm_timeout,
    which the engines also give their guards' compaction calls) and DbMemory's compaction
    timeout — shortened so a hang cell is quick."""
    from contextmgmt.db_memory import DbMemory

    real_engine_for = run_deps.current.engine_for

    def engine_for(mode):
        engine = real_engine_for(mode)

        async def limited(ctx):
            ctx.llm_timeout = HANG_LIMIT
            return await engine(ctx)

        return limited

    run_deps.use(
        make_memory=lambda **kw: DbMemory(**kw, compact_timeout=HANG_LIMIT),
        engine_for=engine_for,
    )


@pytest.fixture
async def sdk_llm(scripted_server):
    """The real SDK client on the scripted server: 1 s timeout, one retry (fast cells)."""
    llm = OpenAIChatLLM(
        model="fault-model",
        base_url=scripted_server.base_url,
        api_key="sk-fault-matrix",
        timeout=1.0,
        max_retries=1,
    )
    yield llm
    await llm.aclose()


async def _messages(conversation) -> list[Message]:
    return [m async for m in Message.objects.filter(conversation=conversation).order_by("id")]


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("site", SITES)
async def test_fault_matrix_cell(
    site,
    fault,
    user,
    tiny_budget,
    sdk_llm,
    scripted_server,
    run_deps,
):
    query = f"First question ({site} × {fault})"
    conversation = await _conversation(user, site, query)
    router = FaultRouter(
        site=site,
        fault=FAULTS[fault],
        sdk_llm=sdk_llm,
        server=scripted_server,
        stream_the_answer=site == "answer_stream",
    )
    run_deps.use(get_llm=lambda role: router)
    if fault == "hang":
        _short_time_limits(run_deps)
    mode = "dag" if site in DAG_SITES else "react"
    before = len(await _messages(conversation))

    socket = await connect(user, conversation.id)
    try:
        await send(socket, type="message", content=query, mode=mode)
        events = await events_until(socket, "done", "error")
        final = events[-1]
        assert router.faults_left == 0, f"the fault never fired; sites seen: {router.sites_seen}"

        outcome, code = expected_outcome(site, fault)
        assert final["type"] == outcome, final
        if code is not None:
            assert final["code"] == code, final
        if site in COMPACTION_SITES:
            scope = "history" if site == "history_compaction" else "iteration"
            compactions = [e for e in of_type(events, "compact") if e["scope"] == scope]
            # The SDK's retry rescues a 429; any other fault falls back to truncation (R3.7).
            strategy = "llm" if fault == "429_then_success" else "truncate"
            assert compactions and compactions[0]["strategy"] == strategy
        if site == "step":
            step_status = "done" if fault in STEP_RECOVERS else "error"
            assert ("s1", step_status) in {
                (e["id"], e["status"]) for e in of_type(events, "dag.step")
            }

        stored = (await _messages(conversation))[before:]
        assert [(m.role, m.content) for m in stored][:1] == [("user", query)]
        reply = stored[-1]
        assert (reply.role, reply.status) == ("assistant", final["type"])
        if final["type"] == "error":
            assert reply.content == answer_text(events)  # whatever was streamed is kept
        if fault == "stream_cut" and site == "answer_stream":
            assert reply.content.startswith("The answer is")  # the partial text is kept

        # The same socket, the same conversation: the next run answers.
        await send(socket, type="message", content="Second question", mode=mode)
        events = await events_until(socket, "done", "error")
        assert events[-1]["type"] == "done", events[-1]
        assert ANSWER.split(",")[0] in answer_text(events)
        stored = (await _messages(conversation))[before:]
        assert [m.status for m in stored] == ["done", final["type"], "done", "done"]
    finally:
        await socket.disconnect()
