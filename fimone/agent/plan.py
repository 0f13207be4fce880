"""DAG plans and verdicts: the planner's and the analyser's JSON, validated.

Models wrap JSON in code fences or add a sentence around it; ``extract_json`` takes the
first JSON object in the reply. The shape is checked by pydantic and the step order by
``graphlib``; a plan is refused (``PlanError`` with a message the planner can act on when
re-asked) when it is malformed, empty, too long, has duplicate or missing ids, an empty
task, an unknown dependency or a cycle.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from graphlib import CycleError, TopologicalSorter
from typing import Annotated, Any, NotRequired, Required

from pydantic import BeforeValidator, ConfigDict, Field, Strict, TypeAdapter, ValidationError
from typing_extensions import TypedDict  # pydantic needs it on Python < 3.12

from .validation import describe

MAX_STEPS = 8

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


class PlanError(ValueError):
    pass


@dataclass(frozen=True)
class Step:
    id: str
    task: str
    depends_on: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "task": self.task, "depends_on": list(self.depends_on)}


@dataclass(frozen=True)
class Verdict:
    achieved: bool
    confidence: float
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"achieved": self.achieved, "confidence": self.confidence, "reason": self.reason}


def extract_json(text: str) -> Any:
    """The first JSON object in ``text`` (inside a code fence or bare); ValueError if none."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        start = candidate.find("{")
        while start != -1:
            try:
                value, _ = decoder.raw_decode(candidate, start)
                return value
            except json.JSONDecodeError:
                start = candidate.find("{", start + 1)
    raise ValueError("no JSON object found in the reply")


def _ident(value: Any) -> str:
    # Models number their steps as often as they name them: 1 and "1" are the same id.
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError("must be a string or an integer")
    text = str(value).strip()
    if not text:
        raise ValueError("must not be empty")
    return text


def _stripped(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


def _none_is_empty(value: Any) -> Any:
    return [] if value is None else value


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


StepId = Annotated[str, BeforeValidator(_ident)]
Task = Annotated[str, Strict(), Field(min_length=1), BeforeValidator(_stripped)]


class _StepDoc(TypedDict):
    __pydantic_config__ = ConfigDict(extra="ignore")  # type: ignore[misc]
    id: Required[StepId]
    task: Required[Task]
    depends_on: NotRequired[Annotated[list[StepId], BeforeValidator(_none_is_empty)]]


@lru_cache
def _plan_adapter(max_steps: int) -> TypeAdapter[Any]:
    class PlanDoc(TypedDict):
        __pydantic_config__ = ConfigDict(extra="ignore")  # type: ignore[misc]
        steps: Annotated[list[_StepDoc], Field(min_length=1, max_length=max_steps)]

    return TypeAdapter(PlanDoc)


def parse_plan(text: str, *, max_steps: int = MAX_STEPS) -> list[Step]:
    """Steps of a valid plan, in dependency order (a step after all it depends on)."""
    try:
        data = extract_json(text)
    except ValueError as exc:
        raise PlanError(f"malformed JSON: {exc}") from None
    try:
        doc = _plan_adapter(max_steps).validate_python(data)
    except ValidationError as exc:
        raise PlanError(describe(exc)) from None
    steps: list[Step] = []
    for raw in doc["steps"]:
        if any(step.id == raw["id"] for step in steps):
            raise PlanError(f"duplicate step id {raw['id']!r}")
        deps = tuple(dict.fromkeys(raw.get("depends_on", [])))
        steps.append(Step(raw["id"], raw["task"], deps))
    known = {s.id for s in steps}
    for step in steps:
        for dep in step.depends_on:
            if dep not in known:
                raise PlanError(f"step {step.id!r} depends on unknown step {dep!r}")
    return _dependency_order(steps)


def _dependency_order(steps: list[Step]) -> list[Step]:
    """Wave by wave, each wave in plan order; PlanError naming the steps of a cycle."""
    sorter = TopologicalSorter({step.id: step.depends_on for step in steps})
    try:
        sorter.prepare()
    except CycleError as exc:
        # graphlib lists the cycle with each step before the one that depends on it.
        cycle = " → ".join(reversed(exc.args[1]))
        raise PlanError(
            f"the dependencies form a cycle: {cycle} (each depends on the next)"
        ) from None
    position = {step.id: n for n, step in enumerate(steps)}
    by_id = {step.id: step for step in steps}
    ordered: list[Step] = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready(), key=position.__getitem__)
        ordered.extend(by_id[sid] for sid in ready)
        sorter.done(*ready)
    return ordered


def fallback_plan(task: str) -> list[Step]:
    """One step doing the whole request (when the planner cannot produce a valid plan)."""
    return [Step("s1", task, ())]


class _VerdictDoc(TypedDict):
    __pydantic_config__ = ConfigDict(extra="ignore")  # type: ignore[misc]
    achieved: Required[Annotated[bool, Strict()]]
    confidence: NotRequired[Annotated[float, Strict()]]
    reason: NotRequired[Annotated[str, BeforeValidator(_as_text)]]


_VERDICT = TypeAdapter(_VerdictDoc)


def parse_verdict(text: str) -> Verdict | None:
    """The analyser's verdict, or None when the reply is not a usable verdict."""
    try:
        doc = _VERDICT.validate_python(extract_json(text))
    except (ValueError, ValidationError):
        return None
    return Verdict(
        achieved=doc["achieved"],
        confidence=min(1.0, max(0.0, doc.get("confidence", 0.0))),
        reason=doc.get("reason", ""),
    )
