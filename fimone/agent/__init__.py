"""The agent runtime: ReAct and DAG engines and their tools (issue 6, SPEC RR/RD).

Framework-free: no Django, no ORM. The chat layer hands in an ``AgentContext`` (LLMs,
budgets, loaded history, the query, an event sink, an injection queue, a tool registry)
and gets an ``AgentOutcome`` back.
"""

from .context import AgentContext, AgentOutcome, EventSink, InjectionQueue
from .dag import run_dag
from .react import run_react
from .tools import Tool, ToolRegistry, default_tools

__all__ = [
    "AgentContext",
    "AgentOutcome",
    "EventSink",
    "InjectionQueue",
    "Tool",
    "ToolRegistry",
    "default_tools",
    "run_dag",
    "run_react",
]
