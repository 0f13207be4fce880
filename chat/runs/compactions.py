"""A run's compactions: engine summaries of loaded history are stored like load-time ones,
and every compaction is entered in the run's ledger.

A summary the engine makes while it works (the ReAct guard, the DAG planner's input) is
stored when it stands for loaded history only — persisted messages older than the run's
question, and summaries the run loaded or stored — so the next request starts from it
instead of summarising the same messages again. A summary that also covers this run's own
tool rounds, or a copy of a summary clipped for one request, is never stored; nor is the
half-size summary of an overflow retry, which the engine does not offer.

The ledger (docs/architecture.md, "Compaction ledger"): per compaction its scope, tokens
before and after, its own cost (the summariser's input and output tokens), the later model
calls of the run that carried it (``calls``) and what it saved on them (``saved_tokens``:
tokens before less after, once per such call); the run's ``compaction_saved_tokens`` is
their sum.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from contextmgmt.core.compact import CompactResult
from contextmgmt.core.messages import ChatMessage
from contextmgmt.core.tokens import estimate_message_tokens, estimate_tokens
from contextmgmt.db_memory import MAX_FACTS_SHOWN, NewSummary, is_record

LEDGER_FIELDS = ("scope", "strategy", "tokens_before", "tokens_after")
MAX_LEDGER_ENTRIES = 50
MAX_MASKED_IN_LEDGER = 20


def ledger_entry(payload: dict[str, Any]) -> dict[str, Any]:
    """One compaction as the ledger keeps it, from its ``compact`` event."""
    entry = {k: payload[k] for k in LEDGER_FIELDS if k in payload}
    entry["cost_input_tokens"] = int(payload.get("cost_input_tokens") or 0)
    entry["cost_output_tokens"] = int(payload.get("cost_output_tokens") or 0)
    for key in ("summary_id", "reused_summary", "cut_for_request", "overflow_retry"):
        if payload.get(key) is not None:
            entry[key] = payload[key]
    if payload.get("masked_count"):
        # Tool results masked, apart from what was summarised (the receipt lists them).
        entry["masked_count"] = int(payload["masked_count"])
        entry["masked_tokens_saved"] = int(payload.get("masked_tokens_saved") or 0)
        entry["masked"] = list(payload.get("masked") or [])[:MAX_MASKED_IN_LEDGER]
    return entry


# Carried by every later call of the main model: the history (ReAct sends it with every
# iteration, DAG with the planner's, the analyser's and the answer's request), what the
# guard of those calls compacted, and the planner's request. A DAG step's compaction is
# carried by that step's own calls, which cannot be told from its siblings' on the shared
# fast model: it is counted on one call, the least it saved.
_STEP_SCOPE = "step"


def entry_saving(entry: dict[str, Any]) -> int:
    """Tokens one compaction took out of each call that carried it."""
    return max(0, int(entry.get("tokens_before") or 0) - int(entry.get("tokens_after") or 0))


def ledger_totals(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """What a run's usage carries: its compactions and the input tokens they saved, over
    every later call that carried each one (``saved_tokens``; one call where unknown)."""
    saved = sum(int(e.get("saved_tokens", entry_saving(e))) for e in entries)
    return {"compactions": entries[:MAX_LEDGER_ENTRIES], "compaction_saved_tokens": saved}


@dataclass
class LoadedCoverage:
    """What a summary the engine makes may stand for: the persisted messages after the
    stored summary, in order (``messages``), the stored summary's own coverage, and for
    each summary message the run may fold (by ``id()``) how many of ``messages`` it covers.

    A stored summary must cover a contiguous stretch from the start of the conversation:
    a summary is stored only when the messages it folds and summarises are exactly the
    next ones after what its folded summaries cover. A history cut for one request leaves
    gaps, so a summary of such a view is never stored (it would record as summarised
    messages no summariser saw).
    """

    messages: list[ChatMessage]
    base_count: int = 0  # messages the stored summary covers (0: none stored)
    base_tokens: int = 0
    covers: dict[int, int] = field(default_factory=dict)


def summary_of_history(
    result: CompactResult, *, coverage: LoadedCoverage, scope: str
) -> tuple[NewSummary, int] | None:
    """The summary ``result`` made, as a summary to store, and how many of the loaded
    messages it covers — when it stands for loaded history only, without a gap; else None."""
    if result.strategy != "llm" or not result.summarized:
        return None
    made = [m for m in result.messages if m.is_summary]
    if not made:
        return None
    folded = [m for m in result.summarized if m.is_summary]
    # Earlier runs' tool records go with their answers: counted as the answers are.
    others = [m for m in result.summarized if not m.is_summary and not is_record(m)]
    if any(id(m) not in coverage.covers or m.metadata.get("clipped") for m in folded):
        return None
    if coverage.base_count and not folded:
        return None  # the stored summary was not folded in: storing this would lose it
    start = max((coverage.covers[id(m)] for m in folded), default=0)
    end = start + len(others)
    expected = coverage.messages[start:end]
    if not others or len(expected) != len(others):
        return None
    if any(
        m.metadata.get("id") != e.metadata.get("id") for m, e in zip(others, expected, strict=True)
    ):
        return None  # not the next messages in order (this run's own, or a gap)
    text = made[-1].text()
    covered_tokens = coverage.base_tokens + sum(
        estimate_message_tokens(m) for m in coverage.messages[:end]
    )
    summary = NewSummary(
        summary=text,
        covers_through_id=expected[-1].metadata["id"],
        covered_count=coverage.base_count + end,
        tokens=estimate_tokens(text),
        metadata={
            "covered_tokens": covered_tokens,
            "made_by": scope,
            # The fact check's lists, shown when the user opens the summary.
            "facts_appended": result.appended_facts[:MAX_FACTS_SHOWN],
            "facts_missing": result.missing_facts[:MAX_FACTS_SHOWN],
        },
    )
    return summary, end


@dataclass
class RunCompactions:
    """What one run's compactions leave behind: the ledger and the summaries it may store."""

    coverage: LoadedCoverage | None = None
    entries: list[dict[str, Any]] = field(default_factory=list)
    # The run's main-model calls so far (None: unknown, each saving counts once).
    main_calls: Callable[[], int] | None = None
    _calls_before: list[int | None] = field(default_factory=list)

    def loaded(
        self,
        view: list[ChatMessage],
        *,
        messages: list[ChatMessage],
        stored: Any = None,
        new_summary: NewSummary | None = None,
    ) -> None:
        """The history the engine starts from (``view``), the persisted messages after the
        stored summary (``messages``), the stored summary and a summary written at load."""
        if any(m.pinned or m.metadata.get("covered") for m in messages):
            # Pinned messages stay outside summaries, wherever they are: the contiguous
            # coverage below cannot say so, so nothing the engine summarises is stored.
            self.coverage = None
            return
        coverage = LoadedCoverage(
            messages=[
                m for m in messages if isinstance(m.metadata.get("id"), int) and not is_record(m)
            ],
            base_count=stored.covered_count if stored is not None else 0,
            base_tokens=stored.covered_tokens if stored is not None else 0,
        )
        ids = [m.metadata["id"] for m in coverage.messages]
        for message in view:
            if not message.is_summary or message.metadata.get("clipped"):
                continue
            if new_summary is None and "summary_id" in message.metadata:
                coverage.covers[id(message)] = 0  # the stored summary, as it was loaded
            elif new_summary is not None and new_summary.covers_through_id in ids:
                coverage.covers[id(message)] = ids.index(new_summary.covers_through_id) + 1
        self.coverage = coverage

    def record(self, payload: dict[str, Any]) -> None:
        if len(self.entries) < MAX_LEDGER_ENTRIES:
            self.entries.append(ledger_entry(payload))
            scope = payload.get("scope")
            main_calls = self.main_calls if scope != _STEP_SCOPE else None
            self._calls_before.append(main_calls() if main_calls is not None else None)

    def totals(self) -> dict[str, Any]:
        """``ledger_totals`` of the entries, each with the later main-model calls that
        carried it (``calls``) and what it saved on them (``saved_tokens``)."""
        now = self.main_calls() if self.main_calls is not None else 0
        for entry, before in zip(self.entries, self._calls_before, strict=True):
            calls = 1 if before is None else now - before
            entry["calls"] = calls
            entry["saved_tokens"] = entry_saving(entry) * calls
        return ledger_totals(self.entries)

    def to_store(self, scope: str, result: CompactResult) -> NewSummary | None:
        if self.coverage is None:
            return None
        found = summary_of_history(result, coverage=self.coverage, scope=scope)
        if found is None:
            return None
        summary, covered = found
        # Its message may be folded into a later one in this run and stored again.
        for message in result.messages:
            if message.is_summary:
                self.coverage.covers[id(message)] = covered
        summary.metadata.update(
            tokens_before=result.tokens_before,
            tokens_after=result.tokens_after,
            cost_input_tokens=result.usage.input_tokens,
            cost_output_tokens=result.usage.output_tokens,
        )
        return summary
