"""The compaction ledger of a conversation (a read, scoped by the caller's ownership check).

Every answer's usage holds its compactions (``usage.compactions``: scope, tokens before
and after, the summariser's own input and output tokens, and ``saved_tokens``: tokens
before less after on every later model call of the run that carried it) and their sum
(``usage.compaction_saved_tokens``). A stored summary keeps what it cost when it was made;
every later request that starts from it names it (``metadata.compaction.summary_id``) and
saves again what it saves on its own calls — so its net saving is the sum over the requests
that used it, less its cost, once.
"""

from __future__ import annotations

from typing import Any

from chat.models import ContextSummary, Conversation, Message


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _history_saving(history: dict[str, Any], entries: list[dict[str, Any]]) -> int:
    """What a request saved with the history it loaded: on every call that carried it
    (its ledger entry), else — an answer from before that was kept — on one call."""
    for entry in entries:
        if entry.get("scope") == "history" and "saved_tokens" in entry:
            return max(0, _int(entry["saved_tokens"]))
    return max(0, _int(history.get("tokens_before")) - _int(history.get("tokens_after")))


def compaction_ledger(*, conversation: Conversation) -> dict[str, Any]:
    """Totals of the conversation's compactions, and one line per stored summary."""
    answers = Message.objects.filter(
        conversation=conversation, role=Message.Role.ASSISTANT
    ).values_list("metadata", flat=True)
    totals = {
        "compactions": 0,
        "cost_input_tokens": 0,
        "cost_output_tokens": 0,
        "saved_input_tokens": 0,
        # Input tokens the provider read from its prompt cache, where it reported them.
        "cached_input_tokens": 0,
        # Tool results masked (stubs instead of the whole text), and the tokens that saved
        # on the call that masked them.
        "masked_results": 0,
    }
    used_by: dict[int, list[int]] = {}  # summary id -> tokens each request saved with it
    for metadata in answers:
        metadata = metadata or {}
        usage = metadata.get("usage") or {}
        entries = [e for e in usage.get("compactions") or [] if isinstance(e, dict)]
        # A reused stored summary is no new compaction (it was counted when it was made).
        totals["compactions"] += sum(1 for e in entries if not e.get("reused_summary"))
        totals["cost_input_tokens"] += _int(usage.get("compaction_input_tokens"))
        totals["cost_output_tokens"] += _int(usage.get("compaction_output_tokens"))
        totals["saved_input_tokens"] += _int(usage.get("compaction_saved_tokens"))
        totals["cached_input_tokens"] += _int(usage.get("cached_input_tokens"))
        totals["masked_results"] += sum(_int(e.get("masked_count")) for e in entries)
        history = metadata.get("compaction") or {}
        summary_id = history.get("summary_id")
        if isinstance(summary_id, int):
            used_by.setdefault(summary_id, []).append(_history_saving(history, entries))
    totals["net_saved_tokens"] = (
        totals["saved_input_tokens"] - totals["cost_input_tokens"] - totals["cost_output_tokens"]
    )
    summaries = []
    for row in ContextSummary.objects.filter(conversation=conversation).order_by("id"):
        meta = row.metadata or {}
        cost = _int(meta.get("cost_input_tokens")) + _int(meta.get("cost_output_tokens"))
        savings = used_by.get(row.pk, [])
        summaries.append(
            {
                "id": row.pk,
                "made_by": meta.get("made_by", "history"),
                "covered_count": row.covered_count,
                "tokens_before": _int(meta.get("tokens_before")),
                "tokens_after": _int(meta.get("tokens_after")),
                "cost_tokens": cost,
                "requests": len(savings),
                "saved_input_tokens": sum(savings),
                "net_saved_tokens": sum(savings) - cost,
            }
        )
    return {**totals, "summaries": summaries}
