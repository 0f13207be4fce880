"""The environment's endpoint asked for its window at start-up: the budget uses what it says
unless the environment sets a size; a smaller Ollama num_ctx is warned about in the log."""

from __future__ import annotations

import logging

import pytest

from contextmgmt import env_window
from contextmgmt.budget import resolve_budget
from tests.support.provider_profiles import TGI_MAX_TOTAL

pytestmark = pytest.mark.django_db


@pytest.fixture
def env_endpoint(settings, scripted_server):
    settings.LLM_BASE_URL = scripted_server.base_url
    settings.LLM_MODEL = "scripted"
    settings.LLM_API_KEY = ""
    settings.LLM_CONTEXT_SIZE = None
    settings.LLM_MAX_OUTPUT_TOKENS = None
    settings.FAST_LLM_MODEL = ""
    settings.FAST_LLM_BASE_URL = ""
    settings.FAST_LLM_CONTEXT_SIZE = None
    settings.FAST_LLM_MAX_OUTPUT_TOKENS = None
    settings.LLM_DISCOVER_CONTEXT = True
    env_window.forget()
    yield settings
    env_window.forget()


def test_the_window_read_at_start_up_is_the_budget(env_endpoint, scripted_server):
    scripted_server.use_profile("tgi")
    assert resolve_budget("main").source == "default"  # nothing read yet
    env_window.read_env_windows()
    main = resolve_budget("main")
    assert (main.source, main.context_size) == ("endpoint", TGI_MAX_TOTAL)
    assert main.max_output_tokens == TGI_MAX_TOTAL // 4  # the reported 1,024 leaves too little
    assert resolve_budget("fast").context_size == TGI_MAX_TOTAL  # the same model


def test_a_size_set_in_the_environment_wins_and_nothing_is_asked(env_endpoint, scripted_server):
    scripted_server.use_profile("tgi")
    env_endpoint.LLM_CONTEXT_SIZE = 20_000
    env_window.read_env_windows()
    assert env_window.env_window("main") is None
    assert resolve_budget("main").context_size == 20_000


def test_turned_off_nothing_is_asked(env_endpoint, scripted_server):
    scripted_server.use_profile("tgi")
    env_endpoint.LLM_DISCOVER_CONTEXT = False
    env_window.read_env_windows()
    assert resolve_budget("main").source == "default"


def test_ollama_running_a_smaller_num_ctx_is_logged_as_a_warning(
    env_endpoint, scripted_server, caplog
):
    scripted_server.use_profile("ollama")
    with caplog.at_level(logging.WARNING, logger="contextmgmt.env_window"):
        env_window.read_env_windows()
    assert resolve_budget("main").context_size == 8_192
    assert any("num_ctx 8,192" in r.getMessage() for r in caplog.records)
