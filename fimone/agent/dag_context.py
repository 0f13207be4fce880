"""The texts the DAG engine feeds its LLMs, and the limits that bound them.

Limits (each an exact boundary: a text of exactly the limit is untouched, one more
character or token and it is cut or summarised):
- the enriched query (history text + current request) over ``PLANNER_INPUT_TOKENS`` is
  summarised with the ``planner_input`` hint;
- each dependency result injected into a step is cut at ``DEPENDENCY_CHARS``, and the
  whole dependency block is compacted with ``step_dependency`` when it takes more than half
  the step's (fast) budget;
- the analyser sees each result cut at ``ANALYSER_RESULT_CHARS``;
- the re-planner sees each result cut at ``REPLAN_RESULT_CHARS``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from contextmgmt.core.compact import CompactResult, CompactUtils
from contextmgmt.core.guard import apply_pinned_cap
from contextmgmt.core.llm import LLM, Usage
from contextmgmt.core.messages import SUMMARY_PREFIX, ChatMessage
from contextmgmt.core.tokens import estimate_messages_tokens, estimate_tokens

from .plan import Step, Verdict

if TYPE_CHECKING:
    from .tools import ToolRegistry

PLANNER_INPUT_TOKENS = 16_000
DEPENDENCY_CHARS = 50_000
ANALYSER_RESULT_CHARS = 10_000
REPLAN_RESULT_CHARS = 500
# The dependency block may take at most this share of a step's budget: the task, the tools
# and the step's own tool results need the rest.
DEPENDENCY_BUDGET_SHARE = 0.5
# However small the budget, the analyser sees at least this much of each result.
MIN_RESULT_TOKENS = 50
# Share of the main budget the planner's and the analyser's input may take (the reply,
# the re-plan feedback and estimate error need the rest).
MAIN_INPUT_SHARE = 0.75
HISTORY_HEADER = "Previous conversation:"
COMPACT_TIMEOUT = 60.0

_LABELS = {"user": "User", "assistant": "Assistant", "tool": "Tool result", "system": "System"}


@dataclass
class StepOutcome:
    status: str  # "done" | "error"
    result: str = ""
    error: str | None = None

    def text(self) -> str:
        return self.result if self.status == "done" else f"(step failed: {self.error})"


@dataclass
class StepContext:
    """What ``_build_step_context`` gives a step: the dependency text and any compaction."""

    text: str | None
    compaction: CompactResult | None = None


def cut(text: str, limit: int) -> str:
    """``text`` if at most ``limit`` characters, else its first ``limit`` and a marker."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[Truncated: {len(text) - limit:,} more characters]"


CLIP_MARK = " …[cut to fit]"


def clip_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of ``text`` that, with a marker, fits ``max_tokens`` (binary search)."""
    if estimate_tokens(text) <= max_tokens:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[:mid] + CLIP_MARK) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo] + CLIP_MARK


def _message_line(msg: ChatMessage) -> str:
    if msg.is_summary:
        body = msg.text()[len(SUMMARY_PREFIX) :].strip()
        return f"Summary of the earlier conversation: {body}"
    text = "\n".join(t for t in (msg.text(), msg.image_text()) if t)
    return f"{_LABELS.get(msg.role, msg.role)}: {text}"


def format_history(history: list[ChatMessage]) -> str:
    """The loaded history as one text block prefixed ``Previous conversation:``."""
    lines = [_message_line(m) for m in history if m.text() or isinstance(m.content, list)]
    if not lines:
        return ""
    return HISTORY_HEADER + "\n\n" + "\n\n".join(lines)


def enriched_query(history_text: str, query_text: str) -> str:
    """History text + the current request, the planner's input."""
    if not history_text:
        return query_text
    return f"{history_text}\n\nCurrent request:\n{query_text}"


async def compact_planner_input(
    history: list[ChatMessage],
    query: ChatMessage,
    compact_llm: LLM | None,
    *,
    max_tokens: int = PLANNER_INPUT_TOKENS,
    compact_timeout: float | None = COMPACT_TIMEOUT,
    instructions: bool = False,
) -> tuple[str, CompactResult]:
    """Summarise the history with ``planner_input`` so the enriched query fits.

    The whole history is summarised (``keep_recent=0``): the planner needs the user's
    intent, decisions and constraints, not verbatim turns, and a huge recent turn kept
    verbatim would otherwise be dropped whole by the follow-up truncation. The current
    request stays verbatim (pinned). Without a compaction LLM, or when it fails, the oldest
    history is dropped instead (smart_truncate). ``instructions``: the planner's calls
    carry standing instructions, which the summariser is told are kept elsewhere.
    """
    request = ChatMessage(role="user", content=query.text(), pinned=True)
    messages = [*history, request]
    # The user's pins stay verbatim while they take at most half the planner's input;
    # beyond that the oldest are summarised like any other turn.
    messages, _ = apply_pinned_cap(messages, max_tokens)
    # The limit applies to the formatted text, whose labels weigh slightly differently from
    # the per-message overhead: aim below the messages' own estimate so that a text over
    # the limit is always summarised, never waved through as "within budget".
    target = max(1, min(max_tokens, estimate_messages_tokens(messages) - 1))
    if compact_llm is not None:
        result = await CompactUtils.llm_compact(
            messages,
            compact_llm,
            target,
            keep_recent=0,
            hint="planner_input",
            timeout=compact_timeout,
            instructions=instructions,
        )
    else:
        kept = CompactUtils.smart_truncate(messages, target)
        result = CompactResult(
            kept,
            "truncate",
            len(messages),
            len(kept),
            estimate_messages_tokens(messages),
            estimate_messages_tokens(kept),
        )
    rest = [m for m in result.messages if m is not request]
    return enriched_query(format_history(rest), query.text()), result


async def _build_step_context(
    step: Step,
    outcomes: dict[str, StepOutcome],
    steps_by_id: dict[str, Step],
    *,
    budget: int,
    compact_llm: LLM | None,
    compact_timeout: float | None = COMPACT_TIMEOUT,
    instructions: bool = False,
) -> StepContext:
    """The results of ``step``'s dependencies, as the step will read them.

    Each result is cut at ``DEPENDENCY_CHARS``. When the block takes more than half of the
    step's budget it is summarised with the ``step_dependency`` hint; without a compaction
    LLM, or when it fails, every result is cut to an equal share of that allowance instead.
    """
    if not step.depends_on:
        return StepContext(None)
    parts = [
        ChatMessage(
            role="user",
            content=(
                f"Result of step {dep} ({steps_by_id[dep].task}):\n"
                f"{cut(outcomes[dep].text(), DEPENDENCY_CHARS)}"
            ),
        )
        for dep in step.depends_on
    ]
    header = "Results of the steps your task depends on:"
    allowance = max(1, int(budget * DEPENDENCY_BUDGET_SHARE))
    if estimate_messages_tokens(parts) <= allowance:
        return StepContext("\n\n".join([header, *(p.text() for p in parts)]))
    result: CompactResult | None = None
    if compact_llm is not None:
        result = await CompactUtils.llm_compact(
            parts,
            compact_llm,
            allowance,
            keep_recent=0,
            hint="step_dependency",
            timeout=compact_timeout,
            instructions=instructions,
        )
        if result.strategy == "llm":
            texts = [_summary_body(m) for m in result.messages]
            return StepContext("\n\n".join([f"{header} (summarised)", *texts]), result)
    share = max(1, allowance // len(parts))
    clipped = [clip_tokens(p.text(), share) for p in parts]
    fallback = CompactResult(
        [ChatMessage(role="user", content=t) for t in clipped],
        "truncate",
        len(parts),
        len(parts),
        estimate_messages_tokens(parts),
        sum(estimate_tokens(t) for t in clipped),
        usage=result.usage if result is not None else Usage(),
        error=result.error if result is not None else None,
    )
    return StepContext("\n\n".join([header, *clipped]), fallback)


def _summary_body(msg: ChatMessage) -> str:
    text = msg.text()
    return text[len(SUMMARY_PREFIX) :].strip() if msg.is_summary else text


def analyser_input(
    request: str,
    steps: list[Step],
    outcomes: dict[str, StepOutcome],
    *,
    max_tokens: int | None = None,
) -> str:
    """The analyser's user message: the request and each result cut at 10,000 chars.

    With ``max_tokens`` (a small main budget: 10,000 characters × 8 steps is ~20K tokens)
    each result is further clipped to an equal share of what the request leaves, so the
    analyser call is not refused as too long.
    """
    head = f"User request:\n{request}\n\nStep results:\n\n"
    results = [cut(outcomes[s.id].text(), ANALYSER_RESULT_CHARS) for s in steps]

    def render(texts: list[str]) -> str:
        blocks = [f"### Step {s.id}: {s.task}\n{t}" for s, t in zip(steps, texts, strict=True)]
        return head + "\n\n".join(blocks)

    text = render(results)
    if max_tokens is None or estimate_tokens(text) <= max_tokens or not steps:
        return text
    labels = sum(estimate_tokens(f"### Step {s.id}: {s.task}\n\n\n") for s in steps)
    # One token of slack per block: each block's estimate rounds down on its own.
    share = (max_tokens - estimate_tokens(head) - labels) // len(steps) - 1
    return render([clip_tokens(r, max(share, MIN_RESULT_TOKENS)) for r in results])


def replan_feedback(
    steps: list[Step], outcomes: dict[str, StepOutcome], verdict: Verdict, round_no: int
) -> str:
    """What the re-planner learns of the last attempt: results cut at 500 chars."""
    lines = [
        f"- {s.id} ({s.task}): {cut(outcomes[s.id].text(), REPLAN_RESULT_CHARS)}" for s in steps
    ]
    return (
        f"A previous plan (attempt {round_no}) did not achieve this request. "
        f"The checker said: {verdict.reason or 'no reason given'}\n"
        "Its steps and results:\n" + "\n".join(lines) + "\n"
        "Make a new plan for what is still missing. Results that are already good will "
        "reach the final answer anyway: do not repeat that work, and copy any figure a new "
        "step needs into its task."
    )


def compact_payload(scope: str, result: CompactResult, **extra: Any) -> dict[str, Any]:
    return {
        "scope": scope,
        "strategy": result.strategy,
        "original_count": result.original_count,
        "compacted_count": result.compacted_count,
        "tokens_before": result.tokens_before,
        "tokens_after": result.tokens_after,
        # What the compaction itself cost (its summariser calls): the ledger's debit.
        "cost_input_tokens": result.usage.input_tokens,
        "cost_output_tokens": result.usage.output_tokens,
        **extra,
    }


def planner_input_limit(main_budget: int, limit: int = PLANNER_INPUT_TOKENS) -> int:
    """The enriched query's limit: 16K tokens — or less when the main model's budget is
    small, since the planner has no guard in front of it."""
    return max(1, min(limit, int(main_budget * MAIN_INPUT_SHARE)))


# The history reaches the planner as text ("User: …" lines), whose estimate can differ a
# little from the messages' own (labels instead of per-message overhead, an image as its
# description instead of its pixels): the history budget keeps this share of the limit in
# hand. A history text that still does not fit is summarised (``_enriched_query``).
HISTORY_TEXT_MARGIN = 0.03


def with_images(text: str, images: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    return [{"type": "text", "text": text}, *images] if images else text


def history_budget(
    main_budget: int,
    *,
    query: ChatMessage,
    tools: ToolRegistry | None = None,
    follow_ups: Sequence[ChatMessage] = (),
) -> int:
    """Tokens the loaded history may take so that the planner's input (the enriched query:
    history text, the current request and the follow-ups the run starts with) is not
    summarised again. 0 when nothing is left. Tools do not go to the planner."""
    request = enriched_query(HISTORY_HEADER, query.text())
    if follow_ups:
        extra = "\n".join(f"- {m.text()}" for m in follow_ups)
        request = f"{request}\n\nFollow-ups the user sent meanwhile:\n{extra}"
    limit = planner_input_limit(main_budget)
    # The query's images go to the planner with its text.
    sent = ChatMessage(role="user", content=with_images(request, query.image_parts()))
    room = limit - int(limit * HISTORY_TEXT_MARGIN) - estimate_messages_tokens([sent])
    return max(0, room)
