"""DAG plans and verdicts: parsing and validation of the planner's and analyser's JSON (RD.3, RD.5).

Models wrap JSON in code fences or add a sentence around it; ``extract_json`` takes the
first JSON object in the reply. A plan is refused (``PlanError`` with a message the planner
can act on when re-asked) when it is malformed, empty, too long, has duplicate or missing
ids, an empty task, an unknown dependency or a cycle.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

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


def _ident(value: Any, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise PlanError(f"{what} must be a string")
    text = str(value).strip()
    if not text:
        raise PlanError(f"{what} must not be empty")
    return text


def parse_plan(text: str, *, max_steps: int = MAX_STEPS) -> list[Step]:
    """Steps of a valid plan, in dependency order (a step after all it depends on)."""
    try:
        data = extract_json(text)
    except ValueError as exc:
        raise PlanError(f"malformed JSON: {exc}") from None
    raw_steps = data.get("steps") if isinstance(data, dict) else None
    if not isinstance(raw_steps, list):
        raise PlanError('the reply must be an object with a "steps" list')
    if not raw_steps:
        raise PlanError("the plan has no steps")
    if len(raw_steps) > max_steps:
        raise PlanError(f"the plan has {len(raw_steps)} steps; at most {max_steps} are allowed")
    steps: list[Step] = []
    seen: set[str] = set()
    for n, raw in enumerate(raw_steps, 1):
        if not isinstance(raw, dict):
            raise PlanError(f"step {n} is not an object")
        step_id = _ident(raw.get("id"), f"the id of step {n}")
        if step_id in seen:
            raise PlanError(f"duplicate step id {step_id!r}")
        seen.add(step_id)
        task = raw.get("task")
        if not isinstance(task, str) or not task.strip():
            raise PlanError(f"step {step_id!r} has no task")
        deps = raw.get("depends_on", [])
        if deps is None:
            deps = []
        if not isinstance(deps, list):
            raise PlanError(f"depends_on of step {step_id!r} must be a list")
        dep_ids = tuple(dict.fromkeys(_ident(d, f"a dependency of {step_id!r}") for d in deps))
        steps.append(Step(step_id, task.strip(), dep_ids))
    known = {s.id for s in steps}
    for step in steps:
        for dep in step.depends_on:
            if dep not in known:
                raise PlanError(f"step {step.id!r} depends on unknown step {dep!r}")
    return _dependency_order(steps)


def _dependency_order(steps: list[Step]) -> list[Step]:
    """Kahn's algorithm, stable in plan order; PlanError naming the steps of a cycle."""
    remaining = {s.id: set(s.depends_on) for s in steps}
    ordered: list[Step] = []
    by_id = {s.id: s for s in steps}
    while remaining:
        ready = [sid for sid in by_id if sid in remaining and not remaining[sid]]
        if not ready:
            cycle = ", ".join(sorted(remaining))
            raise PlanError(f"the dependencies form a cycle among steps {cycle}")
        for sid in ready:
            del remaining[sid]
            ordered.append(by_id[sid])
        for deps in remaining.values():
            deps.difference_update(ready)
    return ordered


def fallback_plan(task: str) -> list[Step]:
    """One step doing the whole request (when the planner cannot produce a valid plan)."""
    return [Step("s1", task, ())]


def parse_verdict(text: str) -> Verdict | None:
    """The analyser's verdict, or None when the reply is not a usable verdict."""
    try:
        data = extract_json(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("achieved"), bool):
        return None
    confidence = data.get("confidence", 0.0)
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        return None
    reason = data.get("reason", "")
    return Verdict(
        achieved=data["achieved"],
        confidence=min(1.0, max(0.0, float(confidence))),
        reason=reason if isinstance(reason, str) else str(reason),
    )
