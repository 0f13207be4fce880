"""Fixtures for the engine tests: an event recorder and an AgentContext builder."""

from __future__ import annotations

import pytest

from contextmgmt.core.guard import ContextGuard
from contextmgmt.core.messages import ChatMessage
from fimone.agent import AgentContext, InjectionQueue, default_tools


class RecordedEvents:
    """An EventSink that keeps every (event, payload) it is sent."""

    def __init__(self) -> None:
        self.items: list[tuple[str, dict]] = []

    async def __call__(self, event: str, payload: dict) -> None:
        self.items.append((event, payload))

    def of(self, event: str) -> list[dict]:
        return [payload for name, payload in self.items if name == event]

    def names(self) -> list[str]:
        return [name for name, _ in self.items]

    def answer_text(self) -> str:
        """The answer as a client shows it: deltas appended, retracted text taken back."""
        text = ""
        for name, payload in self.items:
            if name == "answer.delta":
                text += payload["text"]
            elif name == "answer.retract":
                assert text.endswith(payload["text"].strip()) or payload["chars"] > len(text) / 2
                text = text[: len(text) - payload["chars"]]
        return text


class SpyGuard(ContextGuard):
    """A real ContextGuard that records how it was built and called."""

    built: list[SpyGuard] = []

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.checks: list[dict] = []
        SpyGuard.built.append(self)

    async def check_and_compact(self, messages, budget=None, hint="general"):
        self.checks.append({"budget": budget, "hint": hint, "count": len(messages)})
        return await super().check_and_compact(messages, budget=budget, hint=hint)


@pytest.fixture
def events() -> RecordedEvents:
    return RecordedEvents()


@pytest.fixture
def spy_guards(monkeypatch) -> list[SpyGuard]:
    """Every ContextGuard the engines build, recorded (the engines' own module names)."""
    SpyGuard.built = []
    monkeypatch.setattr("fimone.agent.react.ContextGuard", SpyGuard)
    monkeypatch.setattr("fimone.agent.dag.ContextGuard", SpyGuard)
    return SpyGuard.built


@pytest.fixture
def build_context(events):
    """A factory of AgentContext with sensible test defaults; keyword overrides."""

    def build(llm, **overrides) -> AgentContext:
        query = overrides.pop("query", "What is 6 times 7?")
        fields = {
            "llm": llm,
            "fast_llm": overrides.pop("fast_llm", llm),
            "compact_llm": None,
            "main_budget": 60_000,
            "fast_budget": 60_000,
            "history": [],
            "query": ChatMessage(role="user", content=query) if isinstance(query, str) else query,
            "sink": events,
            "injections": InjectionQueue(),
            "tools": default_tools(),
        }
        fields.update(overrides)
        return AgentContext(**fields)

    return build
