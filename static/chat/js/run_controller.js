// The run on screen: which answer is being written, the follow-ups waiting to be confirmed,
// the retry in flight, and every websocket event of a run (drawn by run_events.js's handlers). The page (ChatApp) owns
// navigation, the sidebar, the composer and the socket; it hands this controller the
// message list and a few callbacks, and forwards each server frame to ``handle``.
// The frames are described in docs/protocol.md.

import { setApprovalTransport } from "./approval.js";
import { buildHistoryNodes } from "./history.js";
import { AssistantView, userMessage } from "./render.js";
import { EVENT_HANDLERS } from "./run_events.js";
import { TRACE_HANDLERS } from "./trace.js";
import { VersionSwitching, dropBranch, offerEdit } from "./versions.js";

export class RunController {
  // host: {messagesEl, emptyState, composer, toast(text),
  //        sendFrame(frame) -> bool (sent, or queued while the socket opens),
  //        conversationId() -> id|null, resend(query), retryElsewhere() -> bool,
//        onStarted(), onEnded(), onAnswered(), onContextChanged(), reloadMessages(),
//        catchUp() (the history read again, the events meanwhile held until it is shown),
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
    if (handler) handler(this, frame);
  }

  viewForEvent() {
    return this.run?.view || null;
  }

  // The step / plan events of the live run, drawn as a reload would draw them.
  trace(type, frame) {
    const view = this.viewForEvent();
    if (view) TRACE_HANDLERS[type](view, frame, this.run);
  }

  // ---- helpers -------------------------------------------------------------------------

  // Only the newest answer can be retried: older ones lose their Retry button.
  dropRetries(except) {
    for (const view of this.views.values()) if (view !== except) view.dropRetry();
  }

  hasMessage(id) {
    return Boolean(this.messagesEl.querySelector(`[data-message-id="${CSS.escape(String(id))}"]`));
  }
}
