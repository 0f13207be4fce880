"""A prefix the provider can cache, on the wire: the requests a run and the turns after it
send to an OpenAI-compatible server (the scripted one, through the real openai SDK) keep
the previous request as their prefix between compactions; a masking compaction leaves
everything up to the last stub already sent byte for byte as it was."""

from __future__ import annotations

import json

import pytest

from contextmgmt.core.masking import MASK_PREFIX
from fimone.llm.providers.openai_client import OpenAIChatLLM
from tests.support.log_tool import with_log_tool
from tests.support.runs import events_until, of_type, send, use_small_budget
from tests.support.scripted_server import text, tool_call, tool_calls

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs"),
]

LOGS = 6


def wire(message: dict) -> str:
    return json.dumps(message, sort_keys=True, ensure_ascii=False)


def settled(messages: list[dict]) -> int:
    """How many leading messages a compaction has settled: up to the last stub."""
    stubs = [
        i
        for i, m in enumerate(messages)
        if m["role"] == "tool" and str(m.get("content") or "").startswith(MASK_PREFIX)
    ]
    return stubs[-1] + 1 if stubs else 0


def keeps_whole(previous: list[dict], current: list[dict]) -> bool:
    return [wire(m) for m in current[: len(previous)]] == [wire(m) for m in previous]


def keeps_settled(previous: list[dict], current: list[dict]) -> bool:
    point = settled(previous)
    return [wire(m) for m in current[:point]] == [wire(m) for m in previous[:point]]


@pytest.fixture
def scripted_main(run_deps, scripted_server):
    run_deps.use(
        get_llm=lambda role: OpenAIChatLLM(
            model="scripted", base_url=scripted_server.base_url, api_key="k", max_retries=0
        )
    )
    with_log_tool(run_deps)
    use_small_budget(run_deps, usable=4_000)
    return scripted_server


async def test_calls_and_turns_send_the_same_prefix_between_compactions(socket, scripted_main):
    scripted_main.enqueue(
        *[
            tool_calls(tool_call("read_log", {"n": n}, f"log{n}"), usage=(900, 10))
            for n in range(LOGS)
        ],
        text("Every batch imported without warnings.", usage=(900, 8)),
    )
    await send(socket, type="message", content="Read the import logs 0 to 5.", mode="react")
    run = await events_until(socket, "done", "error")
    assert run[-1]["type"] == "done", run[-1]
    masked = [e for e in of_type(run, "compact") if e["strategy"] == "mask"]
    assert masked, "the logs outgrow half the budget: old ones are masked"

    requests = [r["messages"] for r in scripted_main.requests]
    assert len(requests) == LOGS + 1
    # Tool schemas lead every request and never change within the run.
    assert len({wire(r["tools"]) for r in scripted_main.requests}) == 1
    whole = [keeps_whole(a, b) for a, b in zip(requests, requests[1:], strict=False)]
    # Every call keeps what compaction settled before it; the calls that do not keep the
    # whole previous request are exactly the ones a masking came before.
    assert all(keeps_settled(a, b) for a, b in zip(requests, requests[1:], strict=False))
    assert whole.count(False) == len(masked), whole
    assert sum(whole) >= len(whole) - len(masked) > 0

    # The turns after it: each starts from the previous turn's request as its prefix
    # (system prompt, the history), the earlier run's calls as records.
    scripted_main.enqueue(text("Yes, all six.", usage=(900, 5)))
    await send(socket, type="message", content="Were all six read?", mode="react")
    second = await events_until(socket, "done", "error")
    assert second[-1]["type"] == "done", second[-1]
    scripted_main.enqueue(text("None had warnings.", usage=(900, 5)))
    await send(socket, type="message", content="And no warnings at all?", mode="react")
    third = await events_until(socket, "done", "error")
    assert third[-1]["type"] == "done", third[-1]
    assert not of_type(second + third, "compact")

    turn2, turn3 = (r["messages"] for r in scripted_main.requests[-2:])
    assert turn2[0] == requests[0][0]  # the same system prompt
    records = [m for m in turn2 if m["role"] == "tool"]
    assert len(records) == LOGS and all(m["content"].startswith(MASK_PREFIX) for m in records)
    assert keeps_whole(turn2, turn3), [
        (i, a, b) for i, (a, b) in enumerate(zip(turn2, turn3, strict=False)) if a != b
    ]
