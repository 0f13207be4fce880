// Compaction the user can see and steer (docs/protocol.md, "HTTP API"): the "Earlier context was
// summarized" divider opens onto the summary exactly as the model got it, the facts the
// fact check put back or found missing, and the messages it covers (greyed: still stored);
// the summary in force can be edited or discarded; any question or answer can be pinned
// "keep verbatim". Text from the server only ever goes in through textContent.

import { api } from "./api.js";
import { el, icon, placeAction } from "./dom.js";
import { compactDivider, maskedList, userActions } from "./render.js";

const SUMMARY_PREFIX = "[Conversation summary]";
const COVERED_PAGE = 50;

// The conversation the page shows (set by the app once): every call below is about it.
let conversationOf = () => null;
export function setSteeringConversation(getId) {
  conversationOf = getId;
}

function messagesText(n) {
  return interpolate(ngettext("%(count)s message", "%(count)s messages", n), { count: n }, true);
}

// ---- the divider ---------------------------------------------------------------------------

let panelSeq = 0;

// The divider for history ``facts``: a toggle that opens the summary panel when the history
// was summarised (a truncation has no summary to show: the plain line).
export function summaryDivider(facts) {
  const line = compactDivider(facts);
  const masked = maskedList(facts);
  if (masked) line.append(masked);
  if (facts.strategy === "truncate" || facts.strategy === "mask") return line;
  const panelId = `summary-panel-${++panelSeq}`;
  const toggle = el(
    "button",
    {
      type: "button",
      class: "compact-divider-toggle",
      "aria-expanded": "false",
      "aria-controls": panelId,
      title: `${line.title}\n${gettext("Open to see, edit or discard the summary")}`,
    },
    line.textContent,
  );
  const panel = el("div", {
    class: "summary-panel",
    id: panelId,
    role: "region",
    "aria-label": gettext("Summary of earlier context"),
    hidden: true,
  });
  const wrap = el("div", { class: "compact-divider openable" }, toggle, panel);
  if (masked) wrap.append(masked);
  let loaded = false;
  toggle.addEventListener("click", () => {
    const open = toggle.getAttribute("aria-expanded") !== "true";
    toggle.setAttribute("aria-expanded", String(open));
    panel.hidden = !open;
    wrap.classList.toggle("open", open);
    if (open && !loaded) {
      loaded = true;
      loadSummary(panel, facts.summary_id ?? "current");
    }
  });
  return wrap;
}

// A compaction the engine made during a run (its steps show it): the note opens like the
// divider — onto the stored summary when the run stored it (it stood for loaded history
// only), else onto the text and fact check the event carried.
export function compactionNote(frame, text) {
  const panelId = `summary-panel-${++panelSeq}`;
  const toggle = el(
    "button",
    { type: "button", class: "step-note-toggle", "aria-expanded": "false", "aria-controls": panelId },
    text,
  );
  const panel = el("div", {
    class: "summary-panel",
    id: panelId,
    role: "region",
    "aria-label": gettext("Summary made during this answer"),
    hidden: true,
  });
  let loaded = false;
  toggle.addEventListener("click", () => {
    const open = toggle.getAttribute("aria-expanded") !== "true";
    toggle.setAttribute("aria-expanded", String(open));
    panel.hidden = !open;
    if (!open || loaded) return;
    loaded = true;
    if (frame.summary_id) loadSummary(panel, frame.summary_id);
    else renderRunSummary(panel, frame);
  });
  return el("div", { class: "step-note openable" }, toggle, panel);
}

function renderRunSummary(panel, frame) {
  const count = Number(frame.summarized_count) || 0;
  const parts = [
    el(
      "div",
      { class: "summary-head" },
      el("strong", { text: gettext("What the model received instead") }),
      el("span", {
        class: "summary-meta",
        text: interpolate(
          gettext("stands for %(messages)s: earlier context and this answer's steps above"),
          { messages: messagesText(count) },
          true,
        ),
      }),
    ),
    el("pre", { class: "summary-text", tabindex: "0", text: frame.summary || "" }),
    frame.summary_clipped
      ? el("p", { class: "summary-status", text: gettext("Only the start of this summary was kept with the answer.") })
      : null,
    factsBlock(frame),
  ];
  panel.replaceChildren(...parts.filter(Boolean));
}

async function loadSummary(panel, summaryId) {
  const conversationId = conversationOf();
  panel.replaceChildren(el("p", { class: "summary-status", role: "status", text: gettext("Loading…") }));
  try {
    renderSummary(panel, await api.getSummary(conversationId, summaryId));
  } catch (err) {
    const text =
      err.status === 404
        ? gettext("This summary is no longer stored: the next answer summarises afresh if needed.")
        : interpolate(gettext("Could not load the summary: %(reason)s"), { reason: err.message }, true);
    panel.replaceChildren(el("p", { class: "summary-status summary-error", role: "alert", text }));
  }
}

function statusLine(summary) {
  if (summary.discarded) return gettext("Discarded: the next answer summarises the original messages afresh.");
  if (!summary.current) return gettext("A newer summary has replaced this one.");
  if (summary.edited) return gettext("Edited by you: the model gets your text exactly as written.");
  return null;
}

function renderSummary(panel, summary) {
  const status = statusLine(summary);
  const text = el("pre", { class: "summary-text", tabindex: "0", text: summary.content });
  const head = el(
    "div",
    { class: "summary-head" },
    el("strong", { text: gettext("What the model received instead") }),
    el("span", {
      class: "summary-meta",
      text: interpolate(
        gettext("stands for %(messages)s · %(tokens)s tokens"),
        { messages: messagesText(summary.covered_count), tokens: summary.tokens },
        true,
      ),
    }),
  );
  const parts = [
    head,
    status ? el("p", { class: `summary-status${summary.discarded ? " discarded" : ""}`, text: status }) : null,
    text,
    factsBlock(summary),
    coveredBlock(summary),
    summary.current && !summary.discarded ? actionsBlock(panel, summary, text) : null,
  ];
  panel.replaceChildren(...parts.filter(Boolean));
}

function factList(label, facts, kind) {
  return el(
    "div",
    { class: `summary-facts ${kind}` },
    el("span", { class: "facts-label", text: label }),
    el("ul", { class: "fact-chips" }, ...facts.map((fact) => el("li", { class: "fact-chip", text: fact }))),
  );
}

function factsBlock(summary) {
  const appended = summary.facts_appended || [];
  const putBack = new Set(appended);
  const stillMissing = (summary.facts_missing || []).filter((f) => !putBack.has(f));
  if (!appended.length && !stillMissing.length) {
    return el("p", { class: "summary-facts none", text: gettext("The fact check found no fact missing from it.") });
  }
  return el(
    "div",
    { class: "summary-facts-box" },
    appended.length
      ? factList(gettext("Put back by the fact check (they had been left out):"), appended, "appended")
      : null,
    stillMissing.length
      ? factList(
          summary.edited
            ? gettext("Found by the fact check, not in your edited text:")
            : gettext("Found missing and not put back (no room):"),
          stillMissing,
          "missing",
        )
      : null,
  );
}

function coveredBlock(summary) {
  const list = el("ol", { class: "covered-list", hidden: true, "aria-label": gettext("Messages the summary stands for") });
  const more = el("button", { type: "button", class: "text-btn covered-more", hidden: true, text: gettext("Show more") });
  const label = interpolate(gettext("Show the %(messages)s it stands for"), { messages: messagesText(summary.covered_count) }, true);
  const toggle = el("button", { type: "button", class: "text-btn covered-toggle", "aria-expanded": "false", text: label });
  let after = null;
  let started = false;
  let hasMore = false;
  const loadPage = async () => {
    more.disabled = true;
    try {
      const page = await api.summaryMessages(conversationOf(), summary.id, { after, limit: COVERED_PAGE });
      list.append(...page.messages.map(coveredItem));
      if (page.messages.length) after = page.messages[page.messages.length - 1].id;
      hasMore = page.has_more;
      more.hidden = !hasMore;
    } catch (err) {
      list.append(el("li", { class: "summary-error", role: "alert", text: err.message }));
    } finally {
      more.disabled = false;
    }
  };
  toggle.addEventListener("click", () => {
    const open = toggle.getAttribute("aria-expanded") !== "true";
    toggle.setAttribute("aria-expanded", String(open));
    toggle.textContent = open ? gettext("Hide the original messages") : label;
    list.hidden = !open;
    if (!open) more.hidden = true;
    else if (!started) {
      started = true;
      loadPage();
    } else more.hidden = !hasMore;
  });
  more.addEventListener("click", loadPage);
  return el("div", { class: "covered" }, toggle, list, more);
}

function coveredItem(message) {
  return el(
    "li",
    { class: `covered-msg ${message.role}`, "data-message-id": message.id },
    el("span", { class: "covered-who", text: message.role === "user" ? gettext("You") : "fimone" }),
    el("span", { class: "covered-text", text: message.content }),
  );
}

function withoutPrefix(content) {
  return content.startsWith(SUMMARY_PREFIX) ? content.slice(SUMMARY_PREFIX.length).replace(/^\s*\n/, "") : content;
}

function actionsBlock(panel, summary, textNode) {
  const error = el("p", { class: "summary-error", role: "alert", hidden: true });
  const fail = (err) => {
    error.textContent = err.message;
    error.hidden = false;
  };
  const edit = el("button", { type: "button", class: "btn summary-edit" }, icon("edit"), ` ${gettext("Edit summary")}`);
  const discard = el("button", { type: "button", class: "btn summary-discard" }, icon("trash"), ` ${gettext("Discard")}`);
  const actions = el("div", { class: "summary-actions" }, edit, discard);
  edit.addEventListener("click", () => {
    const box = el("textarea", { class: "summary-editor", rows: "8", "aria-label": gettext("Edit the summary") });
    box.value = withoutPrefix(summary.content);
    const cancel = () => {
      form.replaceWith(textNode);
      actions.hidden = false;
    };
    const save = el("button", { type: "button", class: "btn btn-send-edit", text: gettext("Save") });
    save.addEventListener("click", async () => {
      save.disabled = true;
      try {
        renderSummary(panel, await api.editSummary(conversationOf(), summary.id, box.value));
      } catch (err) {
        save.disabled = false;
        fail(err);
      }
    });
    const form = el(
      "div",
      { class: "summary-edit-form" },
      box,
      el("p", { class: "summary-hint", text: gettext("The model gets your text exactly as written, from the next answer on.") }),
      el(
        "div",
        { class: "edit-actions" },
        el("button", { type: "button", class: "btn", text: gettext("Cancel"), onclick: cancel }),
        save,
      ),
    );
    textNode.replaceWith(form);
    actions.hidden = true;
    box.focus();
  });
  discard.addEventListener("click", async () => {
    if (!window.confirm(gettext("Discard this summary? The next answer summarises the original messages afresh."))) return;
    discard.disabled = true;
    try {
      await api.discardSummary(conversationOf(), summary.id);
      renderSummary(panel, await api.getSummary(conversationOf(), summary.id));
    } catch (err) {
      discard.disabled = false;
      fail(err);
    }
  });
  return el("div", { class: "summary-actions-box" }, actions, error);
}

// ---- pins -----------------------------------------------------------------------------------

const PIN_TITLE = gettext("Keep this message verbatim when earlier context is summarised");

function setPinned(node, pinned) {
  node.dataset.pinned = pinned ? "true" : "false";
  node.classList.toggle("pinned", pinned);
  const button = node.querySelector(".pin-btn");
  if (button) {
    button.setAttribute("aria-pressed", String(pinned));
    button.lastChild.textContent = ` ${pinned ? gettext("Pinned") : gettext("Pin")}`;
  }
  if (!pinned) node.querySelector(".pin-note")?.remove();
}

function pinButton(node) {
  const button = el(
    "button",
    { type: "button", class: "text-btn pin-btn", "aria-pressed": "false", title: PIN_TITLE },
    icon("pin"),
    el("span"),
  );
  button.addEventListener("click", async () => {
    const pinned = node.dataset.pinned !== "true";
    button.disabled = true;
    try {
      const message = await api.pinMessage(conversationOf(), node.dataset.messageId, pinned);
      setPinned(node, Boolean(message.pinned));
    } catch (err) {
      node.dispatchEvent(new CustomEvent("fimone:toast", { bubbles: true, detail: err.message }));
    } finally {
      button.disabled = false;
    }
  });
  return button;
}

function offerPin(node) {
  if (!node.dataset.messageId || node.querySelector(".pin-btn")) return;
  if (node.classList.contains("msg-assistant")) {
    const actions = node.querySelector(".msg-actions");
    if (!actions) return;
    placeAction(actions, pinButton(node));
  } else {
    userActions(node).prepend(pinButton(node));
  }
  setPinned(node, node.dataset.pinned === "true");
}

// Every question and answer with a stored id gets a pin button, whenever it appears or
// gets its id (history, live runs, catch-up), without the places that draw them knowing.
export function watchPins(container) {
  const visit = (node) => {
    if (!(node instanceof Element)) return;
    const msg = node.closest(".msg");
    if (msg) offerPin(msg);
    else for (const inner of node.querySelectorAll(".msg[data-message-id]")) offerPin(inner);
  };
  for (const node of container.querySelectorAll(".msg[data-message-id]")) offerPin(node);
  new MutationObserver((records) => {
    for (const record of records) {
      if (record.type === "attributes") visit(record.target);
      else {
        visit(record.target);
        for (const added of record.addedNodes) visit(added);
      }
    }
  }).observe(container, { childList: true, subtree: true, attributes: true, attributeFilter: ["data-message-id"] });
}

// The pins that had to yield to the cap on the newest load say so (summarised, or left out
// when the history was only shortened).
export function markYieldedPins(container, ids, strategy = "llm") {
  const text =
    strategy === "truncate"
      ? gettext(
          "This pin had to yield: pinned messages may fill at most half of the context, so the oldest were left out of the last answer's context.",
        )
      : gettext(
          "This pin had to yield: pinned messages may fill at most half of the context, so the oldest were summarised with the rest for the last answer.",
        );
  for (const old of container.querySelectorAll(".pin-note")) old.remove();
  for (const id of ids || []) {
    const node = container.querySelector(`.msg[data-message-id="${CSS.escape(String(id))}"]`);
    if (!node || node.dataset.pinned !== "true") continue;
    node.append(
      el("p", { class: "pin-note", role: "note", text }),
    );
  }
}
