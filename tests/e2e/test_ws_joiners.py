"""A socket that joins while a run is in progress sees the run so far: a real daphne, real
websockets, the real ``openai`` SDK against the scripted server, which holds the run in the
middle of a model's stream until the test releases it.

DAG: the plan, each step's state and result, and the streamed text of the running step.
ReAct: the steps (thought, tool call, tool result) and the answer so far. Then the joiner
follows the rest live, and what it shows adds up to exactly what the first socket shows.
A page that read the conversation while the run was writing and joins after it ended is
told there is no run, so it can read the answer again.
"""

from __future__ import annotations

import json
import threading

import pytest
import websockets

from tests.e2e.test_ws_runs import Browserless
from tests.e2e.test_ws_streaming import Shown, open_socket, send
from tests.support.scripted_server import held, text, tool_calls

pytestmark = pytest.mark.slow

VERDICT = {"achieved": True, "confidence": 0.9, "reason": "both steps done"}


@pytest.fixture
def scripted_daphne(shared_daphne_factory, scripted_server):
    server = shared_daphne_factory(
        env={
            "LLM_BASE_URL": scripted_server.base_url,
            "LLM_API_KEY": "test-key",
            "LLM_MODEL": "scripted-model",
        }
    )
    client = Browserless(server)
    client.login()
    return server, client


class Joiner(Shown):
    """A socket that joined mid-run: ``run.active`` first, then the live events."""

    def __init__(self, ws) -> None:
        super().__init__(ws)
        self.step_text: dict[str, str] = {}

    async def next(self) -> dict:
        event = await super().next()
        if event["type"] == "run.active":
            self.answer = event.get("text", "")
            for round_ in (event.get("dag") or {}).get("rounds", []):
                for step in round_["steps"]:
                    self.step_text[step["id"]] = step.get("progress", "")
        elif event["type"] == "dag.step.delta":
            self.step_text[event["id"]] = self.step_text.get(event["id"], "") + event["text"]
        return event


def step_text(shown: Shown, step_id: str) -> str:
    return "".join(
        e["text"] for e in shown.events if e["type"] == "dag.step.delta" and e["id"] == step_id
    )


async def test_a_socket_joining_mid_dag_sees_the_plan_step_states_and_the_running_steps_text(
    scripted_daphne, scripted_server
):
    server, client = scripted_daphne
    release = threading.Event()
    plan = {
        "steps": [
            {"id": "s1", "task": "Work out 6*7", "depends_on": []},
            {"id": "s2", "task": "Add one to it", "depends_on": ["s1"]},
        ]
    }
    scripted_server.enqueue(
        text(json.dumps(plan)),
        text("Six times seven is 42."),
        held(text("Adding one to 42 gives 43 in the end."), release, after=3),
        text(json.dumps(VERDICT)),
        text("The answer is 43."),
    )
    conversation_id, ws = await open_socket(server, client)
    async with ws:
        first = Shown(ws)
        await send(ws, type="message", content="What is 6*7+1?", mode="dag")
        # Held after three pieces: wait until the first socket was shown all three.
        while step_text(first, "s2") != "Adding one to ":
            await first.until("dag.step.delta")
        _, late_ws = await open_socket(server, client, conversation_id)
        async with late_ws:
            joiner = Joiner(late_ws)
            active = await joiner.until("run.active")
            (round_,) = active["dag"]["rounds"]
            states = {s["id"]: (s["status"], s.get("result")) for s in round_["steps"]}
            assert states == {"s1": ("done", "Six times seven is 42."), "s2": ("running", None)}
            assert joiner.step_text == {"s1": "", "s2": "Adding one to "}
            assert [s["task"] for s in round_["steps"]] == ["Work out 6*7", "Add one to it"]
            release.set()
            done = await joiner.until("done", "error")
        assert done["type"] == "done", joiner.events
        await first.until("done")
    full = "Adding one to 42 gives 43 in the end."
    assert step_text(first, "s2") == joiner.step_text["s2"] == full
    assert joiner.answer == first.answer == "The answer is 43."


async def test_a_socket_joining_mid_react_sees_the_steps_and_the_answer_so_far(
    scripted_daphne, scripted_server
):
    server, client = scripted_daphne
    release = threading.Event()
    scripted_server.enqueue(
        tool_calls(("calculator", {"expression": "6*7"}), content="Let me compute that. "),
        held(text("Six times seven is 42, computed."), release, after=2),
    )
    conversation_id, ws = await open_socket(server, client)
    async with ws:
        first = Shown(ws)
        await send(ws, type="message", content="What is 6*7?", mode="react")
        while first.answer != "Six times ":
            await first.until("answer.delta", "answer.retract")
        _, late_ws = await open_socket(server, client, conversation_id)
        async with late_ws:
            joiner = Joiner(late_ws)
            active = await joiner.until("run.active")
            assert active["text"] == "Six times "
            steps = [(s["kind"], s.get("name"), s.get("text")) for s in active["steps"]]
            assert steps[0] == ("thought", None, "Let me compute that.")
            assert [kind for kind, _, _ in steps[1:]] == ["tool_call", "tool_result"]
            assert steps[1][1] == "calculator" and "42" in str(active["steps"][2]["result"])
            release.set()
            done = await joiner.until("done", "error")
        assert done["type"] == "done", joiner.events
        await first.until("done")
    assert joiner.answer == first.answer == "Six times seven is 42, computed."


async def test_a_page_joining_after_the_run_it_read_as_running_ended_is_told_there_is_no_run(
    scripted_daphne, scripted_server
):
    """RD.6: a reload as the run ends. The history said the answer was running; the socket
    joined once the run had ended, so no ``run.active`` came and nothing ended the answer.
    A socket opened with ``run_state=1`` (the chat page's) now hears ``run.none`` first."""
    server, client = scripted_daphne
    release = threading.Event()
    scripted_server.enqueue(held(text("Alpha beta gamma delta."), release, after=2))
    conversation_id, ws = await open_socket(server, client)
    async with ws:
        first = Shown(ws)
        await send(ws, type="message", content="Say four Greek letters", mode="react")
        while first.answer != "Alpha beta ":
            await first.until("answer.delta")
        # The reloaded page's history read: the answer is being written.
        assert newest_answer(client, conversation_id)["status"] == "running"
        release.set()
        done = await first.until("done", "error")
    assert done["type"] == "done", first.events

    url = f"{server.ws_url}/ws/chat/{conversation_id}/?run_state=1"
    async with websockets.connect(url, additional_headers=client.ws_headers()) as late_ws:
        late = Shown(late_ws)
        # A frame the server answers whatever the run's state: what came before its answer
        # is all the socket was told on joining.
        await send(late_ws, type="cancel")
        refused = await late.until("error")
    assert refused["code"] == "no_active_run"
    assert [e["type"] for e in late.events] == ["run.none", "error"], late.events
    # What the page then reads again: the finished answer.
    answer = newest_answer(client, conversation_id)
    assert (answer["status"], answer["content"]) == ("done", "Alpha beta gamma delta.")


def newest_answer(client: Browserless, conversation_id: str) -> dict:
    """The conversation's newest answer as the chat page reads it (the messages API)."""
    page = client.api("GET", f"/api/conversations/{conversation_id}/messages/")
    return [m for m in page["messages"] if m["role"] == "assistant"][-1]
