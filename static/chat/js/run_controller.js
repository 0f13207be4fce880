// The run on screen: which answer is being written, the follow-ups waiting to be confirmed,
// the retry in flight, and every websocket event of a run. The page (ChatApp) owns
// navigation, the sidebar, the composer and the socket; it hands this controller the
// message list and a few callbacks, and forwards each server frame to ``handle``.
// The frames are described in docs/protocol.md.

import { api } from "./api.js";
import { dropApprovals, endApproval, setApprovalTransport, showApproval, showStopNote } from "./approval.js";
import { buildHistoryNodes, placeDivider } from "./history.js";
import { AssistantView, userMessage } from "./render.js";
import { TRACE_HANDLERS, replayRecord } from "./trace.js";
import { VersionSwitching, dropBranch, offerEdit } from "./versions.js";

// Refusals of our ``retry`` frame (e.g. another tab started a run meanwhile).
const RETRY_REFUSALS = new Set([
  "bad_message_id", "not_retryable", "run_active", "rate_limited", "server_error", "server_draining",
]);

export class RunController {
  // host: {messagesEl, emptyState, composer, toast(text),
  //        sendFrame(frame) -> bool (sent, or queued while the socket opens),
  //        conversationId() -> id|null, resend(query), retryElsewhere() -> bool,
//        onStarted(), onEnded(), onAnswered(), onContextChanged(), reloadMessages(),
//        reloadConversation()}
  constructor(host) {
    this.host = host;
    this.messagesEl = host.messagesEl;
    this.composer = host.composer;
    this.run = null; // {runId, view, userNode, local, replanRound, cancelRequested}
    this.views = new Map(); // assistant message id -> AssistantView
    this.pendingInjections = [];
    this.lastQuery = null;
    this.pendingRetry = null; // the AssistantView whose retry frame awaits run.started
    this.versions = new VersionSwitching({ ...host, busy: () => Boolean(this.run || this.pendingRetry) });
    this.showVersion = (id) => this.versions.show(id);
    setApprovalTransport(
      (frame) => this.host.sendFrame(frame),
      (text) => this.host.toast(text),
    );
  }

  get active() {
    return this.run !== null;
  }

  reset() {
    this.run = null;
    this.pendingRetry = null;
    this.views.clear();
    this.pendingInjections = [];
  }

  // ---- history -------------------------------------------------------------------------

  // The newest page of history: replaces every view; a running answer becomes the run.
  showHistory(messages) {
    this.views.clear();
    this.pendingRetry = null; // its view is gone; the history shows how the retry went
    const built = buildHistoryNodes(messages, this.views, (query, view) => this.retry(query, view), {
      showVersion: this.showVersion,
    });
    if (built.running) {
      const { view, message, queryNode } = built.running;
      this.run = { runId: message.run_id, view, userNode: queryNode, local: false, replanRound: 0 };
    }
    queueMicrotask(() => this.offerEditAndRegenerate()); // once the nodes are on the page
    return built;
  }

  // With no run going, the newest question can be edited and resent and the newest
  // finished answer regenerated; a run takes both offers away until it ends.
  offerEditAndRegenerate() {
    for (const node of this.messagesEl.querySelectorAll(".btn-edit, .btn-regenerate")) node.remove();
    if (this.run) return;
    const questions = this.messagesEl.querySelectorAll(".msg-user:not(.injected)[data-message-id]");
    const question = questions[questions.length - 1];
    if (question) offerEdit(question, (text) => this.editQuestion(question, text));
    const answers = this.messagesEl.querySelectorAll(".msg-assistant[data-message-id]");
    const newest = answers[answers.length - 1];
    const view = newest ? this.views.get(newest.dataset.messageId) : null;
    if (view && view.status === "done") view.offerRegenerate((v) => this.regenerate(v));
  }

  editQuestion(node, content) {
    if (this.run) {
      this.host.toast(gettext("Wait for the current answer, or stop it first."));
      return false;
    }
    const sent = this.host.sendFrame({ type: "edit", message_id: Number(node.dataset.messageId), content });
    if (!sent) {
      this.host.toast(gettext("Not connected: cannot send the edit right now."));
      return false;
    }
    this.pendingEdit = node;
    node.classList.add("editing");
    return true;
  }

  regenerate(view) {
    if (this.run || this.pendingRetry) return this.host.toast(gettext("Wait for the current answer, or stop it first."));
    if (!this.host.sendFrame({ type: "regenerate", message_id: Number(view.id) })) {
      this.offerEditAndRegenerate();
      return this.host.toast(gettext("Not connected: cannot regenerate right now."));
    }
    this.pendingRetry = view;
  }

  // An edited question's run started: the old question and everything after it go.
  dropEdited(messageId) {
    this.pendingEdit = null;
    dropBranch(this.messagesEl, messageId, this.views);
  }

  // An older page, shown above what is on screen.
  olderHistory(messages) {
    return buildHistoryNodes(messages, this.views, (query, view) => this.retry(query, view), {
      latest: false,
      showVersion: this.showVersion,
    });
  }

  // The query that was shown as sent but never confirmed by the server; forgets the run.
  takeUnconfirmed() {
    const unconfirmed = this.run?.local && !this.run.runId ? this.lastQuery : null;
    this.run = null;
    return unconfirmed;
  }

  // ---- what the user does --------------------------------------------------------------

  // Shows a message the user just sent: a follow-up while the agent works is injected into
  // the run; otherwise it starts a new answer, confirmed by ``run.started``.
  showSent({ content, images, documents = [], mode }) {
    this.host.emptyState.hidden = true;
    if (this.run) {
      const node = userMessage({ content, images, documents, injected: true });
      this.messagesEl.insertBefore(node, this.run.view.node);
      this.pendingInjections.push(node);
      return;
    }
    this.lastQuery = { content, images, documents, mode };
    const userNode = userMessage({ content, images, documents });
    const view = new AssistantView({ onRetry: (v) => this.retry(this.lastQuery, v) });
    view.userNode = userNode; // a refused message's pair is replaced by its retry
    view.thinking();
    this.messagesEl.append(userNode, view.node);
    this.run = { runId: null, view, userNode, local: true, replanRound: 0 };
    this.composer.setRunning(true);
  }

  // An answer the server has (``view.id``) is retried with the ``retry`` frame: a new run
  // on the stored question, which takes the failed answer's place (see ``run.started``).
  // A message the server never took is simply sent again.
  retry(query, view) {
    if (this.run) return this.host.toast(gettext("Wait for the current answer, or stop it first."));
    if (view?.id) {
      if (this.pendingRetry) return;
      if (!this.host.sendFrame({ type: "retry", message_id: Number(view.id) })) {
        return this.host.toast(gettext("Not connected: cannot retry right now."));
      }
      this.pendingRetry = view;
      view.retrying(true);
      return;
    }
    if (!query) return;
    // The server never stored it: the new attempt replaces the refused one on screen.
    view?.userNode?.remove();
    view?.node.remove();
    this.host.resend(query);
  }

  stop() {
    if (!this.run) return;
    if (!this.run.runId) {
      // The server has not started the run yet: cancel as soon as it has (run.started).
      this.run.cancelRequested = true;
      this.composer.setStopping();
      return;
    }
    if (!this.host.sendFrame({ type: "cancel" })) {
      this.host.toast(gettext("Not connected: cannot stop right now."));
      return;
    }
    this.composer.setStopping();
  }

  failLocalRun(message) {
    if (!this.run) return this.host.toast(message);
    this.run.view.setError(message);
    this.endRun();
  }

  endRun() {
    this.run = null;
    this.pendingInjections = [];
    this.composer.setRunning(false);
    this.offerEditAndRegenerate();
    this.host.onEnded();
  }

  // ---- server events -------------------------------------------------------------------

  handle(frame) {
    const handler = EVENT_HANDLERS[frame.type];
    if (handler) handler.call(this, frame);
  }

  viewForEvent() {
    return this.run?.view || null;
  }

  // The step / plan events of the live run, drawn as a reload would draw them.
  trace(type, frame) {
    const view = this.viewForEvent();
    if (view) TRACE_HANDLERS[type](view, frame, this.run);
  }

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
  }

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
  }

  // From now on the events of ``frame.run_id`` are drawn on ``view``.
  follow(frame, view) {
    const userNode = this.messagesEl.querySelector(
      `[data-message-id="${CSS.escape(String(frame.message_id))}"]`,
    );
    this.run = { runId: frame.run_id, view, userNode, local: false, replanRound: 0 };
    this.composer.setRunning(true);
  }

  compacted(frame) {
    if (frame.scope !== "history") return this.trace("compact", frame);
    const queryNode = this.run?.userNode || this.run?.view.node;
    if (queryNode) placeDivider(this.messagesEl, frame, queryNode);
  }

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
  }

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
  }

  cancelled(frame) {
    const view = this.views.get(String(frame.message_id)) || this.viewForEvent();
    if (!view) return;
    view.stopStreaming();
    dropApprovals(view);
    view.setStatus("cancelled", { retry: true });
    showStopNote(view, frame.note);
    if (this.run?.view === view) this.endRun();
    this.composer.focus();
  }

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
  }

  // ---- helpers -------------------------------------------------------------------------

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
  }

  async fillFromServer(view, messageId) {
    try {
      const { messages } = await api.messagePage(this.host.conversationId(), { limit: 50 });
      const message = messages.find((m) => m.id === messageId);
      if (message) view.setFinal({ html: message.html, content: message.content });
    } catch (err) {
      view.setFinal({ content: view.text });
    }
  }

  // Only the newest answer can be retried: older ones lose their Retry button.
  dropRetries(except) {
    for (const view of this.views.values()) if (view !== except) view.dropRetry();
  }

  hasMessage(id) {
    return Boolean(this.messagesEl.querySelector(`[data-message-id="${CSS.escape(String(id))}"]`));
  }
}

// Server frame type -> RunController method (called with ``this`` = the controller).
const EVENT_HANDLERS = {
  "run.started": RunController.prototype.runStarted,
  "versions.shown"(frame) {
    this.versions.shown(frame);
  },
  "run.active": RunController.prototype.runActive,
  compact: RunController.prototype.compacted,
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
  injected: RunController.prototype.injected,
  done: RunController.prototype.done,
  "run.cancelled": RunController.prototype.cancelled,
  error: RunController.prototype.error,
};
