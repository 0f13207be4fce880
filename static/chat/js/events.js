// Server events (DESIGN §5), each handled with ``this`` bound to the ChatApp.

import { AssistantView, formatK, userMessage } from "./render.js";

export const EVENT_HANDLERS = {
  "run.started"(frame) {
    const local = this.run?.local && !this.run.runId ? this.run : null;
    if (local) {
      local.runId = frame.run_id;
      local.userNode.dataset.messageId = String(frame.message_id);
      local.view.setId(frame.assistant_message_id);
      this.views.set(String(frame.assistant_message_id), local.view);
      this.refreshTitle();
      if (local.cancelRequested) this.socket?.send({ type: "cancel" });
      this.dropRetries(local.view);
      return;
    }
    // A run we did not start here: another tab, the follow-up run for late injections, or
    // a retry (``retry_of``: the new answer takes the failed one's place).
    const existing = this.views.get(String(frame.assistant_message_id));
    const view =
      existing ||
      new AssistantView({ id: frame.assistant_message_id, onRetry: (v) => this.retry(this.lastQuery, v) });
    const replaced = frame.retry_of != null ? this.views.get(String(frame.retry_of)) : null;
    if (frame.retry_of != null) this.pendingRetry = null;
    if (!existing) {
      this.views.set(String(frame.assistant_message_id), view);
      if (replaced?.node.isConnected) {
        replaced.node.replaceWith(view.node);
        this.views.delete(String(frame.retry_of));
      } else if (!this.hasMessage(frame.message_id) && frame.content !== undefined) {
        this.messagesEl.append(
          userMessage({ id: frame.message_id, content: frame.content, images: frame.images || [] }),
        );
        this.messagesEl.append(view.node);
      } else if (!this.hasMessage(frame.message_id)) {
        this.catchUpUserMessage(frame.message_id, view);
      } else {
        this.messagesEl.append(view.node);
      }
      view.thinking();
    }
    this.emptyState.hidden = true;
    const userNode = this.messagesEl.querySelector(
      `[data-message-id="${CSS.escape(String(frame.message_id))}"]`,
    );
    this.run = { runId: frame.run_id, view, userNode, local: false, replanRound: 0 };
    this.composer.setRunning(true);
    this.dropRetries(view);
  },

  // A socket that joins mid-run (reload, reconnect, second tab) gets the answer so far.
  "run.active"(frame) {
    let view = this.views.get(String(frame.assistant_message_id));
    if (!view) {
      EVENT_HANDLERS["run.started"].call(this, frame);
      view = this.run?.view;
    }
    if (!view) return;
    view.setStatus(null);
    if (frame.steps || frame.dag) {
      // The steps and plan so far (history may show an older checkpoint of them).
      view.clearTrace();
      replayRecord(view, frame);
    }
    if (frame.text) {
      view.text = "";
      view.appendDelta(frame.text);
    }
    const userNode = this.messagesEl.querySelector(
      `[data-message-id="${CSS.escape(String(frame.message_id))}"]`,
    );
    this.run = { runId: frame.run_id, view, userNode, local: false, replanRound: 0 };
    this.composer.setRunning(true);
  },

  compact(frame) {
    if (frame.scope === "history") {
      const queryNode = this.run?.userNode || this.run?.view.node;
      if (queryNode) this.placeDivider(frame, queryNode);
      return;
    }
    const view = this.viewForEvent();
    const where = frame.scope === "planner" ? "the planner" : `this ${frame.scope || "step"}`;
    view?.addNote(
      `Context compacted for ${where}: ${frame.original_count} → ${frame.compacted_count} messages ` +
        `(${formatK(frame.tokens_before)} → ${formatK(frame.tokens_after)} tokens, ${frame.strategy})`,
    );
  },

  step(frame) {
    this.viewForEvent()?.addStep(frame);
  },

  "dag.plan"(frame) {
    this.viewForEvent()?.plan(frame, this.run?.replanRound || 0);
  },

  "dag.step"(frame) {
    this.viewForEvent()?.planStep(frame);
  },

  "dag.analysis"(frame) {
    this.viewForEvent()?.analysis(frame);
  },

  "dag.replan"(frame) {
    if (this.run) this.run.replanRound = frame.round;
    const view = this.viewForEvent();
    // The new plan replaces the old one on screen; keep why it was not enough.
    const why = view?.lastVerdict?.reason ? ` (${view.lastVerdict.reason})` : "";
    view?.addNote(`Goal not reached yet${why}: re-planning, round ${frame.round}…`);
  },

  "answer.delta"(frame) {
    this.viewForEvent()?.appendDelta(frame.text);
  },

  injected(frame) {
    if (this.hasMessage(frame.message_id)) return;
    const pending = this.pendingInjections.shift();
    if (pending) {
      pending.dataset.messageId = String(frame.message_id);
      return;
    }
    const node = userMessage({
      id: frame.message_id,
      content: frame.content,
      images: frame.images || [],
      injected: true,
    });
    if (this.run) this.messagesEl.insertBefore(node, this.run.view.node);
    else this.messagesEl.append(node);
  },

  done(frame) {
    const view = this.views.get(String(frame.message_id)) || this.viewForEvent();
    if (!view) return;
    view.setStatus(null);
    if (frame.html !== undefined) view.setFinal({ html: frame.html, content: view.text });
    else this.fillFromServer(view, frame.message_id);
    view.setUsage(frame.usage, frame.elapsed_ms);
    if (this.run?.view === view) this.endRun();
    if (this.conversation) this.sidebar.upsert(this.conversation, { toTop: true });
  },

  "run.cancelled"(frame) {
    const view = this.views.get(String(frame.message_id)) || this.viewForEvent();
    if (!view) return;
    view.stopStreaming();
    view.setStatus("cancelled", { retry: true });
    if (this.run?.view === view) this.endRun();
    this.composer.focus();
  },

  error(frame) {
    const runError = frame.run_id || (frame.message_id && this.views.has(String(frame.message_id)));
    if (runError) {
      const view = this.views.get(String(frame.message_id)) || this.viewForEvent();
      view?.setError(frame.message);
      if (!this.run || this.run.view === view) this.endRun();
      return;
    }
    if (this.pendingRetry && RETRY_REFUSALS.has(frame.code)) {
      // Our retry frame was refused (e.g. another tab started a run meanwhile).
      this.pendingRetry.retrying(false);
      this.pendingRetry = null;
      this.toast(frame.message || "That answer cannot be retried.");
      return;
    }
    if (frame.code === "no_active_run" && this.run) {
      // We thought a run was active (e.g. it ended while the socket was down).
      this.run.view.stopStreaming();
      this.endRun();
      return;
    }
    if (this.run?.local && !this.run.runId) {
      // The message that would have started a run was refused (a bad attachment, too
      // long, rate limited…): show why and offer a retry. The socket stays usable.
      this.run.view.setError(frame.message);
      this.endRun();
      return;
    }
    this.toast(frame.message || "The server refused that.");
  },
};

const RETRY_REFUSALS = new Set(["bad_message_id", "not_retryable", "run_active", "rate_limited", "server_error"]);

// A persisted run record (``steps`` / ``dag`` of an assistant message or of ``run.active``,
// see chat/run_support.py RunRecord) shown on ``view`` through the live handlers above, in
// the order the events arrived (``seq``): a reload looks exactly like the live run.
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
  // What the handlers read of the app while a run is live.
  const context = { run: { view, replanRound: 0 }, viewForEvent: () => view, placeDivider() {} };
  for (const [, type, frame] of events) {
    if (type === "omitted") {
      view.addNote(`… ${Number(frame.count) || 0} more steps of this run were not kept`);
      continue;
    }
    EVENT_HANDLERS[type].call(context, frame);
  }
}
