// Versions of an edited question or a regenerated answer: "‹ 2 / 3 ›" beside it, and the
// editor that makes a new version of the newest question. Which version is shown is kept
// on the server (POST …/messages/<id>/show/, docs/protocol.md "Versions"), so a reload and
// every other tab show the same branch; the page then reloads its messages.

import { api } from "./api.js";
import { el, icon, placeAction } from "./dom.js";
import { userActions } from "./render.js";

// The switcher for a message with several ``versions`` (ids, oldest first), or null.
// ``onShow(id, direction)`` shows another version ("prev" or "next" was pressed).
export function versionSwitcher(messageId, versions, onShow) {
  const ids = (versions || []).map(Number);
  const index = ids.indexOf(Number(messageId));
  if (ids.length < 2 || index < 0) return null;
  const step = (to, label, glyph) =>
    el("button", {
      type: "button",
      class: `text-btn version-step ${to < index ? "version-prev" : "version-next"}`,
      "aria-label": label,
      disabled: to < 0 || to >= ids.length,
      text: glyph,
      onclick: (event) => {
        event.currentTarget.disabled = true;
        onShow(ids[to], to < index ? "prev" : "next");
      },
    });
  const where = interpolate(gettext("Version %(index)s of %(count)s"), { index: index + 1, count: ids.length }, true);
  return el(
    "div",
    { class: "versions", role: "group", "aria-label": where },
    step(index - 1, gettext("Previous version"), "‹"),
    el("span", { class: "version-count", "aria-hidden": "true", text: `${index + 1} / ${ids.length}` }),
    step(index + 1, gettext("Next version"), "›"),
  );
}

// Puts (or replaces) the switcher of a question node, or of an answer (``actions``: its row
// of buttons, kept in one order by ``placeAction``).
export function showVersions(node, versions, onShow, { actions = null } = {}) {
  node.querySelector(".versions")?.remove();
  const switcher = onShow ? versionSwitcher(node.dataset.messageId, versions, onShow) : null;
  if (!switcher) return;
  node.dataset.versions = versions.join(",");
  if (actions) return placeAction(actions, switcher);
  const row = userActions(node);
  row.insertBefore(switcher, row.querySelector(".btn-edit")); // after Pin, before Edit
}

// The newest question can be edited and sent again (a new version): its bubble becomes a
// small editor.
// ``onSend(text)`` returns false when the edit could not be sent (the editor stays).
export function offerEdit(node, onSend) {
  node.querySelector(".btn-edit")?.remove();
  if (!onSend) return;
  const bubble = node.querySelector(".bubble");
  if (!bubble) return;
  const button = el(
    "button",
    { type: "button", class: "text-btn btn-edit", "aria-label": gettext("Edit and resend this message") },
    icon("edit"),
    ` ${gettext("Edit")}`,
  );
  button.addEventListener("click", () => {
    const box = el("textarea", { class: "edit-box", "aria-label": gettext("Edit your message"), rows: "3" });
    box.value = bubble.textContent;
    const close = () => {
      editor.replaceWith(bubble);
      userActions(node).append(button);
    };
    const send = () => {
      const text = box.value.trim();
      if (text && onSend(text) !== false) close();
    };
    box.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        send();
      } else if (event.key === "Escape") {
        event.preventDefault();
        close();
      }
    });
    const editor = el(
      "div",
      { class: "edit-form" },
      box,
      el(
        "div",
        { class: "edit-actions" },
        el("button", { type: "button", class: "btn", text: gettext("Cancel"), onclick: close }),
        el("button", { type: "button", class: "btn btn-send-edit", text: gettext("Send"), onclick: send }),
      ),
    );
    bubble.replaceWith(editor);
    button.remove();
    box.focus();
    box.setSelectionRange(box.value.length, box.value.length);
  });
  userActions(node).append(button);
}


// An edited question's run started: the old question and everything after it leave the
// page (they are the earlier version's branch, one switch away).
export function dropBranch(messagesEl, messageId, views) {
  const old = messagesEl.querySelector(`.msg-user[data-message-id="${CSS.escape(String(messageId))}"]`);
  if (!old) return;
  for (let node = old.nextElementSibling; node; ) {
    const next = node.nextElementSibling;
    if (node.classList.contains("msg") || node.classList.contains("compact-divider")) {
      const id = node.dataset.messageId;
      if (id) views.delete(id);
      node.remove();
    }
    node = next;
  }
  old.remove();
}

// Switching versions for the run controller. host: {conversationId(), busy() -> bool,
// toast(text), reloadMessages(), reloadConversation()}.
export class VersionSwitching {
  constructor(host) {
    this.host = host;
    this.mine = new Set(); // switches made here: their broadcast needs no second reload
  }

  async show(id, direction = "next") {
    const conversationId = this.host.conversationId();
    if (!conversationId) return;
    if (this.host.busy()) {
      this.host.toast(gettext("Wait for the current answer, or stop it first."));
      return this.host.reloadMessages(); // the switcher's buttons come back
    }
    this.mine.add(Number(id));
    try {
      await api.showVersion(conversationId, id);
    } catch (err) {
      this.mine.delete(Number(id));
      this.host.toast(err.message || gettext("That version cannot be shown right now."));
    }
    await this.host.reloadMessages();
    this.host.reloadConversation(); // an automatic title follows the first question
    // The page was drawn again: the keyboard stays on the switcher of the version shown.
    const switcher = document.querySelector(`.msg[data-message-id="${CSS.escape(String(id))}"] .versions`);
    (switcher?.querySelector(`.version-${direction}:enabled`) || switcher?.querySelector(".version-step:enabled"))?.focus();
  }

  // ``versions.shown``: another tab (or this one) showed a version.
  shown(frame) {
    if (this.mine.delete(Number(frame.message_id))) return;
    this.host.reloadMessages();
    this.host.reloadConversation();
  }

  // ``run.started`` of an edit or a regenerate: the new question or answer is the newest
  // of its versions.
  started(frame, messagesEl, view, onShow) {
    if (!frame.versions) return;
    if (frame.edit_of != null) {
      const node = messagesEl.querySelector(`.msg-user[data-message-id="${CSS.escape(String(frame.message_id))}"]`);
      if (node) showVersions(node, frame.versions, onShow);
      this.host.reloadConversation();
    } else if (frame.retry_of != null && view) {
      showVersions(view.node, frame.versions, onShow, { actions: view.actions });
    }
  }
}
