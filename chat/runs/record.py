"""What a run showed besides its answer — steps, tool calls and the DAG plan — bounded and
kept on the assistant message so that a reload shows them as they were shown live."""

from __future__ import annotations

import json
import logging
import re
from collections import deque
from typing import Any

from chat.rendering.markdown import render_markdown, render_markdown_async

logger = logging.getLogger(__name__)

# Bounds of what a run stores about its steps and plan (the live events carry the same
# previews; a runaway run must not grow a message row without limit).
RECORD_TEXT_CHARS = 2_000
# An engine summary kept with the answer's steps, and the fact check's lists with it.
RECORD_SUMMARY_CHARS = 20_000
RECORD_MAX_FACTS = 100
RECORD_MAX_STEPS = 50  # the first half and the newest half are kept, the middle counted
RECORD_MAX_ROUNDS = 6
RECORD_MAX_PLAN_STEPS = 20
RECORD_MAX_MASKED = 20  # masked tool results listed with a compaction note
# The model's reasoning text kept with the answer (shown collapsed on reload); the start of
# it is kept, the rest counted.
RECORD_MAX_REASONING_CHARS = 20_000
# The mark a cut text ends with (``fimone.agent.loop.preview`` and ``_clip``).
_MORE_CHARS = re.compile(r"… \[([\d,]+) more chars\]\Z")
_STEP_FIELDS = ("name", "arguments", "result", "text", "call_id", "step_id")
_APPROVAL_FIELDS = (
    "request_id",
    "tool",
    "source",
    "description",
    "arguments",
    "call_id",
    "step_id",
    "timeout_seconds",
    "expires_at",
)
_COMPACT_FIELDS = (
    "scope",
    "strategy",
    "original_count",
    "compacted_count",
    "tokens_before",
    "tokens_after",
    "step_id",
)


def _summary_fields(payload: dict[str, Any]) -> dict[str, Any]:
    """An engine summary as the opened step shows it after a reload: a stored one by id
    (the API has its whole text), else its text up to RECORD_SUMMARY_CHARS, and the fact
    check's lists."""
    out: dict[str, Any] = {}
    if isinstance(payload.get("summary_id"), int):
        out["summary_id"] = payload["summary_id"]
    if isinstance(payload.get("summary"), str):
        text = payload["summary"]
        out["summary"] = text[:RECORD_SUMMARY_CHARS]
        if len(text) > RECORD_SUMMARY_CHARS:
            out["summary_clipped"] = True
    if isinstance(payload.get("summarized_count"), int):
        out["summarized_count"] = payload["summarized_count"]
    for key in ("facts_appended", "facts_missing"):
        facts = payload.get(key)
        if isinstance(facts, list):
            out[key] = [str(f)[:200] for f in facts[:RECORD_MAX_FACTS]]
    return out


def _masked_fields(payload: dict[str, Any]) -> dict[str, Any]:
    """The tool results a compaction masked (tool, size, tokens saved), for the reload."""
    masked = payload.get("masked")
    if not isinstance(masked, list) or not masked:
        return {}
    return {
        "masked": [
            {
                "tool": str(m.get("tool", ""))[:200],
                "chars": int(m.get("chars") or 0),
                "tokens_saved": int(m.get("tokens_saved") or 0),
            }
            for m in masked[:RECORD_MAX_MASKED]
            if isinstance(m, dict)
        ],
        "masked_count": int(payload.get("masked_count") or len(masked)),
        "masked_tokens_saved": int(payload.get("masked_tokens_saved") or 0),
    }


def _clip(value: Any) -> Any:
    """Text cut to RECORD_TEXT_CHARS; numbers, booleans and None as they are.

    An event text the engine already cut ends with its own "… [N more chars]", counted on
    the whole text: it is kept as it is (cut again, its marker would count only the few
    characters of the first marker), or its count grows by what is cut here."""
    if value is None or isinstance(value, bool | int | float):
        return value
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if len(text) <= RECORD_TEXT_CHARS:
        return text
    more = 0
    marked = _MORE_CHARS.search(text)
    if marked is not None:
        text = text[: marked.start()]
        more = int(marked.group(1).replace(",", ""))
        if len(text) <= RECORD_TEXT_CHARS:
            return value
    more += len(text) - RECORD_TEXT_CHARS
    return text[:RECORD_TEXT_CHARS] + f"… [{more:,} more chars]"


def step_result_html(step: dict) -> dict:
    """``step`` (a ``dag.step`` event or a recorded plan step) with its result also as safe
    HTML: a step's result is Markdown, like an answer."""
    result = step.get("result")
    if not isinstance(result, str) or not result:
        return step
    return {**step, "result_html": render_markdown(result)}


async def step_result_html_async(step: dict) -> dict:
    """:func:`step_result_html` without holding the event loop for a long result."""
    result = step.get("result")
    if not isinstance(result, str) or not result:
        return step
    return {**step, "result_html": await render_markdown_async(result)}


def dag_with_html(dag: dict | None) -> dict | None:
    """A recorded ``dag`` whose step results carry ``result_html`` (for a reload)."""
    if not isinstance(dag, dict):
        return dag
    rounds = [
        {**r, "steps": [step_result_html(s) for s in r.get("steps") or []]}
        for r in dag.get("rounds") or []
        if isinstance(r, dict)
    ]
    return {**dag, "rounds": rounds}


class RunRecord:
    """What a run showed besides its answer, kept for a reload.

    Built from the events as they go out (``EventPublisher(on_sent=…)``) and stored in the
    assistant message's metadata by ``as_metadata()``:

    - ``steps``: tool calls, tool results and thoughts (``kind``, ``iteration``, ``name``,
      ``arguments`` / ``result`` / ``text``, ``step_id`` inside a DAG step; the text an
      ``answer.retract`` moved out of the answer is a thought), tool calls put to the user
      (``kind: "approval"``, ``request_id``, ``tool``, ``status``: pending until answered),
      and compaction
      notes (``kind: "compact"`` with the event's counts); ``steps_omitted`` counts the
      entries left out in the middle of a long run;
    - ``dag``: ``rounds`` (``round``, ``fallback``, ``steps`` with ``id``, ``task``,
      ``depends_on`` and the latest ``status`` with its ``result`` / ``error`` preview,
      ``analysis`` — the verdict) and ``replans`` (``round``).

    Every entry has ``seq``, its place among the run's events, so a client replays steps and
    plan interleaved exactly as they arrived live. Texts are cut at RECORD_TEXT_CHARS.
    """

    def __init__(self) -> None:
        self.version = 0  # moves on every change: a checkpoint writes only when it moved
        self._seq = 0
        self._head: list[dict] = []
        self._tail: deque[dict] = deque(maxlen=RECORD_MAX_STEPS - RECORD_MAX_STEPS // 2)
        self._omitted = 0
        self._rounds: list[dict] = []
        self._replans: list[dict] = []
        self._reasoning: list[str] = []
        self._reasoning_chars = 0
        self._approvals: dict[str, dict] = {}  # request id -> its step entry

    def __call__(self, event_type: str, payload: dict) -> None:
        try:
            self._add(event_type, payload)
        except Exception:  # the record is a courtesy: it must never fail the run
            logger.warning("could not record a %s event", event_type, exc_info=True)

    def _add(self, event_type: str, payload: dict) -> None:
        if event_type == "step":
            entry = {
                "kind": str(payload.get("kind") or "step"),
                "iteration": payload.get("iteration"),
            }
            entry.update({k: _clip(payload[k]) for k in _STEP_FIELDS if k in payload})
            self._step(entry)
        elif event_type == "answer.retract":
            # Text that streamed as answer but preceded a tool call: the step's thought.
            entry = {"kind": "thought", "iteration": payload.get("iteration")}
            entry.update({k: _clip(payload[k]) for k in ("text", "step_id") if k in payload})
            self._step(entry)
        elif event_type == "compact" and payload.get("scope") != "history":
            entry = {"kind": "compact"}
            entry.update({k: _clip(payload[k]) for k in _COMPACT_FIELDS if k in payload})
            entry.update(_summary_fields(payload))
            entry.update(_masked_fields(payload))
            self._step(entry)
        elif event_type == "dag.plan":
            self._plan(payload)
        elif event_type == "dag.step":
            self._plan_step(payload)
        elif event_type == "dag.step.delta":
            if not self._progress(payload):
                return
        elif event_type == "dag.analysis":
            if self._rounds:
                self._rounds[-1]["analysis"] = {
                    "seq": self._next(),
                    "achieved": payload.get("achieved"),
                    "confidence": payload.get("confidence"),
                    "reason": _clip(payload.get("reason")),
                }
        elif event_type == "reasoning.delta":
            text = str(payload.get("text") or "")
            room = RECORD_MAX_REASONING_CHARS - self._reasoning_chars
            if not text or room <= 0:
                return
            self._reasoning.append(text[:room])
            self._reasoning_chars += min(len(text), room)
        elif event_type == "tool.approval":
            self._approval_requested(payload)
        elif event_type == "tool.approval.resolved":
            if not self._approval_resolved(payload):
                return
        elif event_type == "dag.replan":
            self._replans.append({"seq": self._next(), "round": payload.get("round")})
            del self._replans[:-RECORD_MAX_ROUNDS]
        else:
            return
        self.version += 1

    def _approval_requested(self, payload: dict) -> None:
        """A tool call put to the user: a step of kind ``approval``, ``status`` pending
        until ``tool.approval.resolved`` (once, twice, decline, timed_out, cancelled)."""
        entry = {"kind": "approval", "iteration": payload.get("iteration"), "status": "pending"}
        entry.update({k: _clip(payload[k]) for k in _APPROVAL_FIELDS if k in payload})
        self._step(entry)
        self._approvals[str(payload.get("request_id"))] = entry
        del_keys = list(self._approvals)[:-RECORD_MAX_STEPS]
        for key in del_keys:
            del self._approvals[key]

    def _approval_resolved(self, payload: dict) -> bool:
        entry = self._approvals.get(str(payload.get("request_id")))
        if entry is None or entry["status"] != "pending":
            return False
        entry["status"] = str(payload.get("decision") or "cancelled")
        return True

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    def _step(self, entry: dict) -> None:
        entry["seq"] = self._next()
        if len(self._head) < RECORD_MAX_STEPS // 2:
            self._head.append(entry)
            return
        if len(self._tail) == self._tail.maxlen:
            self._omitted += 1
        self._tail.append(entry)

    def _plan(self, payload: dict) -> None:
        steps = [s for s in payload.get("steps") or [] if isinstance(s, dict)]
        self._rounds.append(
            {
                "seq": self._next(),
                "round": payload.get("round", len(self._rounds)),
                "fallback": bool(payload.get("fallback")),
                "steps": [
                    {
                        "id": _clip(str(s.get("id"))),
                        "task": _clip(s.get("task") or ""),
                        "depends_on": [str(d) for d in (s.get("depends_on") or [])][:20],
                        "status": "pending",
                    }
                    for s in steps[:RECORD_MAX_PLAN_STEPS]
                ],
                "analysis": None,
            }
        )
        del self._rounds[:-RECORD_MAX_ROUNDS]

    def _plan_step(self, payload: dict) -> None:
        step = self._current_step(payload)
        if step is None:
            return
        step["seq"] = self._next()
        step["status"] = str(payload.get("status") or "pending")
        if step["status"] != "running":
            step.pop("progress", None)  # the result (or error) takes its place, as live
        for key in ("result", "error"):
            step.pop(key, None)
            if payload.get(key) is not None:
                step[key] = _clip(payload[key])

    def _progress(self, payload: dict) -> bool:
        """A running step's streamed text: its newest RECORD_TEXT_CHARS are kept, so that a
        socket joining mid-step shows what the others see."""
        step = self._current_step(payload)
        text = payload.get("text")
        if step is None or step["status"] != "running" or not isinstance(text, str) or not text:
            return False
        progress = step.get("progress", "") + text
        if len(progress) > RECORD_TEXT_CHARS:
            progress = "…" + progress[-(RECORD_TEXT_CHARS - 1) :]
        step["progress"] = progress
        return True

    def _current_step(self, payload: dict) -> dict | None:
        """The step of the current plan that a ``dag.step`` event names."""
        if not self._rounds:
            return None
        wanted = str(payload.get("id"))
        return next((s for s in self._rounds[-1]["steps"] if s["id"] == wanted), None)

    def as_metadata(self) -> dict[str, Any]:
        """The record as assistant-message metadata; empty keys are left out."""
        steps = list(self._head)
        if self._omitted:
            # Where the gap is: between the kept first half and the newest entries.
            steps.append({"kind": "omitted", "count": self._omitted, "seq": steps[-1]["seq"] + 0.5})
        steps.extend(self._tail)
        metadata: dict[str, Any] = {}
        if steps:
            metadata["steps"] = steps
        if self._omitted:
            metadata["steps_omitted"] = self._omitted
        if self._rounds:
            metadata["dag"] = {
                "rounds": [
                    {
                        **r,
                        "steps": [dict(s) for s in r["steps"]],
                        "analysis": dict(r["analysis"]) if r["analysis"] else None,
                    }
                    for r in self._rounds
                ],
                "replans": [dict(r) for r in self._replans],
            }
        if self._reasoning:
            metadata["reasoning"] = "".join(self._reasoning)
        return metadata
