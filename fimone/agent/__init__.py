"""The agent runtime: ReAct and DAG engines and their tools.

Framework-free: no Django, no ORM. The chat layer hands in an ``AgentContext`` (LLMs,
budgets, loaded history, the query, an event sink, an injection queue, a tool registry)
and gets an ``AgentOutcome`` back.

Events sent through ``ctx.sink(name, payload)`` (docs/protocol.md):
- ``step {iteration, kind: "tool_call" | "tool_result" | "thought", name, arguments | result
  | text, call_id}`` — inside a DAG step also ``step_id``; previews cut at 2,000 chars;
- ``compact {scope: "iteration" | "planner" | "step", strategy, original_count,
  compacted_count, tokens_before, tokens_after}`` (+ ``step_id`` for scope "step");
- ``answer.delta {text}`` — streamed as the model writes, from every ReAct iteration and the
  DAG's synthesis (never a DAG step's text);
- ``answer.retract {iteration, chars, text}`` — the last ``chars`` characters of the streamed
  answer were the model's thinking before a tool call: they leave the answer and become the
  step's thought ``text`` (cut at 2,000 chars). A reply written whole before a follow-up
  arrived is never retracted: it stays in the answer, and the reply to the follow-up
  follows it after a blank line;
- ``dag.plan {steps: [{id, task, depends_on}], round, fallback}``,
  ``dag.step {id, status: "running" | "done" | "error", round, result? | error?}``,
  ``dag.step.delta {id, round, text}`` (a running step's text as it streams),
  ``dag.analysis {achieved, confidence, reason}`` (``achieved`` None: unreadable verdict or
  failed checker call),
  ``dag.replan {round}`` (1 for the first re-plan).
Injected follow-ups produce no event here: the chat layer already announced them.
"""

from .approval import ApprovalRequest, Approve, Decision
from .context import AgentContext, AgentOutcome, EventSink, InjectionQueue
from .dag import run_dag
from .react import run_react
from .tools import Tool, ToolRegistry, default_tools

__all__ = [
    "AgentContext",
    "AgentOutcome",
    "ApprovalRequest",
    "Approve",
    "Decision",
    "EventSink",
    "InjectionQueue",
    "Tool",
    "ToolRegistry",
    "default_tools",
    "run_dag",
    "run_react",
]
