"""A routing LLM for the fault matrix: fails at one call site only, answers the rest.

Which call site a request comes from is read off the request itself, the way a provider
would see it:

- a compaction call has the system prompt of a ``COMPACT_PROMPTS`` hint: ``general`` is the
  load-time history compaction (DbMemory), ``react_iteration`` the ReAct guard's;
- the DAG planner's system prompt asks for a "JSON plan", the analyser's for a "JSON
  verdict", a step's sub-agent starts with ``STEP_SYSTEM``;
- any other call that offers tools is the ReAct tool loop (streamed since RS.1);
- a tool-free ``stream_chat`` call is an answer written after the loop (after an empty
  tool-free reply, at the iteration limit, or the DAG's synthesis).

The first ``fault_calls`` calls at the chosen site get the fault; everything else gets a
canned, well-formed reply for its site. Transport faults are real HTTP: the call goes through
the ``openai`` SDK (``OpenAIChatLLM``) to the scripted server with the fault replies queued,
so the SDK's own retries, timeouts and parsing are what is exercised.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from contextmgmt.core.llm import LLMResult, StreamChunk, Usage
from contextmgmt.core.messages import ChatMessage, ToolCall
from contextmgmt.core.prompts import COMPACTOR_INTRO, hint_of
from fimone.agent.prompts import STEP_SYSTEM
from tests.support import scripted_server as scripted

SITES = (
    "history_compaction",
    "iteration_compaction",
    "tool_loop",
    "answer_stream",
    "planner",
    "step",
    "analyser",
)
COMPACTION_SITES = {"history_compaction", "iteration_compaction"}
DAG_SITES = {"planner", "step", "analyser"}

PLAN = {"steps": [{"id": "s1", "task": "Work out 6*7 for the user", "depends_on": []}]}
VERDICT = {"achieved": True, "confidence": 0.95, "reason": "the step answered it"}
ANSWER = "The answer is 42, as the steps found."
SUMMARY = "The user and the assistant discussed words and numbers 12345 over several turns."


def classify(method: str, messages: list[ChatMessage], tools: Any) -> str:
    system = messages[0].text() if messages and messages[0].role == "system" else ""
    if system.startswith(COMPACTOR_INTRO):
        hint = hint_of(system)
        if hint == "general":
            return "history_compaction"
        if hint == "react_iteration":
            return "iteration_compaction"
        return "other_compaction"  # planner_input / step_dependency (DAG), not under test
    if "JSON plan" in system:
        return "planner"
    if "JSON verdict" in system:
        return "analyser"
    if system.startswith(STEP_SYSTEM):
        return "step"
    if tools:
        return "tool_loop"
    if method == "stream_chat":
        return "answer_stream"
    return "other"


def canned(site: str, *, stream_the_answer: bool) -> str:
    """A well-formed reply for ``site``."""
    if site.endswith("compaction"):
        return SUMMARY
    if site == "planner":
        return json.dumps(PLAN)
    if site == "analyser":
        return json.dumps(VERDICT)
    if site == "step":
        return "6*7 = 42."
    if site == "tool_loop" and stream_the_answer:
        # An empty tool-free reply makes the ReAct loop stream the answer (loop.py).
        return ""
    return ANSWER


@dataclass
class Fault:
    """One kind of failure. ``inprocess`` is raised here; ``transport`` is a list of scripted
    server replies the faulty call meets through the SDK (retries included)."""

    name: str
    inprocess: BaseException | None = None
    hang: bool = False  # never answers: only the caller's own time limit ends the call
    transport: list[Any] = field(default_factory=list)
    # Stream-only fault: some text, then the failure (for chat() calls: the transport list).
    stream_transport: list[Any] | None = None


def faults() -> list[Fault]:
    slow = scripted.slow(5.0, "too late")
    return [
        Fault("raise", inprocess=RuntimeError("the model client blew up")),
        Fault("hang", hang=True),  # an LLM without a timeout of its own
        Fault("timeout", transport=[slow, slow]),  # the SDK's timeout, both attempts
        Fault("429_then_success", transport=[scripted.rate_limited(), "<canned>"]),
        Fault("500", transport=[scripted.server_error(), scripted.server_error()]),
        Fault("empty_reply", transport=[scripted.text("")]),
        Fault(
            "malformed_tool_call_json",
            transport=[scripted.tool_calls(("calculator", '{"expression": "6*7'))],
        ),
        Fault("malformed_body", transport=[scripted.malformed(), scripted.malformed()]),
        Fault(
            "stream_cut",
            transport=[scripted.cut_off("The answer is"), scripted.cut_off("The answer is")],
        ),
        Fault("context_overflow", transport=[scripted.context_overflow()]),
    ]


class FaultRouter:
    """The LLM of every role (main, fast, compaction) for one fault-matrix cell."""

    supports_vision = True

    def __init__(
        self,
        *,
        site: str,
        fault: Fault,
        sdk_llm: Any,
        server: scripted.ScriptedServer,
        stream_the_answer: bool = False,
        fault_calls: int = 1,
    ) -> None:
        self.model_name = "fault-router"
        self.site = site
        self.fault = fault
        self.sdk_llm = sdk_llm
        self.server = server
        self.stream_the_answer = stream_the_answer
        self.faults_left = fault_calls
        self.sites_seen: list[str] = []
        # A history fitted at load is not compacted again on the first call (RF.3): the
        # guard compacts once a tool round has grown the conversation past the budget.
        self.tool_round_first = site == "iteration_compaction"

    def _take_fault(self, site: str) -> bool:
        if site != self.site or self.faults_left <= 0:
            return False
        self.faults_left -= 1
        return True

    async def _inprocess_fault(self) -> None:
        if self.fault.hang:
            await asyncio.sleep(3600)
            raise AssertionError("a hung call was never timed out")
        if self.fault.inprocess is not None:
            raise self.fault.inprocess

    def _queue_transport(self, site: str) -> None:
        text = canned(site, stream_the_answer=self.stream_the_answer)
        self.server.reset()
        self.server.default = None  # an unscripted request fails loudly
        self.server.enqueue(
            *(scripted.text(text) if r == "<canned>" else r for r in self.fault.transport)
        )

    async def chat(self, messages, *, tools=None, **opts) -> LLMResult:
        site = classify("chat", messages, tools)
        self.sites_seen.append(site)
        if self._take_fault(site):
            await self._inprocess_fault()
            self._queue_transport(site)
            return await self.sdk_llm.chat(messages, tools=tools, **opts)
        if site == "tool_loop" and self.tool_round_first:
            self.tool_round_first = False
            call = ToolCall(id="call_grow", name="calculator", arguments='{"expression": "6*7"}')
            reply_message = ChatMessage(role="assistant", content=None, tool_calls=[call])
            return LLMResult(message=reply_message, usage=Usage(100, 10))
        reply = canned(site, stream_the_answer=self.stream_the_answer)
        return LLMResult(message=ChatMessage(role="assistant", content=reply), usage=Usage(100, 10))

    async def stream_chat(self, messages, *, tools=None, **opts):
        site = classify("stream_chat", messages, tools)
        self.sites_seen.append(site)
        if self._take_fault(site):
            await self._inprocess_fault()
            self._queue_transport(site)
            async for chunk in self.sdk_llm.stream_chat(messages, tools=tools, **opts):
                yield chunk
            return
        if site == "tool_loop" and self.tool_round_first:
            self.tool_round_first = False
            call = ToolCall(id="call_grow", name="calculator", arguments='{"expression": "6*7"}')
            yield StreamChunk(tool_calls=[call], usage=Usage(100, 10), finish_reason="tool_calls")
            return
        text = canned(site, stream_the_answer=self.stream_the_answer)
        for word in text.split(" ") if text else []:
            yield StreamChunk(text=word + " ")
        yield StreamChunk(usage=Usage(100, 10), finish_reason="stop")
