"""Which environment variables may serve as a key sent to another server."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextmgmt.secrets import secret_env_allowed, secret_env_refusal

FIMONE_OWN = ["SECRET_KEY", "DATABASE_URL", "REDIS_URL", "EMAIL_URL"]


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "VLLM_API_KEY", "A_API_KEY"])
def test_a_name_matching_the_default_pattern_is_allowed(name):
    assert secret_env_allowed(name)
    assert secret_env_refusal(name) == ""


@pytest.mark.parametrize("name", ["HOME", "PATH", "OPENAI_KEY", "openai_api_key", "", " "])
def test_a_name_off_the_default_list_is_refused_with_a_reason(name):
    assert not secret_env_allowed(name)
    assert "FIMONE_SECRET_ENV_ALLOWLIST" in secret_env_refusal(name)


@pytest.mark.parametrize("name", [*FIMONE_OWN, "secret_key", "LLM_API_KEY", "FAST_LLM_API_KEY"])
def test_fimone_own_secrets_are_refused_even_under_a_catch_all_pattern(settings, name):
    settings.FIMONE_SECRET_ENV_ALLOWLIST = ["*", "*_KEY", "*_URL"]
    assert not secret_env_allowed(name)
    assert name in secret_env_refusal(name)


def test_the_operator_sets_the_patterns(settings):
    settings.FIMONE_SECRET_ENV_ALLOWLIST = ["VLLM_*", "LOCAL_TOKEN"]
    assert secret_env_allowed("VLLM_TOKEN") and secret_env_allowed("LOCAL_TOKEN")
    assert not secret_env_allowed("OPENAI_API_KEY")


def test_a_comma_separated_setting_is_read_as_patterns(settings):
    settings.FIMONE_SECRET_ENV_ALLOWLIST = " A_* , ,B_TOKEN"
    assert secret_env_allowed("A_X") and secret_env_allowed("B_TOKEN")
    assert not secret_env_allowed("C")


def test_an_empty_list_allows_no_variable(settings):
    settings.FIMONE_SECRET_ENV_ALLOWLIST = []
    assert not secret_env_allowed("OPENAI_API_KEY")


@given(st.sampled_from(FIMONE_OWN), st.lists(st.text(min_size=1, max_size=8), max_size=4))
def test_no_pattern_lets_fimone_own_secrets_out(name, patterns):
    from django.test import override_settings

    with override_settings(FIMONE_SECRET_ENV_ALLOWLIST=[*patterns, "*"]):
        assert not secret_env_allowed(name)
