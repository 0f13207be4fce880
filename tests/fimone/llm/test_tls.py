"""Model clients share one TLS context, built off the event loop (fimone/llm/tls.py)."""

from __future__ import annotations

import ssl

from fimone.llm.openai_client import OpenAIChatLLM
from fimone.llm.tls import tls_context


def counting_ca_loads(monkeypatch) -> list:
    loads = []
    real = ssl.SSLContext.load_verify_locations

    def load(self, *args, **kwargs):
        loads.append(args or kwargs)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", load)
    return loads


async def test_a_new_model_client_reads_no_ca_bundle_on_the_loop(monkeypatch):
    """Reading the CA bundle is ~17 ms of CPU: done once per process when a model object is
    made (in the registry's worker thread), never when its SDK client is made on the loop."""
    llms = [
        OpenAIChatLLM(model=f"m{i}", base_url="https://llm.example/v1", api_key="k")
        for i in range(3)
    ]
    loads = counting_ca_loads(monkeypatch)
    clients = [llm._client() for llm in llms]
    assert loads == []
    assert len({id(client) for client in clients}) == 3
    for llm in llms:
        await llm.aclose()


def test_the_shared_context_verifies_servers():
    context = tls_context()
    assert context is tls_context()
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
