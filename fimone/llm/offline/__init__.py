"""The built-in offline model: deterministic, no network, the default when no endpoint is set.

``model`` holds ``OfflineLLM``; the other modules are its parts (text and summaries, tool
decisions, plans, arithmetic, documents, pages, markdown, phrases per language).
"""

from fimone.llm.offline.model import OFFLINE_MODEL_NAME, OfflineLLM

__all__ = ["OFFLINE_MODEL_NAME", "OfflineLLM"]
