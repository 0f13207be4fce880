"""fimone's context-management core: plain Python, no Django (docs/architecture.md).

Import the submodules (``contextmgmt.core.guard`` …) or these re-exports.
"""

from .compact import CompactResult, CompactUtils
from .guard import ContextGuard
from .llm import LLM, LLMResult, Usage
from .memory import BaseMemory, SummaryMemory, WindowMemory
from .messages import SUMMARY_PREFIX, ChatMessage, ToolCall
from .prompts import COMPACT_PROMPTS
from .tokens import estimate_message_tokens, estimate_messages_tokens, estimate_tokens

__all__ = [
    "COMPACT_PROMPTS",
    "LLM",
    "SUMMARY_PREFIX",
    "BaseMemory",
    "ChatMessage",
    "CompactResult",
    "CompactUtils",
    "ContextGuard",
    "LLMResult",
    "SummaryMemory",
    "ToolCall",
    "Usage",
    "WindowMemory",
    "estimate_message_tokens",
    "estimate_messages_tokens",
    "estimate_tokens",
]
