"""The client for OpenAI-compatible endpoints (``openai_client.OpenAIChatLLM``) and its parts:
what an endpoint was learnt to accept (``endpoint``), retries, the SSE reader and stream
assembly, think tags, images, the wire form of messages and the SDK's errors mapped to the
core's. The profiles themselves are plain Python in ``contextmgmt.core.providers``.
"""

from fimone.llm.providers.openai_client import OpenAIChatLLM, map_error

__all__ = ["OpenAIChatLLM", "map_error"]
