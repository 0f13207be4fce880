from __future__ import annotations

import pytest

from contextmgmt.core.providers import PROFILES
from fimone.llm.offline.model import OfflineLLM
from fimone.llm.providers.openai_client import OpenAIChatLLM


@pytest.fixture
async def llm_for(scripted_server):
    """``llm_for(profile_name)``: a client of the scripted server that follows that provider
    profile; ``llm_for.learnt`` lists the (parameter, message) pairs it learnt from
    refusals. Every client made is closed after the test."""
    made: list[OpenAIChatLLM] = []
    learnt: list[tuple[str | None, str]] = []

    async def learn(profile, param, message):
        learnt.append((param, message))

    def make(profile_name: str = "openai_compatible") -> OpenAIChatLLM:
        llm = OpenAIChatLLM(
            model="m",
            base_url=scripted_server.base_url,
            api_key="k",
            max_retries=0,
            profile=PROFILES[profile_name],
            on_learn=learn,
        )
        made.append(llm)
        return llm

    make.learnt = learnt
    yield make
    for llm in made:
        await llm.aclose()


@pytest.fixture
def offline_llm() -> OfflineLLM:
    """The built-in offline model."""
    return OfflineLLM()
