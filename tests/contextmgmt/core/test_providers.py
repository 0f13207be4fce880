"""Provider profiles: detection from the base URL, request adaptation, refused parameters."""

import pytest

from contextmgmt.core.providers import (
    PROFILES,
    REASONING_ECHO,
    REASONING_MISSING,
    ProviderProfile,
    detect,
    detect_from_models,
    reasoning_echo_refusal,
    unsupported_parameter,
)

REQUEST = {
    "model": "m",
    "messages": [],
    "max_tokens": 500,
    "temperature": 0.2,
    "stream": True,
    "stream_options": {"include_usage": True},
}


@pytest.mark.parametrize(
    ("base_url", "model", "profile"),
    [
        ("https://api.openai.com/v1", "gpt-4o", "openai"),
        ("https://api.openai.com/v1", "o3-mini", "openai_reasoning"),
        ("https://api.openai.com/v1", "gpt-5", "openai_reasoning"),
        ("https://api.deepseek.com", "deepseek-reasoner", "deepseek"),
        ("https://openrouter.ai/api/v1", "qwen/qwq-32b", "openrouter"),
        ("http://127.0.0.1:11434/v1", "llama3.2", "ollama"),
        ("http://ollama.lan/v1", "llama3.2", "ollama"),
        ("http://10.0.0.5:8000/v1", "Qwen/Qwen3-8B", "openai_compatible"),
        ("", "anything", "openai_compatible"),
    ],
)
def test_the_base_url_and_model_name_pick_the_profile(base_url, model, profile):
    assert detect(base_url, model).name == profile


@pytest.mark.parametrize(
    ("owner", "profile"), [("vllm", "vllm"), ("llamacpp", "llamacpp"), ("library", "ollama")]
)
def test_the_models_list_names_the_server(owner, profile):
    payload = {"data": [{"id": "m", "object": "model", "owned_by": owner}]}
    assert detect_from_models(payload, PROFILES["openai_compatible"]).name == profile
    # A known host is not second-guessed by what its models list says.
    assert detect_from_models(payload, PROFILES["openai"]).name == "openai"
    assert detect_from_models(None, PROFILES["openai_compatible"]).name == "openai_compatible"


def test_a_reasoning_profile_renames_the_limit_and_drops_temperature():
    sent = PROFILES["openai_reasoning"].adapt(REQUEST)
    assert sent["max_completion_tokens"] == 500
    assert "max_tokens" not in sent and "temperature" not in sent
    assert sent["stream_options"] == {"include_usage": True}
    assert REQUEST["max_tokens"] == 500  # the caller's request is not changed


def test_a_server_without_stream_usage_gets_no_stream_options():
    sent = PROFILES["ollama"].adapt(REQUEST)
    assert "stream_options" not in sent
    assert (sent["max_tokens"], sent["temperature"]) == (500, 0.2)


def test_the_generic_profile_sends_the_request_as_built():
    assert PROFILES["openai_compatible"].adapt(REQUEST) == REQUEST


@pytest.mark.parametrize(
    ("message", "param", "refused"),
    [
        (
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
            "max_tokens",
            "max_tokens",
        ),
        (
            "Unsupported value: 'temperature' does not support 0.2 with this model. "
            "Only the default (1) value is supported.",
            "temperature",
            "temperature",
        ),
        ("stream_options: Extra inputs are not permitted", None, "stream_options"),
        ("unknown field `temperature`", None, "temperature"),
        ("The model is overloaded, try again", None, None),
        ("max_tokens must be at least 1", None, None),  # a bad value, not a refused parameter
        ("Unsupported parameter: 'top_k'", "top_k", None),  # not one we send
    ],
)
def test_a_400_naming_a_refused_parameter_is_read(message, param, refused):
    assert unsupported_parameter(message, param, REQUEST) == refused


def test_a_refused_parameter_changes_the_profile_once():
    generic = PROFILES["openai_compatible"]
    after = generic.without("max_tokens")
    assert after.token_limit_param == "max_completion_tokens"
    assert after.adapt(REQUEST)["max_completion_tokens"] == 500
    assert after.without("max_tokens") is None  # nothing left to change: no second retry
    assert generic.without("temperature") == ProviderProfile(send_temperature=False)
    assert generic.without("stream_options").stream_usage is False
    assert generic.without("messages") is None


REFUSABLE = (
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "stream_options",
    REASONING_ECHO,
    REASONING_MISSING,
)


@pytest.mark.parametrize(
    ("name", "param"),
    [(n, p) for n in sorted(PROFILES) for p in REFUSABLE if PROFILES[n].without(p) is not None],
)
def test_sending_a_parameter_again_undoes_its_refusal(name, param):
    profile = PROFILES[name]
    assert profile.without(param).sending(param) == profile


def test_sending_an_unknown_parameter_changes_nothing():
    refused = ProviderProfile(send_temperature=False)
    assert refused.sending("messages") is refused


STEP = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
}
TURN = {
    "model": "m",
    "messages": [
        {"role": "user", "content": "q"},
        {**STEP, "reasoning_content": "I should call f."},
        {"role": "tool", "tool_call_id": "c1", "content": "1"},
        {**STEP, "tool_calls": [{**STEP["tool_calls"][0], "id": "c2"}]},  # kept none
        {"role": "tool", "tool_call_id": "c2", "content": "2"},
    ],
}


def test_a_profile_that_echoes_sends_every_tool_steps_reasoning_and_others_none():
    echoed = PROFILES["deepseek"].adapt(TURN)["messages"]
    expected = [None, "I should call f.", None, "", None]
    assert [m.get("reasoning_content") for m in echoed] == expected
    assert "reasoning_content" not in echoed[0] and "reasoning_content" not in echoed[2]
    plain = PROFILES["openai_compatible"].adapt(TURN)["messages"]
    assert all("reasoning_content" not in m for m in plain)
    assert "reasoning_content" in TURN["messages"][1]  # the caller's request is not changed


@pytest.mark.parametrize(
    ("message", "sent", "refused"),
    [
        (
            "The `reasoning_content` in the thinking mode must be passed back to the API.",
            REQUEST,
            REASONING_MISSING,
        ),
        (
            "Missing `reasoning_content` field in the assistant message at message index 2. "
            "For more information, please refer to "
            "https://api-docs.deepseek.com/guides/thinking_mode#tool-calls",
            REQUEST,
            REASONING_MISSING,
        ),
        (
            "The reasoning_content of earlier messages must not be sent back.",
            TURN,
            REASONING_ECHO,
        ),
        ("The reasoning_content of earlier messages must not be sent back.", REQUEST, None),
        ("Invalid image URL", TURN, None),
    ],
)
def test_a_400_about_a_tool_steps_reasoning_is_read(message, sent, refused):
    assert reasoning_echo_refusal(message, sent) == refused


def test_the_reasoning_refusals_turn_echo_on_and_off():
    generic = PROFILES["openai_compatible"]
    assert generic.without(REASONING_MISSING).reasoning_echo is True
    assert generic.without(REASONING_ECHO) is None
    assert PROFILES["deepseek"].without(REASONING_ECHO).reasoning_echo is False
    assert PROFILES["deepseek"].without(REASONING_MISSING) is None
