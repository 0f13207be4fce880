"""The compaction ledger of a conversation (a read, scoped by the caller's ownership check),
and the totals it reads, kept on the conversation as its answers are stored.

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

from chat import row_updates
from chat.models import ContextSummary, Conversation
from chat.row_reads import PlainSelect


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _history_saving(history: dict[str, Any], entries: list[dict[str, Any]]) -> int:
    """What a request saved with the history it loaded: on every call that carried it
    (its ledger entry), else — an answer from before that was kept — on one call."""
    for entry in entries:
        if entry.get("scope") == "history" and "saved_tokens" in entry:
            return max(0, _int(entry["saved_tokens"]))
    return max(0, _int(history.get("tokens_before")) - _int(history.get("tokens_after")))


TOTAL_KEYS = (
    "compactions",
    "cost_input_tokens",
    "cost_output_tokens",
    "saved_input_tokens",
    # Input tokens the provider read from its prompt cache, where it reported them.
    "cached_input_tokens",
    # Tool results masked (stubs instead of the whole text), and the tokens that saved on
    # the call that masked them.
    "masked_results",
)


def answer_share(metadata: Any) -> dict[str, Any]:
    """What one answer adds to its conversation's ledger: the totals, and under
    ``summaries`` the request it made from a stored summary ({summary id: [requests,
    tokens saved]})."""
    metadata = metadata if isinstance(metadata, dict) else {}
    usage = metadata.get("usage") or {}
    usage = usage if isinstance(usage, dict) else {}
    entries = [e for e in usage.get("compactions") or [] if isinstance(e, dict)]
    share: dict[str, Any] = {
        # A reused stored summary is no new compaction (it was counted when it was made).
        "compactions": sum(1 for e in entries if not e.get("reused_summary")),
        "cost_input_tokens": _int(usage.get("compaction_input_tokens")),
        "cost_output_tokens": _int(usage.get("compaction_output_tokens")),
        "saved_input_tokens": _int(usage.get("compaction_saved_tokens")),
        "cached_input_tokens": _int(usage.get("cached_input_tokens")),
        "masked_results": sum(_int(e.get("masked_count")) for e in entries),
        "summaries": {},
    }
    history = metadata.get("compaction") or {}
    summary_id = history.get("summary_id") if isinstance(history, dict) else None
    if isinstance(summary_id, int) and not isinstance(summary_id, bool):
        share["summaries"][str(summary_id)] = [1, _history_saving(history, entries)]
    return share


def ledger_plus(ledger: Any, share: dict[str, Any], sign: int = 1) -> dict[str, Any]:
    """``ledger`` with ``share`` added (``sign`` -1: taken away)."""
    ledger = ledger if isinstance(ledger, dict) else {}
    out: dict[str, Any] = {k: _int(ledger.get(k)) + sign * share[k] for k in TOTAL_KEYS}
    summaries = {k: list(v) for k, v in (ledger.get("summaries") or {}).items()}
    for key, (requests, saved) in share["summaries"].items():
        was = summaries.get(key, [0, 0])
        summaries[key] = [was[0] + sign * requests, was[1] + sign * saved]
    out["summaries"] = {k: v for k, v in summaries.items() if v[0]}
    return out


def ledger_of_answers(metadatas) -> dict[str, Any]:
    """The ledger summed over answers' metadata (the stored totals start from it)."""
    ledger: dict[str, Any] = {}
    for metadata in metadatas:
        ledger = ledger_plus(ledger, answer_share(metadata))
    return ledger_plus(ledger, answer_share({}))


def compaction_ledger(*, conversation: Conversation) -> dict[str, Any]:
    """Totals of the conversation's compactions, and one line per stored summary.

    The totals are kept on the conversation as its answers are stored
    (``Conversation.ledger``, written by ``chat.services``): reading them does not read
    every answer."""
    # Read afresh: the caller's row may be older than the newest answer.
    stored = Conversation.objects.filter(pk=conversation.pk).values_list("ledger", flat=True)
    ledger = ledger_plus(stored.first(), answer_share({}))
    totals = {k: ledger[k] for k in TOTAL_KEYS}
    used_by = {int(k): v for k, v in ledger["summaries"].items()}
    totals["net_saved_tokens"] = (
        totals["saved_input_tokens"] - totals["cost_input_tokens"] - totals["cost_output_tokens"]
    )
    summaries = []
    for row in ContextSummary.objects.filter(conversation=conversation).order_by("id"):
        meta = row.metadata or {}
        cost = _int(meta.get("cost_input_tokens")) + _int(meta.get("cost_output_tokens"))
        requests, saved = used_by.get(row.pk, (0, 0))
        summaries.append(
            {
                "id": row.pk,
                "made_by": meta.get("made_by", "history"),
                "covered_count": row.covered_count,
                "tokens_before": _int(meta.get("tokens_before")),
                "tokens_after": _int(meta.get("tokens_after")),
                "cost_tokens": cost,
                "requests": requests,
                "saved_input_tokens": saved,
                "net_saved_tokens": saved - cost,
            }
        )
    return {**totals, "summaries": summaries}


def ledger_change(*, conversation_id, before: Any, after: Any, updated_at=None) -> None:
    """Keep the conversation's compaction totals (``Conversation.ledger``) as an answer's
    usage changes from ``before`` to ``after``; ``updated_at``: touch the conversation in the
    same update. The row is locked when the totals change, so two writers add up."""
    old, new = answer_share(before), answer_share(after)
    fields: dict[str, Any] = {} if updated_at is None else {"updated_at": updated_at}
    if old != new:
        found = _LOCKED_LEDGER.rows(conversation=conversation_id)
        if not found:
            return  # the conversation was deleted
        ledger = found[0][0]
        fields["ledger"] = ledger_plus(ledger_plus(ledger, old, -1), new)
    if fields:
        row_updates.CONVERSATION.update(fields, conversation=conversation_id)


def _locked_ledger_query(*, conversation: Any):
    return Conversation.objects.select_for_update().filter(pk=conversation).values_list("ledger")


# Read at the end of every run that used tokens: _locked_ledger_query's rows, as plain SQL
# (chat.row_reads).
_LOCKED_LEDGER = PlainSelect(
    Conversation, columns=("ledger",), where={"conversation": "id"}, locks=True
)
