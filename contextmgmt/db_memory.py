"""DbMemory: a conversation's persisted history, fitted to a budget at load time.

Read-only: the app that stores the messages owns every write, including the summaries this
class produces — ``new_summary`` says what to persist, and the next load starts from the
newest persisted summary plus the messages after it, so a long conversation is not
re-summarised from scratch on every request.

Reading the messages is the storing app's business too: DbMemory calls a history loader
(``register_history_loader``; chat registers ``chat.history.load_history``) in a thread,
and fits what it returns; the compaction LLM call runs on the event loop. This module
imports nothing of the app above it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async

from contextmgmt.core.compact import CompactResult, CompactUtils, clip_to_tokens
from contextmgmt.core.guard import DEFAULT_COMPACT_TIMEOUT
from contextmgmt.core.llm import LLM
from contextmgmt.core.memory import BaseMemory
from contextmgmt.core.messages import SUMMARY_PREFIX, ChatMessage

# A stored summary is written to a quarter of the budget of its day; if the budget has
# shrunk since (another model, an admin edit) and the summary takes more than half of the
# new one, it is clipped to a quarter so that the recent messages keep room.
_SUMMARY_MAX_SHARE = 2
_SUMMARY_CLIP_SHARE = 4


@dataclass(frozen=True, slots=True)
class StoredSummary:
    """A persisted summary as DbMemory needs it (built from a ``chat.ContextSummary``)."""

    content: str
    covers_through_id: int
    covered_count: int
    covered_tokens: int = 0
    id: int | None = None

    @classmethod
    def from_model(cls, row: Any) -> StoredSummary:
        return cls.from_row(
            row.pk, row.content, row.covers_through_id, row.covered_count, row.metadata
        )

    @classmethod
    def from_row(
        cls, pk: int, content: str, covers_through_id: int, covered_count: int, metadata: Any
    ) -> StoredSummary:
        return cls(
            content=content,
            covers_through_id=covers_through_id,
            covered_count=covered_count,
            covered_tokens=int((metadata or {}).get("covered_tokens", 0)),
            id=pk,
        )


@dataclass(frozen=True, slots=True)
class NewSummary:
    """What the chat layer should persist: ``summary_save(conversation_id=…, **asdict(s))``."""

    summary: str
    covers_through_id: int
    covered_count: int
    tokens: int
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class LoadedHistory:
    messages: list[ChatMessage]  # after the stored summary, trailing user message dropped
    summary: StoredSummary | None


def summary_message(summary: StoredSummary, max_tokens: int | None = None) -> ChatMessage:
    text = summary.content
    if not text.startswith(SUMMARY_PREFIX):
        text = f"{SUMMARY_PREFIX}\n{text}"
    if max_tokens is not None and CompactUtils.estimate_tokens(text) > max_tokens // (
        _SUMMARY_MAX_SHARE
    ):
        text = clip_to_tokens(text, max(1, max_tokens // _SUMMARY_CLIP_SHARE))
    return ChatMessage(
        role="system",
        content=text,
        metadata={
            "summary_id": summary.id,
            "covers_through": summary.covers_through_id,
            # What llm_compact folds into the next summary's count.
            "summarized_count": summary.covered_count,
            # And what the covered messages took, for a summary that folds this one.
            "covered_tokens": summary.covered_tokens,
        },
    )


# --- where the history comes from ----------------------------------------------------------

# (conversation_id, *, vision, summary, use_summaries) -> LoadedHistory, sync. The app that
# stores the messages registers it (chat: ``ChatConfig.ready``); this layer never imports it.
HistoryLoader = Callable[..., LoadedHistory]
_registered_loader: HistoryLoader | None = None


def register_history_loader(loader: HistoryLoader) -> None:
    """The loader every DbMemory uses unless it is given its own."""
    global _registered_loader
    _registered_loader = loader


def registered_history_loader() -> HistoryLoader:
    if _registered_loader is None:
        raise RuntimeError(
            "No history loader: register one with register_history_loader() (the chat app "
            "does in its AppConfig.ready) or pass DbMemory(loader=...)."
        )
    return _registered_loader


# --- the memory -----------------------------------------------------------------------------


class DbMemory(BaseMemory):
    """Read-only memory over a conversation's persisted messages.

    After ``get_messages()``: ``was_compacted``, ``original_count``, ``compacted_count``
    (what the ``compact`` event reports); ``strategy`` ("none", "summary" — a stored
    summary was reused, "llm", "truncate"); ``tokens_before`` / ``tokens_after``;
    ``result`` (the CompactResult of a compaction run during this load, else None);
    ``new_summary`` (a NewSummary to persist, or None when nothing new was summarised).
    """

    def __init__(
        self,
        conversation_id: Any,
        max_tokens: int,
        compact_llm: LLM | None = None,
        vision: bool = True,
        summary: StoredSummary | None = None,
        *,
        use_summaries: bool = True,
        keep_recent: int = 4,
        hint: str = "general",
        compact_timeout: float | None = DEFAULT_COMPACT_TIMEOUT,
        loaded: LoadedHistory | None = None,
        loader: HistoryLoader | None = None,
    ) -> None:
        self.conversation_id = conversation_id
        # What the loader already read for this memory (same conversation, vision and
        # summary options), e.g. in the caller's own database thread hop: the next
        # get_messages() starts from it instead of reading again; later ones read afresh.
        self._loaded = loaded
        self.loader = loader  # None: the registered one, looked up at load time
        # Bounds the summary call like the guard's: a hung compaction LLM falls back
        # to truncation instead of holding the run at load time.
        self.compact_timeout = compact_timeout
        self.max_tokens = max_tokens
        self.compact_llm = compact_llm
        self.vision = vision
        self.summary = summary
        self.use_summaries = use_summaries
        self.keep_recent = keep_recent
        self.hint = hint
        self._reset_flags()

    def _reset_flags(self) -> None:
        self.was_compacted = False
        self.original_count = 0
        self.compacted_count = 0
        self.strategy = "none"
        self.tokens_before = 0
        self.tokens_after = 0
        self.result: CompactResult | None = None
        self.new_summary: NewSummary | None = None

    async def add_message(self, message: ChatMessage) -> None:
        """No-op: the app that stores the messages persists them."""

    async def clear(self) -> None:
        """No-op: deleting history is the business of the app that stores it."""

    async def get_messages(self) -> list[ChatMessage]:
        self._reset_flags()
        loaded, self._loaded = self._loaded, None
        if loaded is None:
            loader = self.loader or registered_history_loader()
            loaded = await sync_to_async(loader)(
                self.conversation_id,
                vision=self.vision,
                summary=self.summary,
                use_summaries=self.use_summaries,
            )
        stored = loaded.summary
        history = loaded.messages
        base = ([summary_message(stored, self.max_tokens)] if stored else []) + history
        tokens = CompactUtils.estimate_messages_tokens(base)
        self.original_count = (stored.covered_count if stored else 0) + len(history)
        self.tokens_before = (stored.covered_tokens if stored else 0) + (
            CompactUtils.estimate_messages_tokens(history) if stored else tokens
        )
        if tokens <= self.max_tokens:
            self.was_compacted = stored is not None
            self.strategy = "summary" if stored else "none"
            self.compacted_count = len(base)
            self.tokens_after = tokens
            return base

        if self.compact_llm is not None:
            result = await CompactUtils.llm_compact(
                base,
                self.compact_llm,
                self.max_tokens,
                keep_recent=self.keep_recent,
                hint=self.hint,
                timeout=self.compact_timeout,
            )
        else:
            kept = CompactUtils.smart_truncate(base, self.max_tokens)
            result = CompactResult(
                messages=kept,
                strategy="truncate",
                original_count=len(base),
                compacted_count=len(kept),
                tokens_before=tokens,
                tokens_after=CompactUtils.estimate_messages_tokens(kept),
            )
        self.result = result
        self.strategy = result.strategy
        self.was_compacted = result.strategy != "none" or stored is not None
        self.compacted_count = len(result.messages)
        self.tokens_after = result.tokens_after
        if result.strategy == "llm":
            self.new_summary = _new_summary(stored, history, result)
        return result.messages


def _new_summary(
    stored: StoredSummary | None, history: list[ChatMessage], result: CompactResult
) -> NewSummary | None:
    """The summary in ``result`` and the history prefix it stands for, or None.

    llm_compact summarises the oldest compactable messages and keeps a suffix verbatim;
    ``summarized_count`` counts the summarised messages, folded summaries included (ours
    carries its ``covered_count`` as ``summarized_count``), so the newly covered messages
    are the first ``summarized_count - covered_count`` of the history.
    """
    summaries = [m for m in result.messages if m.is_summary]
    if not summaries:
        return None
    already = stored.covered_count if stored else 0
    newly = result.summarized_count - already
    if result.summarized_count <= 0:
        # A core without the count: everything before the first message kept verbatim.
        kept_ids = {m.metadata.get("id") for m in result.messages if not m.is_summary}
        newly = next(
            (i for i, m in enumerate(history) if m.metadata.get("id") in kept_ids), len(history)
        )
    covered = history[: max(0, newly)]
    if not covered:
        return None
    text = summaries[-1].text()
    covered_tokens = (stored.covered_tokens if stored else 0) + (
        CompactUtils.estimate_messages_tokens(covered)
    )
    return NewSummary(
        summary=text,
        covers_through_id=covered[-1].metadata["id"],
        covered_count=already + len(covered),
        tokens=CompactUtils.estimate_tokens(text),
        metadata={"covered_tokens": covered_tokens},
    )
