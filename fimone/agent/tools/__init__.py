"""Tools the agent can call: the registry that runs them (``registry``) and one module per
kind of tool source (``builtins``, ``documents``). Every fault of a tool comes back to the model as
an ``Error: …`` text it can read and correct; only cancellation propagates."""

from .builtins import (
    RECALL_LIMIT,
    calculator_tool,
    current_time_tool,
    default_tools,
    recall_tool,
)
from .documents import DocumentReader, read_document_tool
from .registry import (
    BUILTIN_SOURCE,
    DEFAULT_TOOL_TIMEOUT,
    TOOL_SWITCH_PREFIX,
    KeptResult,
    RecalledImage,
    RecallSearch,
    Tool,
    ToolFunc,
    ToolOutput,
    ToolRegistry,
    ToolResults,
    arguments_adapter,
    switched_off_tool,
    tool_switch_key,
)

__all__ = [
    "BUILTIN_SOURCE",
    "DEFAULT_TOOL_TIMEOUT",
    "TOOL_SWITCH_PREFIX",
    "DocumentReader",
    "KeptResult",
    "RECALL_LIMIT",
    "RecallSearch",
    "RecalledImage",
    "Tool",
    "ToolFunc",
    "ToolOutput",
    "ToolRegistry",
    "ToolResults",
    "arguments_adapter",
    "switched_off_tool",
    "tool_switch_key",
    "calculator_tool",
    "current_time_tool",
    "default_tools",
    "read_document_tool",
    "recall_tool",
]
