"""A real daphne for a load bench, talking to a scripted OpenAI-compatible server."""

from __future__ import annotations

from tests.support import scripted_server as scripted
from tests.support.live_server import LiveServer, start_live_server


def start_bench_server(llm: scripted.ScriptedServer, **env: str) -> LiveServer:
    """fimone served by daphne with ``llm`` as its model; ``env`` adds or overrides
    settings. A bench client sends faster than a person: the rate limit is not under test."""
    return start_live_server(
        env={
            "LLM_BASE_URL": llm.base_url,
            "LLM_API_KEY": "bench-key",
            "LLM_MODEL": "bench-model",
            "LOG_LEVEL": "WARNING",
            "FIMONE_WS_RATE_LIMIT": "1000000",
            **env,
        }
    )
