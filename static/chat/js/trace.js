// What a run shows inside its answer: steps, plans, analyses and compaction notes. The live
// run (RunController) and a reload (replayRecord) draw through these same functions, so a
// reloaded answer looks exactly like the live one. ``run`` is the run's mutable state
// ({replanRound}); only the re-plan counter is read here.

import { showApproval } from "./approval.js";
import { el } from "./dom.js";
import { maskedList } from "./render.js";
import { formatK } from "./usage_card.js";
import { compactionNote } from "./steering.js";

// One whole sentence per case, so that each language can word it naturally.
const SHORTENED = {
  planner: gettext("Context shortened (oldest parts left out) for planning: %(before)s → %(after)s tokens"),
  step: gettext("Context shortened (oldest parts left out) for step %(step)s: %(before)s → %(after)s tokens"),
  any_step: gettext("Context shortened (oldest parts left out) for a step: %(before)s → %(after)s tokens"),
  iteration: gettext(
    "Context shortened (oldest parts left out) before the next model call: %(before)s → %(after)s tokens",
  ),
  fit: gettext("Context shortened (oldest parts left out) to fit: %(before)s → %(after)s tokens"),
};
const SUMMARISED = {
  planner: gettext("Context summarised for planning: %(before)s → %(after)s tokens"),
  step: gettext("Context summarised for step %(step)s: %(before)s → %(after)s tokens"),
  any_step: gettext("Context summarised for a step: %(before)s → %(after)s tokens"),
  iteration: gettext("Context summarised before the next model call: %(before)s → %(after)s tokens"),
  fit: gettext("Context summarised to fit: %(before)s → %(after)s tokens"),
};

const MASKED = {
  planner: gettext("Old tool results masked for planning: %(before)s → %(after)s tokens"),
  step: gettext("Old tool results masked for step %(step)s: %(before)s → %(after)s tokens"),
  any_step: gettext("Old tool results masked for a step: %(before)s → %(after)s tokens"),
  iteration: gettext("Old tool results masked before the next model call: %(before)s → %(after)s tokens"),
  fit: gettext("Old tool results masked to fit: %(before)s → %(after)s tokens"),
};

// A run masks again whenever its context passes half the budget, so a long run masks
// many times: one note per scope (and step) gathers them — the newest figures, every
// result masked so far — where it first appeared, rather than a note per model call.
function maskNote(view, key, frame, text) {
  view.maskNotes ??= new Map();
  const earlier = view.maskNotes.get(key);
  const count = (f) => Number(f.masked_count) || (Array.isArray(f.masked) ? f.masked.length : 0);
  const facts = earlier
    ? {
        ...frame,
        masked: [...(earlier.facts.masked || []), ...(Array.isArray(frame.masked) ? frame.masked : [])],
        masked_count: count(earlier.facts) + count(frame),
        masked_tokens_saved:
          (Number(earlier.facts.masked_tokens_saved) || 0) + (Number(frame.masked_tokens_saved) || 0),
      }
    : frame;
  const note = el("div", { class: "step-note", text });
  const masked = maskedList(facts);
  if (masked) note.append(masked);
  if (earlier) earlier.note.replaceWith(note);
  else view.addNote(note);
  view.maskNotes.set(key, { facts, note });
}

export const TRACE_HANDLERS = {
  // In the user's words: what was shortened, for which part of the work, and how.
  compact(view, frame) {
    const scope =
      frame.scope === "step" && frame.step_id === undefined ? "any_step" : frame.scope;
    const texts =
      frame.strategy === "truncate" ? SHORTENED : frame.strategy === "mask" ? MASKED : SUMMARISED;
    const values = {
      step: frame.step_id,
      before: formatK(frame.tokens_before),
      after: formatK(frame.tokens_after),
    };
    const text = interpolate(texts[scope] || texts.fit, values, true);
    if (frame.strategy === "mask") {
      maskNote(view, `${scope}:${frame.step_id ?? ""}`, frame, text);
      return;
    }
    // A summary opens like the divider: its text, the fact check, what it stands for.
    const note =
      frame.strategy === "llm" && (frame.summary || frame.summary_id)
        ? compactionNote(frame, text)
        : el("div", { class: "step-note", text });
    // What was masked, listed apart from what was summarised.
    const masked = maskedList(frame);
    if (masked) note.append(masked);
    view.addNote(note);
  },

  // A note the server wrote for the user (e.g. a tool server left out of this answer).
  step(view, frame) {
    if (frame.kind === "note") view.addNote(String(frame.text || ""));
    // A tool call put to the user: a card while it waits, then a line (approval.js).
    else if (frame.kind === "approval") showApproval(view, frame);
    else view.addStep(frame);
  },

  "dag.plan"(view, frame, run) {
    view.plan.show(frame, run.replanRound || 0);
  },

  "dag.step"(view, frame) {
    view.plan.step(frame);
    // A record taken mid-step (``run.active``) carries the step's streamed text so far.
    if (frame.status === "running" && frame.progress) {
      view.plan.progress({ id: frame.id, text: frame.progress });
    }
  },

  "dag.analysis"(view, frame) {
    view.plan.analysis(frame);
  },

  "dag.replan"(view, frame, run) {
    run.replanRound = frame.round;
    // The new plan replaces the old one on screen; keep why it was not enough.
    const why = view.plan.lastVerdict?.reason;
    view.addNote(
      why
        ? interpolate(
            gettext("Goal not reached yet (%(reason)s): re-planning, round %(round)s…"),
            { reason: why, round: frame.round },
            true,
          )
        : interpolate(
            gettext("Goal not reached yet: re-planning, round %(round)s…"),
            { round: frame.round },
            true,
          ),
    );
  },
};

// A persisted run record (``steps`` / ``dag`` of an assistant message or of ``run.active``,
// see docs/protocol.md) drawn on ``view`` in the order the events arrived (``seq``).
// A history-scope compaction is drawn by the page as a divider, not inside the answer.
export function replayRecord(view, record) {
  const events = [];
  for (const entry of Array.isArray(record.steps) ? record.steps : []) {
    if (entry.kind === "omitted") events.push([entry.seq, "omitted", entry]);
    else if (entry.kind === "compact") events.push([entry.seq, "compact", entry]);
    else events.push([entry.seq, "step", entry]);
  }
  const dag = record.dag || {};
  for (const round of Array.isArray(dag.rounds) ? dag.rounds : []) {
    const steps = Array.isArray(round.steps) ? round.steps : [];
    events.push([round.seq, "dag.plan", { steps, round: round.round, fallback: round.fallback }]);
    for (const step of steps) {
      if (step.seq !== undefined) events.push([step.seq, "dag.step", step]);
    }
    if (round.analysis) events.push([round.analysis.seq, "dag.analysis", round.analysis]);
  }
  for (const replan of Array.isArray(dag.replans) ? dag.replans : []) {
    events.push([replan.seq, "dag.replan", replan]);
  }
  events.sort((a, b) => (Number(a[0]) || 0) - (Number(b[0]) || 0));
  if (record.reasoning) {
    view.appendReasoning(record.reasoning);
    view.endReasoning();
  }
  const run = { replanRound: 0 };
  for (const [, type, frame] of events) {
    if (type === "omitted") {
      const count = Number(frame.count) || 0;
      view.addNote(
        interpolate(
          ngettext(
            "… %(count)s more step of this run was not kept",
            "… %(count)s more steps of this run were not kept",
            count,
          ),
          { count },
          true,
        ),
      );
    } else if (!(type === "compact" && frame.scope === "history")) {
      TRACE_HANDLERS[type](view, frame, run);
    }
  }
}
