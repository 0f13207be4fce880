// Persisted history on the page: message nodes and the compaction divider.

import { dropApprovals, showStopNote } from "./approval.js";
import { replayRecord } from "./trace.js";
import { AssistantView, summarizedCount, userMessage } from "./render.js";
import { markYieldedPins, summaryDivider } from "./steering.js";
import { showVersions } from "./versions.js";

const RETRYABLE = new Set(["error", "cancelled", "interrupted"]);

// Nodes for a page of persisted messages (oldest first). Registers the assistant views in
// ``views``; returns the nodes, the newest load-time compaction and a running answer.
// ``latest``: the page ends with the conversation's newest message, so its newest answer
// may offer Retry (only that one can be retried). Only the branch of versions shown is
// drawn (the others are ``superseded_by``); a question or answer with several versions gets
// the switcher, whose ``showVersion(id)`` shows another.
export function buildHistoryNodes(messages, views, retry, { latest = true, showVersion = null } = {}) {
  const nodes = [];
  let lastQuery = null;
  let compaction = null;
  let running = null;
  // Other versions of answers (retry, regenerate) and of questions, with their branches.
  const shown = followUpsBeforeTheirAnswer(messages.filter((m) => !m.superseded_by));
  const newestAnswer = latest ? shown.filter((m) => m.role === "assistant").pop() : null;
  for (const message of shown) {
    if (message.role === "user") {
      const node = userMessage({
        id: message.id,
        content: message.content,
        images: message.images || [],
        documents: message.documents || [],
        injected: message.kind === "injected",
      });
      if (message.pinned) node.dataset.pinned = "true";
      showVersions(node, message.versions, showVersion);
      nodes.push(node);
      if (message.kind !== "injected") lastQuery = { node, message };
      continue;
    }
    if (message.role !== "assistant") continue;
    const query = lastQuery;
    const view = new AssistantView({ id: message.id, onRetry: (v) => retry(query?.message, v) });
    views.set(String(message.id), view);
    if (message.pinned) view.node.dataset.pinned = "true";
    nodes.push(view.node);
    // Steps, plan and thinking as they were shown live (or so far, for a running answer).
    replayRecord(view, message);
    view.markFollowUps(message.follow_ups);
    const canRetry = message === newestAnswer && RETRYABLE.has(message.status);
    if (message.status === "running") {
      view.thinking();
      view.setStatus("running");
      running = { view, message, queryNode: query?.node };
    } else {
      dropApprovals(view); // a finished run waits for nobody
      view.setFinal({ html: message.html, content: message.content });
      if (message.kind === "error" || message.status === "error") {
        view.setError(message.error?.message || gettext("The agent could not finish this answer."), {
          retry: canRetry,
        });
      } else {
        view.setStatus(message.status, { retry: canRetry });
        showStopNote(view, message.note);
      }
      view.setUsage(message.usage);
    }
    showVersions(view.node, message.versions, showVersion, { actions: view.actions });
    const facts = historyFacts(message.compaction);
    if (facts && query) compaction = { facts, node: query.node };
  }
  return { nodes, compaction, running };
}

// A follow-up sent while an answer was being written belongs above the answer that replies
// to it (where the live page showed it), though it was stored after that answer had started.
// One the answer never read stays below it, above the follow-up run's answer. The export
// orders them the same way (chat/export.py, ``page_order``).
function followUpsBeforeTheirAnswer(messages) {
  const ordered = [];
  const answerAt = new Map(); // run id -> index in ``ordered`` of that run's answer
  const answers = new Map(); // run id -> that run's answer
  for (const message of messages) {
    const answer = message.kind === "injected" && message.run_id ? answers.get(message.run_id) : null;
    // A running answer may still read it; a finished one lists what it replied to.
    const repliedTo = answer && (answer.status === "running" || (answer.follow_ups || []).includes(message.id));
    const at = repliedTo ? answerAt.get(message.run_id) : undefined;
    if (at === undefined) {
      if (message.role === "assistant" && message.run_id) {
        answerAt.set(message.run_id, ordered.length);
        answers.set(message.run_id, message);
      }
      ordered.push(message);
      continue;
    }
    ordered.splice(at, 0, message);
    for (const [runId, index] of answerAt) if (index >= at) answerAt.set(runId, index + 1);
  }
  return ordered;
}

// The divider goes between the summary and the kept recent messages: before the last
// ``kept`` messages that preceded the run's query.
export function placeDivider(container, facts, queryNode) {
  for (const old of container.querySelectorAll(".compact-divider")) old.remove();
  const before = [];
  for (const node of container.querySelectorAll(".msg")) {
    if (node === queryNode) break;
    before.push(node);
  }
  const { kept } = summarizedCount(facts);
  const anchor = before[Math.max(0, before.length - kept)] || queryNode;
  const divider = summaryDivider(facts);
  if (anchor) container.insertBefore(divider, anchor);
  else container.append(divider);
  markYieldedPins(container, facts.pins_yielded, facts.strategy);
}

function historyFacts(compaction) {
  if (!compaction) return null;
  const list = Array.isArray(compaction) ? compaction : [compaction];
  return list.filter((f) => f && (!f.scope || f.scope === "history")).pop() || null;
}
