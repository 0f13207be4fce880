// The conversation list's download menu (Markdown or JSON), from a row's download button
// (sidebar.js opens it).

import { el } from "./dom.js";

function exportUrl(id, format) {
  return `/api/conversations/${encodeURIComponent(id)}/export/?format=${format}`;
}

export class ExportMenu {
  constructor() {
    this.exportMenu = el("div", { class: "export-menu", role: "menu", hidden: true });
    document.body.append(this.exportMenu);
    this.exportButton = null;
    document.addEventListener("click", (event) => {
      if (this.exportMenu.hidden) return;
      if (this.exportMenu.contains(event.target) || this.exportButton?.contains(event.target)) return;
      this.close();
    });
    this.exportMenu.addEventListener("keydown", (event) => {
      const items = [...this.exportMenu.querySelectorAll("a")];
      const at = items.indexOf(document.activeElement);
      if (event.key === "Escape") {
        event.preventDefault();
        event.stopPropagation();
        this.close({ focus: true });
      } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        const step = event.key === "ArrowDown" ? 1 : -1;
        items[(at + step + items.length) % items.length]?.focus();
      }
    });
  }

  // ``title``: the conversation's title as the list shows it.
  toggle(button, conversation, title) {
    if (!this.exportMenu.hidden && this.exportButton === button) return this.close();
    this.close();
    const item = (format, label) =>
      el("a", {
        role: "menuitem",
        class: "export-item",
        href: exportUrl(conversation.id, format),
        download: "",
        text: label,
        "aria-label": interpolate(gettext("%(action)s: “%(title)s”"), { action: label, title }, true),
        onclick: () => this.close(),
      });
    this.exportMenu.replaceChildren(
      item("markdown", gettext("Download as Markdown")),
      item("json", gettext("Download as JSON")),
    );
    const box = button.getBoundingClientRect();
    this.exportMenu.style.top = `${Math.round(box.bottom + 4)}px`;
    this.exportMenu.style.left = `${Math.round(Math.max(8, box.right - 200))}px`;
    this.exportMenu.hidden = false;
    this.exportButton = button;
    button.setAttribute("aria-expanded", "true");
    this.exportMenu.querySelector("a").focus();
  }

  close({ focus = false } = {}) {
    if (this.exportMenu.hidden) return;
    this.exportMenu.hidden = true;
    this.exportButton?.setAttribute("aria-expanded", "false");
    if (focus) this.exportButton?.focus();
    this.exportButton = null;
  }
}
