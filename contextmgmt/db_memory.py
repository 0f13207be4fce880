"""DbMemory: a conversation's persisted history, fitted to a budget at load time.

Read-only: the app that stores the messages owns every write, including the summaries this
class produces — ``new_summary`` says what to persist, and the next load starts from the
newest persisted summary plus the messages it does not cover, so a long conversation is not
re-summarised from scratch on every request. What a summary covers is taken from the
messages the summariser actually saw (``CompactResult.summarized``): a pinned message kept
verbatim in the middle of the history stays uncovered and is loaded again.

Pinned history (a user's "keep verbatim") stays out of the summary while it fits in half
the budget; beyond that the oldest pins yield first (``pins_yielded``). A summary a user
edited is used as it is. See docs/architecture.md.

Reading the messages is the storing app's business too: DbMemory calls a history loader
(``register_history_loader``; chat registers ``chat.history.load_history``) in a thread,
and fits what it returns; the compaction LLM call runs on the event loop. This module
imports nothing of the app above it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async

from contextmgmt.core.compact import CompactResult, CompactUtils, tool_units
from contextmgmt.core.guard import DEFAULT_COMPACT_TIMEOUT, PINNED_CAP_SHARE
from contextmgmt.core.llm import LLM
from contextmgmt.core.masking import MaskOutcome, keep_share, low_water, mask_tool_results
from contextmgmt.core.memory import BaseMemory
from contextmgmt.core.messages import SUMMARY_PREFIX, ChatMessage
from contextmgmt.core.textcut import clip_to_tokens

# A history longer than this is token-counted in a worker thread before it is fitted.
COUNT_OFF_LOOP_MESSAGES = 200

# A stored summary is written to a quarter of the budget of its day; if the budget has
# shrunk since (another model, an admin edit) and the summary takes more than half of the
# new one, it is clipped to a quarter so that the recent messages keep room.
_SUMMARY_MAX_SHARE = 2
_SUMMARY_CLIP_SHARE = 4
# The fact check's lists kept with a summary, for the user to see: the first this many.
MAX_FACTS_SHOWN = 100


@dataclass(frozen=True, slots=True)
class StoredSummary:
    """A persisted summary as DbMemory needs it (built from a ``chat.ContextSummary``)."""

    content: str
    covers_through_id: int
    covered_count: int
    covered_tokens: int = 0
    id: int | None = None
    # Messages up to covers_through that the summary does not cover (loaded after it).
    uncovered_ids: tuple[int, ...] = ()
    # A user wrote this text: it is used as it is.
    edited: bool = False
    # When the message it covers through was written (None: not read with it): a loader
    # bounds its index range by it.
    covers_through_at: Any = None

    @classmethod
    def from_row(
        cls,
        pk: int,
        content: str,
        covers_through_id: int,
        covered_count: int,
        metadata: Any,
        *,
        uncovered_ids: Any = (),
        edited: bool = False,
        covers_through_at: Any = None,
    ) -> StoredSummary:
        return cls(
            content=content,
            covers_through_id=covers_through_id,
            covered_count=covered_count,
            covered_tokens=int((metadata or {}).get("covered_tokens", 0)),
            id=pk,
            uncovered_ids=tuple(int(i) for i in uncovered_ids or () if isinstance(i, int)),
            edited=edited,
            covers_through_at=covers_through_at,
        )


@dataclass(frozen=True, slots=True)
class NewSummary:
    """What the chat layer should persist: ``summary_save(conversation_id=…, **asdict(s))``."""

    summary: str
    covers_through_id: int
    covered_count: int
    tokens: int
    metadata: dict[str, Any] = field(default_factory=dict)
    uncovered_ids: list[int] = field(default_factory=list)


@dataclass(slots=True)
class LoadedHistory:
    """What a loader read: the messages the summary does not cover (in order, the trailing
    user message dropped) and the summary. A message the user pinned is loaded even when
    the summary covers it (``pinned=True``, ``metadata["covered"]=True``)."""

    messages: list[ChatMessage]
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


@dataclass(frozen=True, slots=True)
class HistoryLoad:
    """What one load did: the fitted messages and how they were fitted.

    ``strategy``: "none", "summary" (a stored summary was reused), "mask" (only old tool
    results were masked), "llm", "truncate". ``original_count`` / ``compacted_count`` and
    ``tokens_before`` / ``tokens_after`` are what the ``compact`` event reports;
    ``summarized_count`` is how many messages the summary the model gets stands for (the
    count the summary itself carries, so that whatever shows it agrees; 0 when there is
    none).
    """

    messages: list[ChatMessage]
    strategy: str = "none"
    original_count: int = 0
    compacted_count: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    summarized_count: int = 0
    # The compaction run during this load, if one ran.
    result: CompactResult | None = None
    # What to persist, or None when nothing new was summarised.
    new_summary: NewSummary | None = None
    # The stored summary loaded.
    summary_in_use: StoredSummary | None = None
    # Tool results masked at this load, before any summary (masking.MaskedResult).
    masked: tuple[Any, ...] = ()
    # Pinned history (when it had to be compacted): ids kept verbatim, and ids that
    # yielded to the cap, oldest first.
    pins_kept: tuple[int, ...] = ()
    pins_yielded: tuple[int, ...] = ()

    @property
    def was_compacted(self) -> bool:
        return self.strategy != "none"

    @property
    def summary_edited(self) -> bool:
        """The stored summary in use is a user's edit."""
        return self.summary_in_use is not None and self.summary_in_use.edited


class DbMemory(BaseMemory):
    """Read-only memory over a conversation's persisted messages.

    ``load()`` returns a ``HistoryLoad``; ``get_messages()`` its messages. The flags
    ``was_compacted``, ``original_count`` and ``compacted_count`` read the last load.
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
        instructions: bool = False,
    ) -> None:
        self.conversation_id = conversation_id
        # The requests this history goes with carry standing instructions (never part of
        # the history): a summary is told they are kept elsewhere, not to restate them.
        self.instructions = instructions
        # What the loader already read for this memory (same conversation, vision and
        # summary options), e.g. in the caller's own database thread hop: the next
        # load starts from it instead of reading again; later ones read afresh.
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
        self.last: HistoryLoad | None = None

    @property
    def was_compacted(self) -> bool:
        return self.last is not None and self.last.was_compacted

    @property
    def original_count(self) -> int:
        return self.last.original_count if self.last is not None else 0

    @property
    def compacted_count(self) -> int:
        return self.last.compacted_count if self.last is not None else 0

    async def add_message(self, message: ChatMessage) -> None:
        """No-op: the app that stores the messages persists them."""

    async def clear(self) -> None:
        """No-op: deleting history is the business of the app that stores it."""

    async def get_messages(self) -> list[ChatMessage]:
        return (await self.load()).messages

    async def load(self) -> HistoryLoad:
        """Read the history and fit it to ``max_tokens``: as it is when it fits, else
        pinned history capped, old tool results masked, then summarised or truncated."""
        self.last = None
        loaded = await self._read()
        stored = loaded.summary
        history = loaded.messages
        if len(history) > COUNT_OFF_LOOP_MESSAGES:
            # Counted once in a worker thread (each message keeps its count): thousands of
            # messages counted on the loop would hold every other socket meanwhile.
            await asyncio.to_thread(CompactUtils.estimate_messages_tokens, history)
        base = ([summary_message(stored, self.max_tokens)] if stored else []) + history
        tokens = CompactUtils.estimate_messages_tokens(base)
        # A pinned message the summary covers as well is counted once.
        original_count = (stored.covered_count if stored else 0) + sum(
            1 for m in history if not m.metadata.get("covered") and not is_record(m)
        )
        tokens_before = (stored.covered_tokens if stored else 0) + (
            CompactUtils.estimate_messages_tokens(history) if stored else tokens
        )
        if tokens <= self.max_tokens:
            self.last = HistoryLoad(
                messages=base,
                strategy="summary" if stored else "none",
                original_count=original_count,
                compacted_count=sum(1 for m in base if not is_record(m)),
                tokens_before=tokens_before,
                tokens_after=tokens,
                summarized_count=stored.covered_count if stored else 0,
                summary_in_use=stored,
            )
        else:
            self.last = await self._compact(
                stored,
                history,
                tokens,
                original_count=original_count,
                tokens_before=tokens_before,
            )
        return self.last

    async def _read(self) -> LoadedHistory:
        loaded, self._loaded = self._loaded, None
        if loaded is not None:
            return loaded
        loader = self.loader or registered_history_loader()
        return await sync_to_async(loader)(
            self.conversation_id,
            vision=self.vision,
            summary=self.summary,
            use_summaries=self.use_summaries,
        )

    async def _compact(
        self,
        stored: StoredSummary | None,
        history: list[ChatMessage],
        tokens: int,
        *,
        original_count: int,
        tokens_before: int,
    ) -> HistoryLoad:
        """The history does not fit: cap the pins, mask, then summarise or truncate."""
        history, pins_yielded = cap_pinned_history(history, self.max_tokens)
        pins_kept = [m.metadata["id"] for m in history if m.pinned and m.metadata.get("id")]
        base = ([summary_message(stored, self.max_tokens)] if stored else []) + history
        # The cheap tier first: old tool results (earlier runs' records) become stubs.
        masking = mask_tool_results(
            base,
            target_tokens=low_water(self.max_tokens),
            keep_tokens=keep_share(self.max_tokens),
        )
        if masking.masked:
            base = masking.messages
            history = base[1:] if stored else base
        result = await self._fit(base, tokens, masking)
        new_summary = None
        summarized_count = 0
        if result.strategy == "llm":
            new_summary = _new_summary(stored, history, result)
            summarized_count = (
                new_summary.covered_count if new_summary is not None else result.summarized_count
            )
        elif stored is not None and any(m.is_summary for m in result.messages):
            summarized_count = stored.covered_count  # truncated around the stored one
        return HistoryLoad(
            messages=result.messages,
            # A yielding pin the stored summary covers is left out: what is left may then
            # fit beside that summary as it is.
            strategy="summary" if result.strategy == "none" and stored else result.strategy,
            original_count=original_count,
            compacted_count=sum(1 for m in result.messages if not is_record(m)),
            tokens_before=tokens_before,
            tokens_after=result.tokens_after,
            summarized_count=summarized_count,
            result=result,
            new_summary=new_summary,
            summary_in_use=stored,
            masked=tuple(masking.masked),
            pins_kept=tuple(pins_kept),
            pins_yielded=tuple(pins_yielded),
        )

    async def _fit(
        self, base: list[ChatMessage], tokens: int, masking: MaskOutcome
    ) -> CompactResult:
        """Masking alone when it was enough, else an LLM summary, else truncation."""
        if masking.masked and masking.tokens_after <= self.max_tokens:
            return CompactResult(
                messages=base,
                strategy="mask",
                original_count=len(base),
                compacted_count=len(base),
                tokens_before=tokens,
                tokens_after=masking.tokens_after,
                masked=masking.masked,
            )
        if self.compact_llm is not None:
            result = await CompactUtils.llm_compact(
                base,
                self.compact_llm,
                self.max_tokens,
                keep_recent=self.keep_recent,
                hint=self.hint,
                timeout=self.compact_timeout,
                instructions=self.instructions,
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
        return dataclasses.replace(result, masked=masking.masked)


def is_record(message: ChatMessage) -> bool:
    """An earlier run's tool call or result in the history (counted with its answer, not as
    a message of its own)."""
    return bool(message.metadata.get("tool_record"))


def cap_pinned_history(
    history: list[ChatMessage], max_tokens: int
) -> tuple[list[ChatMessage], list[int]]:
    """Pinned history within half the budget: the oldest pinned messages yield first.

    A yielding message the stored summary already covers is left out (the summary holds
    it); any other joins the messages that may be summarised, unpinned. A tool call and its
    results yield together. Returns (new list of the caller's messages and unpinned copies,
    ids of the messages that yielded).
    """
    cap = int(max_tokens * PINNED_CAP_SHARE)
    units = tool_units(history)
    pinned = sum(_units_tokens(u) for u in units if any(m.pinned for m in u))
    if pinned <= cap:
        return list(history), []
    out: list[ChatMessage] = []
    yielded: list[int] = []
    for unit in units:
        if pinned <= cap or not any(m.pinned for m in unit):
            out.extend(unit)
            continue
        pinned -= _units_tokens(unit)
        yielded.extend(m.metadata["id"] for m in unit if m.pinned and "id" in m.metadata)
        for msg in unit:
            if msg.metadata.get("covered"):
                continue
            out.append(
                dataclasses.replace(msg, pinned=False, metadata=dict(msg.metadata))
                if msg.pinned
                else msg
            )
    return out, yielded


def _units_tokens(unit: list[ChatMessage]) -> int:
    return CompactUtils.estimate_messages_tokens(unit)


def _new_summary(
    stored: StoredSummary | None, history: list[ChatMessage], result: CompactResult
) -> NewSummary | None:
    """What the summary in ``result`` covers, from the messages it actually summarised.

    ``result.summarized`` holds the summarised messages themselves (the stored summary
    folded in among them). The new summary covers what the stored one covered plus those
    history messages; it covers through the newest of them that lies after the stored
    summary, and every loaded message up to there it did not summarise (a pinned one kept
    verbatim, say) is recorded as uncovered, so that the next load brings it back.
    """
    summaries = [m for m in result.messages if m.is_summary]
    if not summaries or not result.summarized:
        return None
    summarised = {id(m) for m in result.summarized}
    earlier = set(stored.uncovered_ids) if stored else set()

    def before_stored(msg: ChatMessage) -> bool:
        # Loaded from before the stored summary's end: uncovered by it, or pinned and
        # already covered.
        return bool(msg.metadata.get("covered")) or msg.metadata.get("id") in earlier

    newly = [m for m in history if id(m) in summarised and not m.metadata.get("covered")]
    if not newly or any("id" not in m.metadata for m in newly):
        return None
    last_after = max(
        (i for i, m in enumerate(history) if id(m) in summarised and not before_stored(m)),
        default=-1,
    )
    if last_after >= 0:
        through = history[last_after].metadata["id"]
    elif stored is not None:
        through = stored.covers_through_id
    else:
        return None
    uncovered = [
        m.metadata["id"]
        for i, m in enumerate(history)
        if id(m) not in summarised
        and not m.metadata.get("covered")
        and "id" in m.metadata
        and (before_stored(m) or i <= last_after)
    ]
    text = summaries[-1].text()
    already = stored.covered_count if stored else 0
    covered_tokens = (stored.covered_tokens if stored else 0) + (
        CompactUtils.estimate_messages_tokens(newly)
    )
    return NewSummary(
        summary=text,
        covers_through_id=through,
        covered_count=already + sum(1 for m in newly if not is_record(m)),
        tokens=CompactUtils.estimate_tokens(text),
        metadata={
            "covered_tokens": covered_tokens,
            "facts_appended": result.appended_facts[:MAX_FACTS_SHOWN],
            "facts_missing": result.missing_facts[:MAX_FACTS_SHOWN],
        },
        uncovered_ids=uncovered,
    )
