// The server's events of a run, drawn by the RunController (run_controller.js): a run
// started here or elsewhere, a socket joining mid-run, follow-ups, the end, a stop and
// the errors. Methods of RunController, kept here to keep that module small; the frames
// are described in docs/protocol.md.

import { api } from "./api.js";
import { dropApprovals, endApproval, showApproval, showStopNote } from "./approval.js";
import { placeDivider } from "./history.js";
import { AssistantView, userMessage } from "./render.js";
import { replayRecord } from "./trace.js";

// Refusals of our ``retry`` frame (e.g. another tab started a run meanwhile).
const RETRY_REFUSALS = new Set([
  "bad_message_id", "not_retryable", "run_active", "rate_limited", "server_error", "server_draining",
]);

export const runEventMethods = {
  runStarted(frame) {
    const local = this.run?.local && !this.run.runId ? this.run : null;
    if (local) {
      local.runId = frame.run_id;
      local.userNode.dataset.messageId = String(frame.message_id);
      local.view.setId(frame.assistant_message_id);
      this.views.set(String(frame.assistant_message_id), local.view);
      this.host.onStarted();
      if (local.cancelRequested) this.host.sendFrame({ type: "cancel" });
      this.dropRetries(local.view);
      this.offerEditAndRegenerate();
      return;
    }
    // A run we did not start here: another tab, the follow-up run for late injections, or
    // a retry (``retry_of``: the new answer takes the failed one's place).
    const existing = this.views.get(String(frame.assistant_message_id));
    const view =
      existing ||
      new AssistantView({ id: frame.assistant_message_id, onRetry: (v) => this.retry(this.lastQuery, v) });
    if (frame.edit_of != null) this.dropEdited(frame.edit_of);
    const replaced = frame.retry_of != null ? this.views.get(String(frame.retry_of)) : null;
    if (frame.retry_of != null) this.pendingRetry = null;
    if (!existing) {
      this.views.set(String(frame.assistant_message_id), view);
      if (replaced?.node.isConnected) {
        replaced.node.replaceWith(view.node);
        this.views.delete(String(frame.retry_of));
      } else if (!this.hasMessage(frame.message_id) && frame.content !== undefined) {
        this.messagesEl.append(
          userMessage({
            id: frame.message_id,
            content: frame.content,
            images: frame.images || [],
            documents: frame.documents || [],
          }),
        );
        this.messagesEl.append(view.node);
      } else if (!this.hasMessage(frame.message_id)) {
        this.catchUpUserMessage(frame.message_id, view);
      } else {
        this.messagesEl.append(view.node);
      }
      view.thinking();
    }
    this.host.emptyState.hidden = true;
    this.versions.started(frame, this.messagesEl, view, this.showVersion);
    this.follow(frame, view);
    this.dropRetries(view);
    this.offerEditAndRegenerate();
  },

  // A socket that joins mid-run (reload, reconnect, second tab) gets the answer so far.
  runActive(frame) {
    let view = this.views.get(String(frame.assistant_message_id));
    if (!view) {
      this.runStarted(frame);
      view = this.run?.view;
    }
    if (!view) return;
    view.setStatus(null);
    if (frame.steps || frame.dag || frame.reasoning) {
      // The steps, plan and thinking so far (history may show an older checkpoint of them).
      view.clearTrace();
      replayRecord(view, frame);
    }
    if (frame.text) {
      view.text = "";
      view.appendDelta(frame.text);
    }
    this.follow(frame, view);
  },

  // From now on the events of ``frame.run_id`` are drawn on ``view``.
  follow(frame, view) {
    const userNode = this.messagesEl.querySelector(
      `[data-message-id="${CSS.escape(String(frame.message_id))}"]`,
    );
    this.run = { runId: frame.run_id, view, userNode, local: false, replanRound: 0 };
    this.composer.setRunning(true);
  },

  compacted(frame) {
    if (frame.scope !== "history") return this.trace("compact", frame);
    const queryNode = this.run?.userNode || this.run?.view.node;
    if (queryNode) placeDivider(this.messagesEl, frame, queryNode);
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
      documents: frame.documents || [],
      injected: true,
    });
    if (this.run) this.messagesEl.insertBefore(node, this.run.view.node);
    else this.messagesEl.append(node);
  },

  done(frame) {
    const view = this.views.get(String(frame.message_id)) || this.viewForEvent();
    if (!view) return;
    dropApprovals(view);
    view.setStatus(null);
    if (frame.html !== undefined) view.setFinal({ html: frame.html, content: view.text });
    else this.fillFromServer(view, frame.message_id);
    view.setUsage(frame.usage, frame.elapsed_ms);
    if (this.run?.view === view) this.endRun();
    this.host.onAnswered();
  },

  cancelled(frame) {
    const view = this.views.get(String(frame.message_id)) || this.viewForEvent();
    if (!view) return;
    view.stopStreaming();
    dropApprovals(view);
    view.setStatus("cancelled", { retry: true });
    showStopNote(view, frame.note);
    if (this.run?.view === view) this.endRun();
    this.composer.focus();
  },

  error(frame) {
    const runError = frame.run_id || (frame.message_id && this.views.has(String(frame.message_id)));
    if (runError) {
      const view = this.views.get(String(frame.message_id)) || this.viewForEvent();
      if (view) dropApprovals(view);
      view?.setError(frame.message);
      if (!this.run || this.run.view === view) this.endRun();
      return;
    }
    if (this.pendingRetry && RETRY_REFUSALS.has(frame.code)) {
      this.pendingRetry.retrying(false);
      this.pendingRetry = null;
      this.offerEditAndRegenerate();
      this.host.toast(frame.message || gettext("That answer cannot be retried."));
      return;
    }
    if (this.pendingEdit) {
      // The edit was refused (too long, a run started meanwhile…): the question stays.
      this.pendingEdit.classList.remove("editing");
      this.pendingEdit = null;
      this.offerEditAndRegenerate();
      this.host.toast(frame.message || gettext("The edit could not be sent."));
      return;
    }
    if (frame.code === "no_active_run" && this.run) {
      // We thought a run was active (e.g. it ended while the socket was down).
      this.run.view.stopStreaming();
      this.endRun();
      return;
    }
    if (frame.code === "server_draining" && this.run?.local && !this.run.runId) {
      // A deploy: this server takes no new runs. Keep the message on screen as pending;
      // it is sent again after reconnecting to a server that does.
      if (this.host.retryElsewhere()) return;
    }
    if (frame.code === "rate_limited" && this.run?.local && !this.run.runId) {
      // Sent too fast: the message goes back into the box, files and all, until it may go.
      const { userNode, view } = this.run;
      userNode.remove();
      view.node.remove();
      this.host.emptyState.hidden = Boolean(this.messagesEl.querySelector(".msg"));
      this.endRun();
      this.composer.takeBack(this.lastQuery, `${frame.message} ${gettext("Your message is back in the box: send it again in a moment.")}`);
      return;
    }
    if (this.run?.local && !this.run.runId) {
      // The message that would have started a run was refused (a bad attachment, too
      // long, rate limited…): show why and offer a retry. The socket stays usable.
      this.run.view.setError(frame.message);
      this.endRun();
      return;
    }
    this.host.toast(frame.message || gettext("The server refused that."));
  },

  async catchUpUserMessage(messageId, view) {
    // Show the query that started a run elsewhere, then the run's answer below it.
    try {
      const { messages } = await api.messagePage(this.host.conversationId(), { limit: 50 });
      const query = messages.find((m) => m.id === messageId);
      if (query && !this.hasMessage(messageId)) {
        this.messagesEl.append(
          userMessage({
            id: query.id,
            content: query.content,
            images: query.images || [],
            documents: query.documents || [],
            injected: query.kind === "injected",
          }),
        );
      }
    } catch (err) {
      /* the answer still shows; the query appears on the next load */
    }
    if (!view.node.isConnected) this.messagesEl.append(view.node);
  },

  async fillFromServer(view, messageId) {
    try {
      const { messages } = await api.messagePage(this.host.conversationId(), { limit: 50 });
      const message = messages.find((m) => m.id === messageId);
      if (message) view.setFinal({ html: message.html, content: message.content });
    } catch (err) {
      view.setFinal({ content: view.text });
    }
  },
};

// Server frame type -> RunController method (called with ``this`` = the controller).
export
const EVENT_HANDLERS = {
  "run.started": runEventMethods.runStarted,
  "versions.shown"(frame) {
    this.versions.shown(frame);
  },
  "run.active": runEventMethods.runActive,
  compact: runEventMethods.compacted,
  step(frame) {
    this.trace("step", frame);
  },
  "dag.plan"(frame) {
    this.trace("dag.plan", frame);
  },
  "dag.step"(frame) {
    this.trace("dag.step", frame);
  },
  "dag.analysis"(frame) {
    this.trace("dag.analysis", frame);
  },
  "dag.replan"(frame) {
    this.trace("dag.replan", frame);
  },
  "answer.delta"(frame) {
    this.viewForEvent()?.appendDelta(frame.text);
  },
  "answer.retract"(frame) {
    this.viewForEvent()?.retract(frame);
  },
  "dag.step.delta"(frame) {
    this.viewForEvent()?.planProgress(frame);
  },
  // The model call itself: the answer arrives at once, or a rate limit is waited out.
  "llm.notice"(frame) {
    this.viewForEvent()?.notice(frame);
  },
  // The model's reasoning text: shown apart from the answer, collapsed.
  "reasoning.delta"(frame) {
    this.viewForEvent()?.appendReasoning(frame.text);
  },
  // After an answer, the images it pushed out of the pixel turns got the fast model's
  // words: that answer's usage grew (the calls count as upkeep), and the gauge, read again,
  // counts the new words (not while a run is under way: its end reads it).
  "images.described"(frame) {
    const view = this.views.get(String(frame.message_id));
    if (view && frame.usage) view.setUsage(frame.usage, frame.elapsed_ms);
    if (!this.run) this.host.onContextChanged?.();
  },
  // A tool call waits for the user (docs/protocol.md, "Tool approval"), and how it ended.
  "tool.approval"(frame) {
    const view = this.viewForEvent();
    if (view) showApproval(view, frame);
  },
  "tool.approval.resolved"(frame) {
    const view = this.viewForEvent();
    if (view) endApproval(view, frame);
  },
  injected: runEventMethods.injected,
  done: runEventMethods.done,
  "run.cancelled": runEventMethods.cancelled,
  error: runEventMethods.error,
};
