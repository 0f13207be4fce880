// The conversation list: open, new, rename (inline), delete; a drawer on narrow screens.

import { el, icon } from "./render.js";

function titleOf(conversation) {
  return conversation.title || "New chat";
}

export class Sidebar {
  constructor({ onOpen, onNew, onRename, onDelete }) {
    this.onOpen = onOpen;
    this.onNew = onNew;
    this.onRename = onRename;
    this.onDelete = onDelete;
    this.list = document.getElementById("conversation-list");
    this.empty = document.getElementById("conversation-empty");
    this.layout = document.getElementById("layout");
    this.toggle = document.getElementById("sidebar-toggle");
    this.conversations = [];
    this.currentId = null;

    document.getElementById("new-conversation").addEventListener("click", () => {
      this.close();
      this.onNew();
    });
    this.toggle.addEventListener("click", () => (this.isOpen ? this.close() : this.open()));
    document.getElementById("sidebar-close").addEventListener("click", () => this.close());
    document.getElementById("scrim").addEventListener("click", () => this.close());
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && this.isOpen) {
        this.close();
        this.toggle.focus();
      }
    });
  }

  get isOpen() {
    return this.layout.classList.contains("sidebar-open");
  }

  open() {
    this.layout.classList.add("sidebar-open");
    this.toggle.setAttribute("aria-expanded", "true");
    document.getElementById("scrim").hidden = false;
    (this.list.querySelector('[aria-current="page"] a') || document.getElementById("new-conversation")).focus();
  }

  close() {
    if (!this.isOpen) return;
    this.layout.classList.remove("sidebar-open");
    this.toggle.setAttribute("aria-expanded", "false");
    document.getElementById("scrim").hidden = true;
  }

  set(conversations, currentId) {
    this.conversations = conversations;
    this.currentId = currentId;
    this.render();
  }

  upsert(conversation, { toTop = false } = {}) {
    const rest = this.conversations.filter((c) => c.id !== conversation.id);
    const index = this.conversations.findIndex((c) => c.id === conversation.id);
    if (toTop || index < 0) this.conversations = [conversation, ...rest];
    else this.conversations[index] = conversation;
    this.render();
  }

  removeItem(id) {
    this.conversations = this.conversations.filter((c) => c.id !== id);
    this.render();
  }

  select(id) {
    this.currentId = id;
    this.render();
  }

  render() {
    this.empty.hidden = this.conversations.length > 0;
    this.list.replaceChildren(...this.conversations.map((c) => this.item(c)));
  }

  item(conversation) {
    const current = conversation.id === this.currentId;
    const title = titleOf(conversation);
    const link = el("a", {
      class: "conv-link",
      href: `/c/${encodeURIComponent(conversation.id)}/`,
      text: title,
      title,
      onclick: (event) => {
        if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
        event.preventDefault();
        this.close();
        this.onOpen(conversation.id);
      },
    });
    const li = el(
      "li",
      { class: "conv-item", "aria-current": current ? "page" : null, "data-id": conversation.id },
      link,
      el(
        "span",
        { class: "conv-actions" },
        el(
          "button",
          {
            type: "button",
            class: "icon-btn conv-rename",
            "aria-label": `Rename “${title}”`,
            title: "Rename",
            onclick: () => this.startRename(li, conversation),
          },
          icon("edit"),
        ),
        el(
          "button",
          {
            type: "button",
            class: "icon-btn conv-delete",
            "aria-label": `Delete “${title}”`,
            title: "Delete",
            onclick: () => this.confirmDelete(conversation),
          },
          icon("trash"),
        ),
      ),
    );
    return li;
  }

  startRename(li, conversation) {
    const input = el("input", {
      class: "conv-rename-input",
      type: "text",
      value: conversation.title || "",
      maxlength: "200",
      "aria-label": "New title",
    });
    let done = false;
    const finish = async (save) => {
      if (done) return;
      done = true;
      const title = input.value.trim();
      if (save && title && title !== conversation.title) {
        await this.onRename(conversation.id, title);
      } else {
        this.render();
      }
      this.list.querySelector(`[data-id="${CSS.escape(conversation.id)}"] .conv-link`)?.focus();
    };
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        finish(true);
      } else if (event.key === "Escape") {
        event.preventDefault();
        event.stopPropagation();
        finish(false);
      }
    });
    input.addEventListener("blur", () => finish(true));
    li.replaceChildren(input);
    input.focus();
    input.select();
  }

  // An in-page modal <dialog>: focus moves into it, Escape cancels, Cancel is the default.
  confirmDelete(conversation) {
    document.querySelector(".confirm-dialog")?.remove();
    const dialog = el("dialog", { class: "confirm-dialog", "aria-labelledby": "confirm-text" });
    const close = (confirmed) => {
      dialog.close();
      dialog.remove();
      if (confirmed) this.onDelete(conversation.id);
    };
    const cancel = el("button", { type: "button", class: "btn", text: "Cancel", onclick: () => close(false) });
    dialog.append(
      el("p", { id: "confirm-text", text: `Delete “${titleOf(conversation)}”? This cannot be undone.` }),
      el(
        "div",
        { class: "confirm-actions" },
        cancel,
        el("button", { type: "button", class: "btn btn-danger", text: "Delete", onclick: () => close(true) }),
      ),
    );
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault();
      close(false);
    });
    document.body.append(dialog);
    dialog.showModal();
    cancel.focus();
  }
}
