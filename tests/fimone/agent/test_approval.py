"""Tools that need the user's approval, in the engines: the loop asks the injected callback
before running such a tool, runs it on approval, gives the model the decline as the tool's
result, runs nothing without a callback, and asks nothing about a call that cannot run."""

from __future__ import annotations

import asyncio
import json

from fimone.agent import Tool, ToolRegistry, run_dag, run_react
from fimone.agent.approval import ApprovalRequest, declined_result
from tests.fimone.agent.test_dag import plan, verdict
from tests.support.fake_llm import FakeLLM


class Probe:
    """A tool that needs approval and counts its runs."""

    def __init__(self) -> None:
        self.runs: list[str] = []

    def tool(self) -> Tool:
        async def send_note(text: str) -> str:
            self.runs.append(text)
            return f"sent {text!r}"

        return Tool(
            "send_note",
            "Send a note",
            {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            send_note,
            needs_approval=True,
        )


class Approver:
    def __init__(self, *decisions: str) -> None:
        self.decisions = list(decisions)
        self.asked: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> str:
        self.asked.append(request)
        return self.decisions.pop(0)


def note_call(llm: FakeLLM, text: str, call_id: str = "n1"):
    return llm.tool_call("send_note", json.dumps({"text": text}), call_id)


async def test_an_approved_call_runs_and_the_model_reads_its_result(build_context):
    probe, approver = Probe(), Approver("once")
    llm = FakeLLM().enqueue(note_call(FakeLLM(), "hi"), "Sent.")
    outcome = await run_react(
        build_context(llm, tools=ToolRegistry([probe.tool()]), approve=approver)
    )
    assert outcome.answer == "Sent."
    assert probe.runs == ["hi"]
    (request,) = approver.asked
    assert (request.tool.name, json.loads(request.arguments), request.call_id) == (
        "send_note",
        {"text": "hi"},
        "n1",
    )
    assert llm.calls[1].messages[-1].content == "sent 'hi'"


async def test_a_declined_call_does_not_run_and_the_model_reads_the_decline(build_context):
    probe, approver = Probe(), Approver("decline")
    llm = FakeLLM().enqueue(note_call(FakeLLM(), "hi"), "Not sent, as you wish.")
    outcome = await run_react(
        build_context(llm, tools=ToolRegistry([probe.tool()]), approve=approver)
    )
    assert probe.runs == []
    tool_message = llm.calls[1].messages[-1]
    assert (tool_message.role, tool_message.tool_call_id) == ("tool", "n1")
    assert tool_message.content == declined_result("send_note")
    assert "declined" in tool_message.content
    assert outcome.answer == "Not sent, as you wish."


async def test_without_an_approver_the_tool_does_not_run(build_context):
    probe = Probe()
    llm = FakeLLM().enqueue(note_call(FakeLLM(), "hi"), "Could not.")
    await run_react(build_context(llm, tools=ToolRegistry([probe.tool()])))
    assert probe.runs == []
    assert "needs the user's approval" in llm.calls[1].messages[-1].content


async def test_a_call_with_bad_arguments_is_not_put_to_the_user(build_context):
    probe, approver = Probe(), Approver()
    llm = FakeLLM().enqueue(FakeLLM().tool_call("send_note", "{}", "n1"), "Oops.")
    await run_react(build_context(llm, tools=ToolRegistry([probe.tool()]), approve=approver))
    assert approver.asked == [] and probe.runs == []
    assert "bad arguments for send_note" in llm.calls[1].messages[-1].content


async def test_tools_without_the_mark_are_never_put_to_the_user(build_context):
    approver = Approver()
    llm = FakeLLM().enqueue(FakeLLM().tool_call("calculator", '{"expression": "6*7"}'), "42.")
    await run_react(build_context(llm, approve=approver))
    assert approver.asked == []
    assert llm.calls[1].messages[-1].content == "42"


async def test_a_dag_step_asks_too_and_names_its_step(build_context):
    probe, approver = Probe(), Approver("once")
    llm = FakeLLM().enqueue(plan(("s1", "send the note", [])), verdict(True, 0.9), "Done.")
    fast = FakeLLM().enqueue(note_call(FakeLLM(), "from a step"), "The note went out.")
    await run_dag(
        build_context(llm, fast_llm=fast, tools=ToolRegistry([probe.tool()]), approve=approver)
    )
    (request,) = approver.asked
    assert request.extra == {"step_id": "s1"}
    assert probe.runs == ["from a step"]


async def test_cancelling_while_the_user_is_asked_stops_the_run_without_running_it(
    build_context,
):
    probe = Probe()
    asked = asyncio.Event()

    async def never_answers(request: ApprovalRequest) -> str:
        asked.set()
        await asyncio.Event().wait()
        return "once"  # pragma: no cover - never reached

    llm = FakeLLM().enqueue(note_call(FakeLLM(), "hi"), "unreachable")
    task = asyncio.create_task(
        run_react(build_context(llm, tools=ToolRegistry([probe.tool()]), approve=never_answers))
    )
    await asyncio.wait_for(asked.wait(), 10)
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=10)
    assert task in done and task.cancelled()
    assert probe.runs == [] and len(llm.calls) == 1
