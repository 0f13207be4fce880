"""fimone's LLM layer: every model call goes through here.

- ``get_llm(role)`` / ``describe_llm(role)`` — the registry (ModelConfig row > settings >
  offline); sync, may query the database.
- ``OpenAIChatLLM`` — any OpenAI-compatible endpoint through the ``openai`` SDK.
- ``OfflineLLM`` — the built-in deterministic offline model.

Importing this package does not import Django; only the registry's functions do, lazily.
"""

from fimone.llm.offline.model import OFFLINE_MODEL_NAME, OfflineLLM
from fimone.llm.providers.openai_client import OpenAIChatLLM, map_error
from fimone.llm.registry import LLMSpec, describe_llm, get_llm, resolve_spec

__all__ = [
    "OFFLINE_MODEL_NAME",
    "LLMSpec",
    "OfflineLLM",
    "OpenAIChatLLM",
    "describe_llm",
    "get_llm",
    "map_error",
    "resolve_spec",
]
