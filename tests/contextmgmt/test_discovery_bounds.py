"""Reading a context size is bounded: figures out of range ignored, a body too large or too
slow given up, a key never sent across a redirect to another host."""

import time

import pytest

from contextmgmt.core.budget import MAX_CONTEXT_SIZE
from contextmgmt.discovery import MAX_BODY_BYTES, discover
from tests.support.recording_server import (
    dripping_answer,
    json_answer,
    raw_answer,
    recording_server,
    redirect_answer,
)


def models(**entry) -> dict:
    return {"object": "list", "data": [{"id": "m", "object": "model", **entry}]}


@pytest.mark.parametrize(
    "claim", [10**12, MAX_CONTEXT_SIZE + 1, 1e300, -5, 0, 0.5, True, "32768", 10**400]
)
def test_a_window_out_of_range_is_not_taken(claim):
    with recording_server({"/v1/models": json_answer(models(max_model_len=claim))}) as server:
        found = discover(server.url("/v1"), "m")
    assert found.context_size is None
    assert "could not read" in found.source


def test_a_window_in_range_is_taken():
    with recording_server({"/v1/models": json_answer(models(max_model_len=32_768.0))}) as server:
        found = discover(server.url("/v1"), "m")
    assert found.context_size == 32_768 and isinstance(found.context_size, int)


@pytest.mark.parametrize(
    "body", [b"[" * 100_000, b'{"data": [{"id": "m", "max_model_len": Infinity}]}']
)
def test_hostile_json_is_not_an_answer(body):
    with recording_server({"/v1/models": raw_answer(body)}) as server:
        found = discover(server.url("/v1"), "m")
    assert found.context_size is None


def test_an_answer_larger_than_the_cap_is_given_up():
    padding = {"pad": "x" * MAX_BODY_BYTES}
    with recording_server(
        {"/v1/models": json_answer({**models(max_model_len=32_768), **padding})}
    ) as server:
        found = discover(server.url("/v1"), "m")
    assert found.context_size is None
    assert "larger than" in found.source


def test_a_dripping_endpoint_is_given_up_at_the_deadline():
    with recording_server({"/v1/models": dripping_answer(seconds=30)}) as server:
        started = time.monotonic()
        found = discover(server.url("/v1"), "m", timeout=1.0)
        took = time.monotonic() - started
    assert found.context_size is None
    # Each byte arrives well within the socket timeout: only a deadline for the whole
    # reading ends it (30 s of drip otherwise).
    assert took < 10


def test_the_key_does_not_follow_a_redirect_to_another_host():
    with recording_server({"/v1/models": json_answer(models(max_model_len=32_768))}) as other:
        routes = {"/v1/models": redirect_answer(other.url("/v1/models"))}
        with recording_server(routes) as endpoint:
            found = discover(endpoint.url("/v1"), "m", "sk-only-for-the-endpoint")
    assert found.context_size == 32_768  # the redirect was followed
    assert endpoint.headers_for("/v1/models")[0]["authorization"] == (
        "Bearer sk-only-for-the-endpoint"
    )
    assert "authorization" not in other.headers_for("/v1/models")[0]


def test_the_key_follows_a_redirect_on_the_same_host():
    routes = {
        "/v1/models": redirect_answer("/v2/models"),
        "/v2/models": json_answer(models(max_model_len=32_768)),
    }
    with recording_server(routes) as endpoint:
        found = discover(endpoint.url("/v1"), "m", "sk-key")
    assert found.context_size == 32_768
    assert endpoint.headers_for("/v2/models")[0]["authorization"] == "Bearer sk-key"


@pytest.mark.django_db
@pytest.mark.parametrize(("claim", "said"), [(1, "fewer than"), (1e300, "could not read")])
def test_the_admin_action_stores_no_window_fimone_cannot_use(admin_client, claim, said):
    from django.urls import reverse

    from contextmgmt.models import ModelConfig

    with recording_server({"/v1/models": json_answer(models(max_model_len=claim))}) as server:
        row = ModelConfig.objects.create(name="R", model="m", base_url=server.url("/v1"))
        response = admin_client.post(
            reverse("admin:contextmgmt_modelconfig_changelist"),
            {"action": "read_from_endpoint_action", "_selected_action": [row.pk]},
            follow=True,
        )
    assert response.status_code == 200 and said in response.content.decode()
    row.refresh_from_db()
    assert (row.context_size, row.max_output_tokens) == (128_000, 64_000)
