// The conversation list's download menu (Markdown or JSON), from a row's download button.
// Methods of Sidebar (sidebar.js), kept here to keep that module small.

import { el } from "./dom.js";

function exportUrl(id, format) {
  return `/api/conversations/${encodeURIComponent(id)}/export/?format=${format}`;
}

export const exportMethods = {
  setUpExportMenu() {
    this.exportMenu = el("div", { class: "export-menu", role: "menu", hidden: true });
    document.body.append(this.exportMenu);
    this.exportButton = null;
    document.addEventListener("click", (event) => {
      if (this.exportMenu.hidden) return;
      if (this.exportMenu.contains(event.target) || this.exportButton?.contains(event.target)) return;
      this.closeExportMenu();
    });
    this.exportMenu.addEventListener("keydown", (event) => {
      const items = [...this.exportMenu.querySelectorAll("a")];
      const at = items.indexOf(document.activeElement);
      if (event.key === "Escape") {
        event.preventDefault();
        event.stopPropagation();
        this.closeExportMenu({ focus: true });
      } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        const step = event.key === "ArrowDown" ? 1 : -1;
        items[(at + step + items.length) % items.length]?.focus();
      }
    });
  },

  toggleExportMenu(button, conversation) {
    if (!this.exportMenu.hidden && this.exportButton === button) return this.closeExportMenu();
    this.closeExportMenu();
    const title = this.titleOf(conversation);
    const item = (format, label) =>
      el("a", {
        role: "menuitem",
        class: "export-item",
        href: exportUrl(conversation.id, format),
        download: "",
        text: label,
        "aria-label": interpolate(gettext("%(action)s: “%(title)s”"), { action: label, title }, true),
        onclick: () => this.closeExportMenu(),
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
  },

  closeExportMenu({ focus = false } = {}) {
    if (this.exportMenu.hidden) return;
    this.exportMenu.hidden = true;
    this.exportButton?.setAttribute("aria-expanded", "false");
    if (focus) this.exportButton?.focus();
    this.exportButton = null;
  },
};
