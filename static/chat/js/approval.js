// Tool calls waiting for the user's approval (docs/protocol.md, "Tool approval"): a card in
// the answer with Approve / Always for this chat / Decline while the run waits; once
// answered (here, in another tab, or by the time-out) a line in the answer's steps says
// how it ended. Live events and a replayed record (reload, run.active) draw the same way.

import { el } from "./dom.js";

let sendAnswer = () => false; // (frame) -> bool, set by the run controller
let onUnsent = () => {};

// How the cards send the user's answer (the page's socket) and say that it could not.
export function setApprovalTransport(send, unsent) {
  sendAnswer = send;
  onUnsent = unsent;
}

const ENDED = {
  once: gettext("Approved once: %(tool)s"),
  conversation: gettext("Approved for this chat: %(tool)s"),
  decline: gettext("Declined: %(tool)s was not run"),
  timed_out: gettext("Not answered in time: %(tool)s was not run"),
  cancelled: gettext("Stopped while %(tool)s waited for approval"),
};

function cards(view) {
  if (!view.approvalCards) view.approvalCards = new Map(); // request id -> {node, tool}
  return view.approvalCards;
}

// A step of kind "approval" (a replayed record) or a ``tool.approval`` event.
export function showApproval(view, frame) {
  const requestId = String(frame.request_id || "");
  const tool = String(frame.tool || frame.name || "");
  if (!requestId) return;
  const status = frame.status || "pending";
  if (status !== "pending") return endApproval(view, { request_id: requestId, decision: status, tool });
  if (cards(view).has(requestId)) return;
  const titleId = `approval-${requestId}`;
  const buttons = [
    ["once", gettext("Approve"), "btn btn-approve"],
    ["conversation", gettext("Always for this chat"), "btn"],
    ["decline", gettext("Decline"), "btn btn-decline"],
  ].map(([decision, label, cls]) =>
    el("button", {
      type: "button",
      class: cls,
      text: label,
      "data-decision": decision,
      onclick: () => answer(view, requestId, decision),
    }),
  );
  const source = frame.source && frame.source !== "builtin" ? frame.source : "";
  const node = el(
    "section",
    { class: "approval-card", role: "group", "aria-labelledby": titleId, "data-request-id": requestId },
    el(
      "p",
      { class: "approval-title", id: titleId, role: "alert" },
      interpolate(gettext("Allow %(tool)s to run?"), { tool }, true),
    ),
    source ? el("p", { class: "approval-source", text: interpolate(gettext("From %(source)s"), { source }, true) }) : null,
    frame.description ? el("p", { class: "approval-description", text: frame.description }) : null,
    el("pre", { class: "approval-arguments", "aria-label": gettext("Arguments"), text: prettyArguments(frame.arguments) }),
    el("div", { class: "approval-actions" }, ...buttons),
  );
  cards(view).set(requestId, { node, tool });
  view.answer.before(node);
}

function answer(view, requestId, decision) {
  const entry = cards(view).get(requestId);
  if (!entry) return;
  if (!sendAnswer({ type: "approval", request_id: requestId, decision })) {
    onUnsent(gettext("Not connected: cannot answer right now."));
    return;
  }
  for (const button of entry.node.querySelectorAll("button")) button.disabled = true;
  entry.node.setAttribute("aria-busy", "true");
}

// ``tool.approval.resolved`` (or a record entry that was answered): the card goes, a line stays.
export function endApproval(view, { request_id: requestId, decision, tool }) {
  const entry = cards(view).get(String(requestId));
  const hadFocus = entry?.node.contains(document.activeElement);
  entry?.node.remove();
  cards(view).delete(String(requestId));
  const name = tool || entry?.tool || "";
  const text = ENDED[decision] || ENDED.cancelled;
  view.addNote(el("div", { class: `step-note approval-ended approval-${decision}`, text: interpolate(text, { tool: name }, true) }));
  if (hadFocus) document.getElementById("prompt")?.focus();
}

// The run ended: no card can be answered any more.
export function dropApprovals(view) {
  for (const [requestId, entry] of cards(view)) {
    endApproval(view, { request_id: requestId, decision: "cancelled", tool: entry.tool });
  }
}

// Why a run stopped by itself (``note`` of ``run.cancelled`` and of a stored answer).
export function showStopNote(view, note) {
  const text = note?.message;
  view.footer.querySelector(".run-note")?.remove();
  if (text) view.footer.append(el("p", { class: "run-note", role: "status", text }));
}

function prettyArguments(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch (err) {
    return String(text ?? "");
  }
}
