"""DAG mode: plan, run steps as parallel sub-agents, analyse, re-plan, answer.

1. The loaded history becomes a ``Previous conversation:`` text; with the current request it
   forms the enriched query, summarised with ``planner_input`` when over 16K tokens.
2. The planner (main LLM) gets exactly two messages — system + enriched query, no guard —
   and returns a JSON plan, validated; an invalid plan is re-asked once with the error, a
   failed call (any LLMError but an auth error) asked once more; after two failures the
   plan is a single step doing the whole request.
3. Steps run as memory-less ReAct sub-agents on the fast LLM, each with its own
   ContextGuard on the fast budget, as soon as their dependencies are done,
   at most ``max_parallel`` at a time. A failed step fails the steps depending on it; the
   others go on. A sub-agent's text is not the answer: it streams as the step's progress
   (``dag.step.delta {id, round, text}``, shown live in the plan); its tool calls and
   thoughts are ``step`` events tagged with ``step_id``.
4. The analyser (main LLM) sees each result cut at 10K characters and returns a JSON
   verdict; not achieved with confidence below the threshold → re-plan with results
   cut at 500 characters, at most ``max_replans`` times. A checker that fails (an
   LLMError but an auth error, or an unreadable reply) is no evidence either way: the
   verdict is unknown, no re-plan, and the answer is still written from the step results.
5. The final answer is streamed from the main LLM (``stream_chat``) with every round's
   results, through a main-budget guard.

A provider ``ContextOverflow`` (our estimate said it fits, the provider disagreed) at the
planner or the analyser summarises the history part of the request to half its size
(``planner_input``; the analyser's step results are also clipped to half) and asks once more,
as the ReAct loop does; the final answer's loop compacts its step results
(``step_dependency``) and retries. An auth error fails fast: every later call would fail too.
Every LLM call honours ``ctx.llm_timeout`` (fimone.agent.calls), compaction calls included;
once a main-model call has timed out, the run makes no optional call to it (no re-asked
plan, no analyser): a hung provider costs the user one wait, not one per phase.

Follow-ups injected during a run are taken at the start of each round and before the
final answer; they join the request the planner, analyser and final answer see.
Cancelling the run cancels every running step (a TaskGroup: no orphan task).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from contextmgmt.core.guard import ContextGuard
from contextmgmt.core.instructions import with_instructions
from contextmgmt.core.llm import (
    ContextOverflow,
    LLMAuthError,
    LLMError,
    LLMResult,
    LLMTimeout,
    Usage,
)
from contextmgmt.core.messages import DOCUMENT_NOTES, IMAGE_NOTES, ChatMessage
from contextmgmt.core.tokens import estimate_tokens

from .calls import chat_once, compact_limit
from .context import AgentContext, AgentOutcome, earlier_turns, summary_facts
from .dag_context import (
    DEPENDENCY_CHARS,
    MAIN_INPUT_SHARE,
    PLANNER_INPUT_TOKENS,
    StepOutcome,
    _build_step_context,
    analyser_input,
    compact_payload,
    compact_planner_input,
    cut,
    enriched_query,
    format_history,
    planner_input_limit,
    replan_feedback,
    with_images,
)
from .loop import LATE_FOLLOW_UP_WAIT, LoopConfig, ReactLoop, preview
from .plan import MAX_STEPS, PlanError, Step, Verdict, fallback_plan, parse_plan, parse_verdict
from .prompts import ANALYSER_SYSTEM, PLANNER_SYSTEM, STEP_SYSTEM, SYNTHESIS_SYSTEM
from .react import after_instructions
from .tools import ToolRegistry
from .tools.finder import ToolOffer
from .wording import say


@dataclass
class DagConfig:
    replan_threshold: float = 0.8
    max_replans: int = 2
    max_parallel: int = 4
    max_steps: int = MAX_STEPS
    planner_input_tokens: int = PLANNER_INPUT_TOKENS


async def run_dag(ctx: AgentContext, config: DagConfig | None = None) -> AgentOutcome:
    return await DagRun(ctx, config or DagConfig()).run()


@dataclass
class Round:
    number: int  # 0 for the first plan, then 1, 2 … for re-plans
    steps: list[Step]
    outcomes: dict[str, StepOutcome]


class DagRun:
    def __init__(self, ctx: AgentContext, config: DagConfig) -> None:
        self.ctx = ctx
        self.config = config
        self.usage = Usage()
        self.compaction_usage = Usage()
        self.compactions: list[dict[str, Any]] = []
        self.followups: list[ChatMessage] = []
        # History + current request; shrunk again after a provider overflow.
        self.enriched = ""
        self.compact_timeout = compact_limit(ctx.llm_timeout)
        self.main_timed_out = False  # a main-model call timed out in this run
        # The standing instructions go with every call (after its system prompt) and are
        # counted first: each call's other parts share what they leave of its budget.
        self.main_room = after_instructions(ctx.main_budget, ctx.instructions)
        self.fast_room = after_instructions(ctx.fast_budget, ctx.instructions)

    def _system(self, prompt: str) -> list[ChatMessage]:
        """A call's leading messages: its system prompt, then the instructions."""
        return with_instructions(ChatMessage(role="system", content=prompt), self.ctx.instructions)

    async def run(self) -> AgentOutcome:
        self.enriched = await self._enriched_query()
        rounds: list[Round] = []
        feedback: str | None = None
        for number in range(self.config.max_replans + 1):
            self.followups.extend(self.ctx.injections.drain())
            steps = await self._plan(feedback, number)
            outcomes = await self._execute(steps, number)
            rounds.append(Round(number, steps, outcomes))
            verdict = await self._analyse(steps, outcomes)
            # An unreadable verdict is no evidence of failure: answer rather than spend rounds.
            if (
                verdict is None
                or not self._needs_replan(verdict)
                or number == self.config.max_replans
            ):
                break
            await self.ctx.sink("dag.replan", {"round": number + 1})
            feedback = replan_feedback(steps, outcomes, verdict, number + 1)
        self.followups.extend(await self.ctx.injections.drain_settled(LATE_FOLLOW_UP_WAIT))
        answer = await self._synthesise(self._request(), rounds)
        return AgentOutcome(
            answer=answer,
            usage=self.usage,
            compaction_usage=self.compaction_usage,
            iterations=len(rounds),
            compactions=self.compactions,
            status="done",
        )

    # --- phase 1-2: the planner's input ------------------------------------------------

    async def _enriched_query(self) -> str:
        ctx = self.ctx
        text = enriched_query(format_history(ctx.history), ctx.query.text())
        limit = self._planner_input_limit()
        if estimate_tokens(text) <= limit:
            return text
        return await self._compact_history(text, limit)

    async def _compact_history(self, text: str, limit: int, *, overflow: bool = False) -> str:
        """The enriched query with its history summarised (``planner_input``) to ``limit``.

        ``overflow``: the emergency half-size summary after a provider refusal, which
        serves this run only and is not offered for storing."""
        ctx = self.ctx
        compacted, result = await compact_planner_input(
            earlier_turns(ctx.history),
            ctx.query,
            ctx.compact_llm,
            max_tokens=limit,
            compact_timeout=self.compact_timeout,
            instructions=bool(ctx.instructions),
        )
        self.compaction_usage.add(result.usage)
        payload = compact_payload("planner", result)
        # Measured on the planner's actual input text, the figure the 16K limit applies to.
        payload["tokens_before"] = estimate_tokens(text)
        payload["tokens_after"] = estimate_tokens(compacted)
        if result.strategy == "llm":
            payload.update(summary_facts(result))
        if overflow:
            payload["overflow_retry"] = True
        elif ctx.on_compaction is not None:
            # Told first: a summary it stores is named in the event (the UI opens it).
            stored = await ctx.on_compaction("planner", result)
            if stored is not None:
                payload["summary_id"] = stored
        await self._compacted(payload)
        return compacted

    def _planner_input_limit(self) -> int:
        return planner_input_limit(self.main_room, self.config.planner_input_tokens)

    async def _shrink_request(self) -> None:
        """After a provider overflow: the history part summarised to half the request's
        size. A request without history has nothing to summarise (the query stays whole)."""
        if not self.ctx.history:
            return
        self.enriched = await self._compact_history(
            self.enriched, max(1, estimate_tokens(self.enriched) // 2), overflow=True
        )

    def _request(self) -> str:
        if not self.followups:
            return self.enriched
        extra = "\n".join(f"- {m.text()}" for m in self.followups)
        return f"{self.enriched}\n\nFollow-ups the user sent meanwhile:\n{extra}"

    # --- phase 3: plan -------------------------------------------------------------------

    async def _plan(self, feedback: str | None, number: int) -> list[Step]:
        system = self._system(PLANNER_SYSTEM.replace("{max_steps}", str(self.config.max_steps)))
        error: str | None = None  # why the previous reply was not a valid plan
        steps: list[Step] | None = None
        for attempt in range(2):
            content = self._request() if feedback is None else f"{self._request()}\n\n{feedback}"
            if error is not None:
                content = (
                    f"{content}\n\nYour previous reply was not a valid plan: {error}. "
                    "Reply with the corrected JSON plan only."
                )
            try:
                # The planner sees the user's images: a plan may depend on what they show.
                request = ChatMessage(
                    role="user", content=with_images(content, self.ctx.query.image_parts())
                )
                result = await self._chat([*system, request])
            except LLMAuthError:
                raise
            except ContextOverflow:
                error = None
                if attempt == 0:
                    await self._shrink_request()
                continue
            except LLMTimeout:
                break  # the user has waited a whole time limit already: fall back now
            except LLMError:
                # A failed call is no bad plan: ask again as before, then fall back.
                error = None
                continue
            try:
                steps = parse_plan(result.message.text(), max_steps=self.config.max_steps)
                break
            except PlanError as exc:
                error = str(exc)
        fallback = steps is None
        if steps is None:
            steps = fallback_plan(self._fallback_task(self._request()))
        await self.ctx.sink(
            "dag.plan",
            {"steps": [s.as_dict() for s in steps], "round": number, "fallback": fallback},
        )
        return steps

    def _fallback_task(self, request: str) -> str:
        # The whole request, history included, when it leaves the step room to work.
        if estimate_tokens(request) <= self.fast_room // 2:
            return request
        return self.ctx.query.text()

    # --- phase 4: execute ----------------------------------------------------------------

    async def _execute(self, steps: list[Step], number: int) -> dict[str, StepOutcome]:
        outcomes: dict[str, StepOutcome] = {}
        finished = {s.id: asyncio.Event() for s in steps}
        by_id = {s.id: s for s in steps}
        slots = asyncio.Semaphore(self.config.max_parallel)

        async def run_one(step: Step) -> None:
            for dep in step.depends_on:
                await finished[dep].wait()
            failed = [d for d in step.depends_on if outcomes[d].status != "done"]
            if failed:
                skipped = say("skipped", self.ctx.language, steps=", ".join(failed))
                outcome = StepOutcome("error", error=skipped)
            else:
                async with slots:
                    await self._step_event(step, number, "running")
                    try:
                        outcome = await self._run_step(step, number, outcomes, by_id)
                    except Exception as exc:  # a step's failure is reported; others go on
                        outcome = StepOutcome("error", error=f"{type(exc).__name__}: {exc}")
            outcomes[step.id] = outcome
            if outcome.status == "done":
                await self._step_event(step, number, "done", result=preview(outcome.result))
            else:
                await self._step_event(step, number, "error", error=outcome.error)
            finished[step.id].set()

        async with asyncio.TaskGroup() as group:
            for step in steps:
                group.create_task(run_one(step), name=f"dag-step-{step.id}")
        return outcomes

    async def _run_step(
        self, step: Step, number: int, outcomes: dict[str, StepOutcome], by_id: dict[str, Step]
    ) -> StepOutcome:
        ctx = self.ctx
        # The step's tool definitions go with each of its calls, a share of what the
        # instructions leave: its messages (the instructions among them) get the rest.
        offer = ToolOffer(ctx.tools, self.fast_room, used=ctx.used_tools)
        budget = max(1, ctx.fast_budget - offer.split.tools)
        guard = ContextGuard(
            compact_llm=ctx.compact_llm,
            budget=budget,
            compact_timeout=self.compact_timeout,
        )
        context = await _build_step_context(
            step,
            outcomes,
            by_id,
            budget=self.fast_room,
            compact_llm=ctx.compact_llm,
            compact_timeout=self.compact_timeout,
            instructions=bool(ctx.instructions),
        )
        if context.compaction is not None:
            self.compaction_usage.add(context.compaction.usage)
            await self._compacted(compact_payload("step", context.compaction, step_id=step.id))
        messages = self._system(STEP_SYSTEM)
        if context.text:
            messages.append(ChatMessage(role="user", content=context.text))
        messages.append(self._task_message(step))

        async def progress(text: str) -> None:
            await ctx.sink("dag.step.delta", {"id": step.id, "round": number, "text": text})

        loop = ReactLoop(
            LoopConfig(
                llm=ctx.fast_llm,
                guard=guard,
                budget=budget,
                tools=ctx.tools,
                offer=offer,
                sink=ctx.sink,
                max_iterations=ctx.max_iterations,
                llm_timeout=ctx.llm_timeout,
                llm_stream_timeout=ctx.llm_stream_timeout,
                scope="step",
                stream=False,
                on_progress=progress,
                injections=None,
                language=ctx.language,
                event_extra={"step_id": step.id},
                approve=ctx.approve,
            )
        )
        try:
            result = await loop.run(messages)
        finally:
            self.usage.add(loop.usage)
            self.compaction_usage.add(guard.usage)
            self.compactions.extend(loop.compactions)
        return StepOutcome("done", result=result.answer)

    def _task_message(self, step: Step) -> ChatMessage:
        """A step's task, with the user's images: as pixels when the fast model can see
        them, else as their descriptions (a step may be "read the error in the screenshot")."""
        task = f"Your task: {step.task}"
        # The user's documents, inline or as the outline read_document reads further.
        documents = self.ctx.query.metadata.get(DOCUMENT_NOTES) or []
        if documents:
            task = "\n\n".join([task, "The user's documents:", *documents])
        pixels = self.ctx.query.image_parts()
        if pixels and self.ctx.fast_vision:
            return ChatMessage(role="user", content=with_images(task, pixels), pinned=True)
        notes = self.ctx.query.metadata.get(IMAGE_NOTES) or []
        if notes:
            task = "\n".join([task, "", "The user's images, described:", *notes])
        return ChatMessage(role="user", content=task, pinned=True)

    async def _step_event(self, step: Step, number: int, status: str, **fields: Any) -> None:
        await self.ctx.sink(
            "dag.step", {"id": step.id, "status": status, "round": number, **fields}
        )

    # --- phase 5-6: analyse --------------------------------------------------------------

    async def _analyse(self, steps: list[Step], outcomes: dict[str, StepOutcome]) -> Verdict | None:
        """The verdict, or None (unknown) when the checker's reply is unreadable or its call
        failed: a checker's failure must not cost the user the steps' work."""
        max_tokens = int(self.main_room * MAIN_INPUT_SHARE)
        verdict: Verdict | None = None
        reason = "not asked: the model timed out earlier in this run"
        for attempt in range(0 if self.main_timed_out else 2):
            text = analyser_input(self._request(), steps, outcomes, max_tokens=max_tokens)
            try:
                result = await self._chat(
                    [*self._system(ANALYSER_SYSTEM), ChatMessage(role="user", content=text)]
                )
            except LLMAuthError:
                raise
            except ContextOverflow as exc:
                reason = say("checker_unreachable", self.ctx.language, error=type(exc).__name__)
                if attempt == 0:
                    max_tokens = max(1, estimate_tokens(text) // 2)
                    await self._shrink_request()
                    continue
                break
            except LLMError as exc:
                reason = say("checker_unreachable", self.ctx.language, error=type(exc).__name__)
                break
            verdict = parse_verdict(result.message.text())
            reason = say("checker_unreadable", self.ctx.language)
            break
        if verdict is None:
            payload = {"achieved": None, "confidence": None, "reason": reason}
        else:
            payload = verdict.as_dict()
        await self.ctx.sink("dag.analysis", payload)
        return verdict

    def _needs_replan(self, verdict: Verdict) -> bool:
        return not verdict.achieved and verdict.confidence < self.config.replan_threshold

    # --- the answer ----------------------------------------------------------------------

    async def _synthesise(self, request: str, rounds: list[Round]) -> str:
        ctx = self.ctx
        guard = ContextGuard(
            compact_llm=ctx.compact_llm,
            budget=ctx.main_budget,
            compact_timeout=self.compact_timeout,
        )
        messages = self._system(SYNTHESIS_SYSTEM)
        latest = rounds[-1].number
        for rnd in rounds:
            label = "" if rnd.number == latest else f", earlier attempt {rnd.number + 1}"
            for step in rnd.steps:
                text = cut(rnd.outcomes[step.id].text(), DEPENDENCY_CHARS)
                messages.append(
                    ChatMessage(
                        role="user",
                        content=f"Result of step {step.id}{label} ({step.task}):\n{text}",
                    )
                )
        messages.append(
            ChatMessage(
                role="user", content=with_images(request, ctx.query.image_parts()), pinned=True
            )
        )
        loop = ReactLoop(
            LoopConfig(
                llm=ctx.llm,
                guard=guard,
                budget=ctx.main_budget,
                tools=ToolRegistry(),
                sink=ctx.sink,
                llm_timeout=ctx.llm_timeout,
                llm_stream_timeout=ctx.llm_stream_timeout,
                scope="iteration",
                stream=True,
                language=ctx.language,
                # The context is step results: keep their data, numbers and conclusions.
                hint="step_dependency",
            )
        )
        try:
            answer = await loop.write_answer(messages, note=None)
        finally:
            self.usage.add(loop.usage)
            self.compaction_usage.add(guard.usage)
            self.compactions.extend(loop.compactions)
        return answer or "I could not produce an answer this time. Please try again."

    # --- helpers -------------------------------------------------------------------------

    async def _chat(self, messages: list[ChatMessage]) -> LLMResult:
        try:
            result = await chat_once(self.ctx.llm, messages, time_limit=self.ctx.llm_timeout)
        except LLMTimeout:
            self.main_timed_out = True
            raise
        self.usage.add(result.usage)
        return result

    async def _compacted(self, payload: dict[str, Any]) -> None:
        self.compactions.append(payload)
        await self.ctx.sink("compact", payload)
