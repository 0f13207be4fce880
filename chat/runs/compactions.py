"""A run's compactions: engine summaries of loaded history are stored like load-time ones,
and every compaction is entered in the run's ledger.

A summary the engine makes while it works (the ReAct guard, the DAG planner's input) is
stored when it stands for loaded history only — persisted messages older than the run's
question, and summaries the run loaded or stored — so the next request starts from it
instead of summarising the same messages again. A summary that also covers this run's own
tool rounds, or a copy of a summary clipped for one request, is never stored.

The ledger (docs/architecture.md, "Compaction ledger"): per compaction its scope, tokens
before and after, and its own cost (the summariser's input and output tokens); the run's
``saved`` is the input tokens its compactions took out of the next model call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contextmgmt.core.compact import CompactResult
from contextmgmt.core.messages import ChatMessage
from contextmgmt.core.tokens import estimate_message_tokens, estimate_tokens
from contextmgmt.db_memory import NewSummary

LEDGER_FIELDS = ("scope", "strategy", "tokens_before", "tokens_after")
MAX_LEDGER_ENTRIES = 50


def ledger_entry(payload: dict[str, Any]) -> dict[str, Any]:
    """One compaction as the ledger keeps it, from its ``compact`` event."""
    entry = {k: payload[k] for k in LEDGER_FIELDS if k in payload}
    entry["cost_input_tokens"] = int(payload.get("cost_input_tokens") or 0)
    entry["cost_output_tokens"] = int(payload.get("cost_output_tokens") or 0)
    for key in ("summary_id", "reused_summary", "cut_for_request"):
        if payload.get(key) is not None:
            entry[key] = payload[key]
    return entry


def ledger_totals(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """What a run's usage carries: its compactions and the input tokens they saved."""
    saved = sum(
        max(0, int(e.get("tokens_before") or 0) - int(e.get("tokens_after") or 0)) for e in entries
    )
    return {"compactions": entries[:MAX_LEDGER_ENTRIES], "compaction_saved_tokens": saved}


def summary_of_history(
    result: CompactResult, *, before_id: int, accepted: set[int], scope: str
) -> NewSummary | None:
    """The summary ``result`` made, as a summary to store, when it stands for loaded
    history only; else None.

    ``accepted`` holds ``id()`` of the summary messages that may be folded into a stored
    one: those the run loaded (a stored or a load-time summary) and those it stored.
    """
    if result.strategy != "llm" or not result.summarized:
        return None
    made = [m for m in result.messages if m.is_summary]
    if not made:
        return None
    covered_count, covered_tokens, through = 0, 0, None
    for message in result.summarized:
        if message.is_summary:
            if id(message) not in accepted or message.metadata.get("clipped"):
                return None
            covered_count += int(message.metadata.get("summarized_count") or 0)
            covered_tokens += int(message.metadata.get("covered_tokens") or 0)
            continue
        message_id = message.metadata.get("id")
        if not isinstance(message_id, int) or message_id >= before_id:
            return None  # this run's own messages: not history
        covered_count += 1
        covered_tokens += estimate_message_tokens(message)
        through = message_id if through is None else max(through, message_id)
    if through is None:
        return None
    text = made[-1].text()
    return NewSummary(
        summary=text,
        covers_through_id=through,
        covered_count=covered_count,
        tokens=estimate_tokens(text),
        metadata={"covered_tokens": covered_tokens, "made_by": scope},
    )


@dataclass
class RunCompactions:
    """What one run's compactions leave behind: the ledger and the summaries it may fold."""

    before_id: int
    accepted: set[int] = field(default_factory=set)
    entries: list[dict[str, Any]] = field(default_factory=list)

    def loaded(self, history: list[ChatMessage]) -> None:
        """The history the engine starts from: its summaries may be folded and stored."""
        self.accepted.update(id(m) for m in history if m.is_summary)

    def record(self, payload: dict[str, Any]) -> None:
        if len(self.entries) < MAX_LEDGER_ENTRIES:
            self.entries.append(ledger_entry(payload))

    def to_store(self, scope: str, result: CompactResult) -> NewSummary | None:
        summary = summary_of_history(
            result, before_id=self.before_id, accepted=self.accepted, scope=scope
        )
        if summary is not None:
            # Its message may be folded into a later one in this run and stored again.
            self.accepted.update(id(m) for m in result.messages if m.is_summary)
            summary.metadata.update(
                tokens_before=result.tokens_before,
                tokens_after=result.tokens_after,
                cost_input_tokens=result.usage.input_tokens,
                cost_output_tokens=result.usage.output_tokens,
            )
        return summary
