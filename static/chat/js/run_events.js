// The server's events of a run, drawn on the run on screen (``runs``, a RunController,
// run_controller.js): a run started here or elsewhere, a socket joining mid-run,
// follow-ups, the end, a stop and the errors. The frames are described in
// docs/protocol.md.

import { api } from "./api.js";
import { dropApprovals, endApproval, showApproval, showStopNote } from "./approval.js";
import { placeDivider } from "./history.js";
import { AssistantView, userMessage } from "./render.js";
import { replayRecord } from "./trace.js";

// Refusals of our ``retry`` frame (e.g. another tab started a run meanwhile).
const RETRY_REFUSALS = new Set([
  "bad_message_id", "not_retryable", "run_active", "rate_limited", "server_error", "server_draining",
]);

function runStarted(runs, frame) {
  const local = runs.run?.local && !runs.run.runId ? runs.run : null;
  if (local) {
    local.runId = frame.run_id;
    local.userNode.dataset.messageId = String(frame.message_id);
    local.view.setId(frame.assistant_message_id);
    runs.views.set(String(frame.assistant_message_id), local.view);
    runs.host.onStarted();
    if (local.cancelRequested) runs.host.sendFrame({ type: "cancel" });
    runs.dropRetries(local.view);
    runs.offerEditAndRegenerate();
    return;
  }
  // A run we did not start here: another tab, the follow-up run for late injections, or
  // a retry (``retry_of``: the new answer takes the failed one's place).
  const existing = runs.views.get(String(frame.assistant_message_id));
  const view =
    existing ||
    new AssistantView({ id: frame.assistant_message_id, onRetry: (v) => runs.retry(runs.lastQuery, v) });
  if (frame.edit_of != null) runs.dropEdited(frame.edit_of);
  const replaced = frame.retry_of != null ? runs.views.get(String(frame.retry_of)) : null;
  if (frame.retry_of != null) runs.pendingRetry = null;
  if (!existing) {
    runs.views.set(String(frame.assistant_message_id), view);
    if (replaced?.node.isConnected) {
      replaced.node.replaceWith(view.node);
      runs.views.delete(String(frame.retry_of));
    } else if (!runs.hasMessage(frame.message_id) && frame.content !== undefined) {
      runs.messagesEl.append(
        userMessage({
          id: frame.message_id,
          content: frame.content,
          images: frame.images || [],
          documents: frame.documents || [],
        }),
      );
      runs.messagesEl.append(view.node);
    } else if (!runs.hasMessage(frame.message_id)) {
      catchUpUserMessage(runs, frame.message_id, view);
    } else {
      // A follow-up run answers a follow-up the last run never read: it moves down, above
      // the answer that replies to it.
      const asked = runs.messagesEl.querySelector(
        `.msg-user.injected[data-message-id="${CSS.escape(String(frame.message_id))}"]`,
      );
      if (asked) runs.messagesEl.append(asked);
      runs.messagesEl.append(view.node);
    }
    view.thinking();
  }
  runs.host.emptyState.hidden = true;
  runs.versions.started(frame, runs.messagesEl, view, runs.showVersion);
  follow(runs, frame, view);
  runs.dropRetries(view);
  runs.offerEditAndRegenerate();
}

// A socket that joins mid-run (reload, reconnect, second tab) gets the answer so far.
function runActive(runs, frame) {
  let view = runs.views.get(String(frame.assistant_message_id));
  if (!view) {
    runStarted(runs, frame);
    view = runs.run?.view;
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
  follow(runs, frame, view);
}

// The socket joined with no run under way. An answer the page holds as running (the
// history read while it was written, or a run followed before a drop) ended before the
// socket joined, and its end was sent to nobody here: the history is read again to show
// how it ended. A message of ours the server has not confirmed yet is not such a run.
function noRun(runs) {
  const held = runs.run;
  if (!held || (held.local && !held.runId)) return;
  runs.host.catchUp();
}

// From now on the events of ``frame.run_id`` are drawn on ``view``.
function follow(runs, frame, view) {
  const userNode = runs.messagesEl.querySelector(
    `[data-message-id="${CSS.escape(String(frame.message_id))}"]`,
  );
  runs.run = { runId: frame.run_id, view, userNode, local: false, replanRound: 0 };
  runs.composer.setRunning(true);
}

function compacted(runs, frame) {
  if (frame.scope !== "history") return runs.trace("compact", frame);
  const queryNode = runs.run?.userNode || runs.run?.view.node;
  if (queryNode) placeDivider(runs.messagesEl, frame, queryNode);
}

function injected(runs, frame) {
  if (runs.hasMessage(frame.message_id)) return;
  const pending = runs.pendingInjections.shift();
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
  if (runs.run) runs.messagesEl.insertBefore(node, runs.run.view.node);
  else runs.messagesEl.append(node);
}

function done(runs, frame) {
  const view = runs.views.get(String(frame.message_id)) || runs.viewForEvent();
  if (!view) return;
  dropApprovals(view);
  view.setStatus(null);
  view.markFollowUps(frame.follow_ups);
  if (frame.html !== undefined) view.setFinal({ html: frame.html, content: view.text });
  else fillFromServer(runs, view, frame.message_id);
  view.setUsage(frame.usage, frame.elapsed_ms);
  if (runs.run?.view === view) runs.endRun();
  runs.host.onAnswered();
}

function cancelled(runs, frame) {
  const view = runs.views.get(String(frame.message_id)) || runs.viewForEvent();
  if (!view) return;
  view.stopStreaming();
  dropApprovals(view);
  view.setStatus("cancelled", { retry: true });
  view.markFollowUps(frame.follow_ups);
  showStopNote(view, frame.note);
  // What was written before the stop can be copied, and what it cost is shown.
  view.source = view.text;
  view.addCopyButton();
  view.setUsage(frame.usage, frame.elapsed_ms);
  if (runs.run?.view === view) runs.endRun();
  runs.composer.focus();
}

function error(runs, frame) {
  const runError = frame.run_id || (frame.message_id && runs.views.has(String(frame.message_id)));
  if (runError) {
    const view = runs.views.get(String(frame.message_id)) || runs.viewForEvent();
    if (view) dropApprovals(view);
    view?.setError(frame.message);
    if (!runs.run || runs.run.view === view) runs.endRun();
    return;
  }
  if (runs.pendingRetry && RETRY_REFUSALS.has(frame.code)) {
    runs.pendingRetry.retrying(false);
    runs.pendingRetry = null;
    runs.offerEditAndRegenerate();
    runs.host.toast(frame.message || gettext("That answer cannot be retried."));
    return;
  }
  if (runs.pendingEdit) {
    // The edit was refused (too long, a run started meanwhile…): the question stays.
    runs.pendingEdit.classList.remove("editing");
    runs.pendingEdit = null;
    runs.offerEditAndRegenerate();
    runs.host.toast(frame.message || gettext("The edit could not be sent."));
    return;
  }
  if (frame.code === "no_active_run" && runs.run) {
    // We thought a run was active (e.g. it ended while the socket was down).
    runs.run.view.stopStreaming();
    runs.endRun();
    return;
  }
  if (frame.code === "server_draining" && runs.run?.local && !runs.run.runId) {
    // A deploy: this server takes no new runs. Keep the message on screen as pending;
    // it is sent again after reconnecting to a server that does.
    if (runs.host.retryElsewhere()) return;
  }
  if (runs.run?.local && !runs.run.runId) {
    // The message that would have started a run was refused (sent too fast, a bad
    // attachment, too long…): nothing was stored, so it goes back into the box, files and
    // all, with why. A new chat's first message refused leaves no empty conversation in
    // the list, and waits in the new chat's box (a reload shows it there again).
    const { userNode, view } = runs.run;
    userNode.remove();
    view.node.remove();
    const empty = !runs.messagesEl.querySelector(".msg");
    runs.host.emptyState.hidden = !empty;
    runs.endRun();
    if (empty) runs.host.onFirstMessageRefused?.();
    const back =
      frame.code === "rate_limited"
        ? gettext("Your message is back in the box: send it again in a moment.")
        : gettext("Your message is back in the box.");
    runs.composer.takeBack(runs.lastQuery, `${frame.message} ${back}`);
    return;
  }
  runs.host.toast(frame.message || gettext("The server refused that."));
}

async function catchUpUserMessage(runs, messageId, view) {
  // Show the query that started a run elsewhere, then the run's answer below it.
  try {
    const { messages } = await api.messagePage(runs.host.conversationId(), { limit: 50 });
    const query = messages.find((m) => m.id === messageId);
    if (query && !runs.hasMessage(messageId)) {
      runs.messagesEl.append(
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
  if (!view.node.isConnected) runs.messagesEl.append(view.node);
}

async function fillFromServer(runs, view, messageId) {
  try {
    const { messages } = await api.messagePage(runs.host.conversationId(), { limit: 50 });
    const message = messages.find((m) => m.id === messageId);
    if (message) view.setFinal({ html: message.html, content: message.content });
  } catch (err) {
    view.setFinal({ content: view.text });
  }
}

// Server frame type -> what draws it, called with the RunController and the frame.
export const EVENT_HANDLERS = {
  "run.started": runStarted,
  "versions.shown"(runs, frame) {
    runs.versions.shown(frame);
  },
  "run.active": runActive,
  "run.none": noRun,
  compact: compacted,
  step(runs, frame) {
    runs.trace("step", frame);
  },
  "dag.plan"(runs, frame) {
    runs.trace("dag.plan", frame);
  },
  "dag.step"(runs, frame) {
    runs.trace("dag.step", frame);
  },
  "dag.analysis"(runs, frame) {
    runs.trace("dag.analysis", frame);
  },
  "dag.replan"(runs, frame) {
    runs.trace("dag.replan", frame);
  },
  "answer.delta"(runs, frame) {
    runs.viewForEvent()?.appendDelta(frame.text);
  },
  "answer.retract"(runs, frame) {
    runs.viewForEvent()?.retract(frame);
  },
  "dag.step.delta"(runs, frame) {
    runs.viewForEvent()?.plan.progress(frame);
  },
  // The model call itself: the answer arrives at once, or a rate limit is waited out.
  "llm.notice"(runs, frame) {
    runs.viewForEvent()?.notice(frame);
  },
  // The model's reasoning text: shown apart from the answer, collapsed.
  "reasoning.delta"(runs, frame) {
    runs.viewForEvent()?.appendReasoning(frame.text);
  },
  // After an answer, the images it pushed out of the pixel turns got the fast model's
  // words: that answer's usage grew (the calls count as upkeep), and the gauge, read again,
  // counts the new words (not while a run is under way: its end reads it).
  "images.described"(runs, frame) {
    const view = runs.views.get(String(frame.message_id));
    if (view && frame.usage) view.setUsage(frame.usage, frame.elapsed_ms);
    if (!runs.run) runs.host.onContextChanged?.();
  },
  // A tool call waits for the user (docs/protocol.md, "Tool approval"), and how it ended.
  "tool.approval"(runs, frame) {
    const view = runs.viewForEvent();
    if (view) showApproval(view, frame);
  },
  "tool.approval.resolved"(runs, frame) {
    const view = runs.viewForEvent();
    if (view) endApproval(view, frame);
  },
  injected,
  done,
  "run.cancelled": cancelled,
  error,
};
