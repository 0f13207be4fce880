"""Refusals the client learns from: a model that may not stream, and a 400 that names no
parameter. The fakes answer with the providers' own bodies (sources in
tests/support/provider_profiles.py: ``openai_unverified``, ``openrouter_unverified``,
``gateway_unnamed_refusal``)."""

from __future__ import annotations

import pytest

from contextmgmt.core.llm import LLMRefused
from contextmgmt.core.messages import ChatMessage
from contextmgmt.core.providers import MAX_GUESSES, PROFILES, SUSPECTS
from tests.support.scripted_server import Reply, text


def question() -> list[ChatMessage]:
    return [ChatMessage(role="user", content="What is 6*7?")]


@pytest.mark.parametrize("fake", ["openai_unverified", "openrouter_unverified"])
async def test_a_model_that_may_not_stream_is_asked_whole_and_remembered(
    scripted_server, llm_for, fake
):
    scripted_server.use_profile(fake).enqueue(text("It is 42.", usage=(20, 4)), text("Again."))
    llm = llm_for()
    chunks = [c async for c in llm.stream_chat(question())]
    assert chunks[0].notice is not None and chunks[0].notice.kind == "unstreamed"
    assert "".join(c.text for c in chunks) == "It is 42."
    assert chunks[-1].usage.input_tokens == 20 and not chunks[-1].usage.estimated
    sent = scripted_server.requests
    assert [bool(r.get("stream")) for r in sent] == [True, False]
    assert [param for param, _ in llm_for.learnt] == ["stream"]
    assert "must be verified to stream" in llm_for.learnt[0][1]
    # Remembered: the next answer is asked whole straight away.
    chunks = [c async for c in llm.stream_chat(question())]
    assert "".join(c.text for c in chunks) == "Again." and len(sent) == 3
    assert not sent[2].get("stream") and llm.endpoint.profile.stream is False


async def test_a_refusal_naming_nothing_is_guessed_and_learnt(scripted_server, llm_for):
    scripted_server.use_profile("gateway_unnamed_refusal").enqueue(text("42."), text("43."))
    llm = llm_for()
    chunks = [c async for c in llm.stream_chat(question(), temperature=0.2)]
    assert "".join(c.text for c in chunks) == "42."
    sent = scripted_server.requests
    assert ["stream_options" in r for r in sent] == [True, False]
    assert sent[1]["temperature"] == 0.2  # only the first suspect was left out
    assert [param for param, _ in llm_for.learnt] == ["stream_options"]
    assert "Provider returned error" in llm_for.learnt[0][1]
    [c async for c in llm.stream_chat(question())]
    assert len(sent) == 3 and "stream_options" not in sent[2]


async def test_a_refusal_nothing_explains_ends_in_a_clear_error_after_bounded_guesses(
    scripted_server, llm_for
):
    refusal = Reply(
        content=None,
        status=400,
        error={"message": "Provider returned error", "code": 400, "metadata": {"raw": "nope"}},
    )
    scripted_server.default = refusal
    llm = llm_for()
    with pytest.raises(LLMRefused, match="Provider returned error") as raised:
        chunks = llm.stream_chat(question(), max_tokens=300, temperature=0.2)
        [c async for c in chunks]
    sent = scripted_server.requests
    assert len(sent) == 1 + MAX_GUESSES
    # One suspect left out at a time, in the documented order.
    left_out = [
        next(name for name in SUSPECTS if name in sent[0] and name not in body) for body in sent[1:]
    ]
    assert left_out == list(SUSPECTS)
    assert "stream_options, temperature, max_tokens" in str(raised.value)
    assert llm_for.learnt == [] and llm.endpoint.profile == PROFILES["openai_compatible"]


async def test_a_refusal_that_is_not_about_a_parameter_is_not_guessed(scripted_server, llm_for):
    scripted_server.enqueue(
        Reply(content=None, status=400, error={"message": "Invalid image URL", "param": None})
    )
    with pytest.raises(Exception, match="Invalid image URL"):
        await llm_for().chat(question(), temperature=0.5)
    assert len(scripted_server.requests) == 1
