// What a run shows inside its answer: steps, plans, analyses and compaction notes. The live
// run (RunController) and a reload (replayRecord) draw through these same functions, so a
// reloaded answer looks exactly like the live one. ``run`` is the run's mutable state
// ({replanRound}); only the re-plan counter is read here.

import { formatK } from "./render.js";

export const TRACE_HANDLERS = {
  // In the user's words: what was shortened, for which part of the work, and how.
  compact(view, frame) {
    const where =
      {
        planner: "for planning",
        step: frame.step_id !== undefined ? `for step ${frame.step_id}` : "for a step",
        iteration: "before the next model call",
      }[frame.scope] || "to fit";
    const how = frame.strategy === "truncate" ? "shortened (oldest parts left out)" : "summarised";
    view.addNote(
      `Context ${how} ${where}: ${formatK(frame.tokens_before)} → ${formatK(frame.tokens_after)} tokens`,
    );
  },

  step(view, frame) {
    view.addStep(frame);
  },

  "dag.plan"(view, frame, run) {
    view.plan(frame, run.replanRound || 0);
  },

  "dag.step"(view, frame) {
    view.planStep(frame);
  },

  "dag.analysis"(view, frame) {
    view.analysis(frame);
  },

  "dag.replan"(view, frame, run) {
    run.replanRound = frame.round;
    // The new plan replaces the old one on screen; keep why it was not enough.
    const why = view.lastVerdict?.reason ? ` (${view.lastVerdict.reason})` : "";
    view.addNote(`Goal not reached yet${why}: re-planning, round ${frame.round}…`);
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
      view.addNote(`… ${Number(frame.count) || 0} more steps of this run were not kept`);
    } else if (!(type === "compact" && frame.scope === "history")) {
      TRACE_HANDLERS[type](view, frame, run);
    }
  }
}
