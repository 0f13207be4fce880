// What the project panel and a chat's settings share: an instructions box with its
// character count against the server's limit, and a modal <dialog> built the same way as
// the delete confirmation (focus inside, Escape cancels). Instructions go whole into every
// model call, so the count shows how close they are to the limit; text past it is kept in
// the box and the server's refusal is shown beside it (docs/projects.md).

import { el } from "./dom.js";

const number = (n) => n.toLocaleString(document.documentElement.lang || undefined);

export class InstructionsField {
  // ``id``: the textarea's id; ``maxChars``: the server's limit.
  constructor({ id, label, hint, value = "", maxChars }) {
    this.maxChars = maxChars;
    this.textarea = el("textarea", {
      id,
      class: "instructions-box",
      rows: "6",
      spellcheck: "true",
      "aria-describedby": `${id}-hint ${id}-count`,
    });
    this.textarea.value = value;
    this.count = el("span", { id: `${id}-count`, class: "instructions-count" });
    this.node = el(
      "div",
      { class: "field instructions-field" },
      el(
        "div",
        { class: "field-head" },
        el("label", { for: id, text: label }),
        this.count,
      ),
      el("p", { id: `${id}-hint`, class: "field-hint", text: hint }),
      this.textarea,
    );
    this.textarea.addEventListener("input", () => this.refresh());
    this.refresh();
  }

  get value() {
    return this.textarea.value;
  }

  set value(text) {
    this.textarea.value = text;
    this.refresh();
  }

  // Counted as the server counts: the text without its surrounding blanks.
  get over() {
    return Math.max(0, this.textarea.value.trim().length - this.maxChars);
  }

  refresh() {
    const used = this.textarea.value.trim().length;
    const over = this.over;
    this.count.textContent = over
      ? interpolate(
          ngettext(
            "%(used)s / %(limit)s characters: %(over)s too many",
            "%(used)s / %(limit)s characters: %(over)s too many",
            over,
          ),
          { used: number(used), limit: number(this.maxChars), over: number(over) },
          true,
        )
      : interpolate(gettext("%(used)s / %(limit)s characters"), { used: number(used), limit: number(this.maxChars) }, true);
    this.count.classList.toggle("over", over > 0);
    this.textarea.setAttribute("aria-invalid", String(over > 0));
  }
}

// A modal dialog: ``build(dialog)`` fills it; closing it (Escape, or ``dialog.close()``)
// removes it from the page and calls ``onClose``.
export function openDialog({ className, labelledBy, build, onClose = () => {} }) {
  const dialog = el("dialog", { class: `panel-dialog ${className}`, "aria-labelledby": labelledBy });
  dialog.addEventListener("close", () => {
    dialog.remove();
    onClose();
  });
  build(dialog);
  document.body.append(dialog);
  dialog.showModal();
  return dialog;
}

// The line that says what went wrong with a save, in the dialog, next to what was typed.
export function errorLine(id) {
  return el("p", { id, class: "panel-error", role: "alert", hidden: true });
}

export function showError(node, text) {
  node.textContent = text || "";
  node.hidden = !text;
}
