"""Admin ModelConfig values at and past their limits (issue 9; SPEC R5.1, R5.4).

tests/contextmgmt/test_admin.py checks that nonsense is refused with a clear message; here
every limit is probed on both sides: the value at the limit is saved and gives a sane
budget, one step past it is refused with the form shown again — never a 500, never a row.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from contextmgmt.budget import resolve_budget
from contextmgmt.core.budget import MIN_INPUT_BUDGET, SYSTEM_PROMPT_RESERVE
from contextmgmt.models import MAX_CONTEXT_SIZE, ModelConfig

pytestmark = pytest.mark.django_db

ADD_URL = "admin:contextmgmt_modelconfig_add"
FLOOR_CONTEXT = 16_000
# The smallest legal gap: context - output - reserve == the 4,000 floor exactly (R5.4).
FLOOR_OUTPUT = FLOOR_CONTEXT - SYSTEM_PROMPT_RESERVE - MIN_INPUT_BUDGET


def form(**overrides) -> dict:
    data = {
        "name": "Model",
        "model": "provider/model",
        "role": "main",
        "base_url": "",
        "api_key_env": "",
        "context_size": "128000",
        "max_output_tokens": "16000",
        "is_active": "on",
        # The provider profile as the add form shows it (a browser submits the defaults).
        "profile_auto": "on",
        "token_limit_param": "max_tokens",
        "send_temperature": "on",
        "stream_usage": "on",
        "stream": "on",
    }
    data.update(overrides)
    return data


def _long_url(length: int) -> str:
    head = "https://llm.example.com/"
    return head + "a" * (length - len(head))


AT_LIMIT = {
    "context at the typo limit": {"context_size": str(MAX_CONTEXT_SIZE)},
    "usable input exactly at the floor": {
        "context_size": str(FLOOR_CONTEXT),
        "max_output_tokens": str(FLOOR_OUTPUT),
    },
    "largest output a 128K context allows": {
        "context_size": "128000",
        "max_output_tokens": str(128_000 - SYSTEM_PROMPT_RESERVE - MIN_INPUT_BUDGET),
    },
    "name of 100 chars": {"name": "n" * 100},
    "model id of 200 chars": {"model": "m" * 200},
    "api key variable of 100 chars": {"api_key_env": "K" * 92 + "_API_KEY"},
    "base URL of 500 chars": {"base_url": _long_url(500)},
    "unicode name": {"name": "模型 😀 Modèle"},
}

PAST_LIMIT = {
    "context one past the typo limit": {"context_size": str(MAX_CONTEXT_SIZE + 1)},
    "context past a 32-bit integer": {"context_size": str(2**31)},
    "context past a 64-bit integer": {"context_size": str(2**63)},
    "context negative": {"context_size": "-1"},
    "context not an integer": {"context_size": "1e9"},
    "context with a fraction": {"context_size": "128000.5"},
    "context empty": {"context_size": ""},
    "usable input one below the floor": {
        "context_size": str(FLOOR_CONTEXT),
        "max_output_tokens": str(FLOOR_OUTPUT + 1),
    },
    "output equal to context": {"context_size": "128000", "max_output_tokens": "128000"},
    "one more output token than a 128K context allows": {
        "context_size": "128000",
        "max_output_tokens": str(128_000 - SYSTEM_PROMPT_RESERVE - MIN_INPUT_BUDGET + 1),
    },
    "output past a 64-bit integer": {"max_output_tokens": str(2**63)},
    "name of 101 chars": {"name": "n" * 101},
    "model id of 201 chars": {"model": "m" * 201},
    "api key variable of 101 chars": {"api_key_env": "K" * 93 + "_API_KEY"},
    "base URL of 501 chars": {"base_url": _long_url(501)},
    "NUL byte in the name": {"name": "bad\x00name"},
    "NUL byte in the model id": {"model": "gpt\x00"},
    "javascript URL": {"base_url": "javascript:alert(1)"},
    "unknown role": {"role": "root"},
}


@pytest.mark.parametrize("overrides", list(AT_LIMIT.values()), ids=list(AT_LIMIT))
def test_values_at_the_limit_are_saved_and_give_a_sane_budget(admin_client, overrides):
    response = admin_client.post(reverse(ADD_URL), form(**overrides))
    assert response.status_code == 302, response.context["adminform"].form.errors
    row = ModelConfig.objects.get()
    budget = resolve_budget("main")
    assert budget.source == "db"
    assert budget.usable_input_tokens >= MIN_INPUT_BUDGET
    assert budget.usable_input_tokens == row.context_size - row.max_output_tokens - 4_000
    # The saved row renders in the changelist and its change page.
    changelist = admin_client.get(reverse("admin:contextmgmt_modelconfig_changelist"))
    change = admin_client.get(reverse("admin:contextmgmt_modelconfig_change", args=[row.pk]))
    assert changelist.status_code == change.status_code == 200


@pytest.mark.parametrize("overrides", list(PAST_LIMIT.values()), ids=list(PAST_LIMIT))
def test_values_past_the_limit_are_refused_with_the_form_again(admin_client, overrides):
    response = admin_client.post(reverse(ADD_URL), form(**overrides))
    assert response.status_code == 200  # the form again, not a 500 and not a redirect
    errors = response.context["adminform"].form.errors
    assert set(errors) & set(overrides), errors
    assert not ModelConfig.objects.exists()


def test_editing_a_saved_row_past_a_limit_leaves_it_unchanged(admin_client):
    admin_client.post(reverse(ADD_URL), form())
    row = ModelConfig.objects.get()
    url = reverse("admin:contextmgmt_modelconfig_change", args=[row.pk])
    response = admin_client.post(url, form(context_size=str(2**63)))
    assert response.status_code == 200
    row.refresh_from_db()
    assert row.context_size == 128_000
