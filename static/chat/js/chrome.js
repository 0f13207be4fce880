// Page furniture: the context gauge, the offline-model note, toasts.

import { api } from "./api.js";
import { el, formatK } from "./render.js";

export function toast(text) {
  document.querySelector(".toast")?.remove();
  const node = el("div", { class: "toast", role: "status", text });
  document.body.append(node);
  setTimeout(() => node.remove(), 4500);
}

// The offline note can be hidden; the "Offline model" badge in the top bar stays.
export function setUpOfflineNote(onHidden) {
  const note = document.getElementById("offline-note");
  if (!note) return;
  const key = "fimone.offlineNoteHidden";
  if (localStorage.getItem(key)) note.hidden = true;
  document.getElementById("offline-note-close").addEventListener("click", () => {
    note.hidden = true;
    localStorage.setItem(key, "1");
    onHidden();
  });
}

// The model a conversation uses: the configured default (the active main model, the
// environment's, or the offline model) or another main model an admin configured.
export class ModelPicker {
  constructor({ llm, models }, onChange) {
    this.select = document.getElementById("model-picker");
    const main = llm?.main || {};
    const active = (models || []).find((m) => m.active);
    const defaultName = main.offline ? `${main.model} (offline)` : active ? active.name : main.model;
    this.select.replaceChildren(
      el("option", { value: "", text: `Default: ${defaultName}` }),
      ...(models || [])
        .filter((m) => !m.active)
        .map((m) => el("option", { value: String(m.id), text: `${m.name} (${m.model})` })),
    );
    this.select.disabled = this.select.options.length < 2;
    this.select.addEventListener("change", () => onChange(this.value));
  }

  // A ModelConfig id, or null for the default.
  get value() {
    return this.select.value ? Number(this.select.value) : null;
  }

  set value(id) {
    const wanted = id === null || id === undefined ? "" : String(id);
    // A pick that is no longer offered (deleted, or now the active default) shows as default.
    this.select.value = [...this.select.options].some((o) => o.value === wanted) ? wanted : "";
  }
}

// How full the model's usable input budget is for this conversation; details on click.
export class Gauge {
  constructor() {
    this.button = document.getElementById("gauge");
    this.detail = document.getElementById("gauge-detail");
    this.button.addEventListener("click", () => this.show(this.detail.hidden));
    document.addEventListener("click", (event) => {
      if (!this.detail.hidden && !event.target.closest(".gauge-wrap")) this.show(false);
    });
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && !this.detail.hidden) {
        this.show(false);
        this.button.focus();
      }
    });
  }

  show(open) {
    this.detail.hidden = !open;
    this.button.setAttribute("aria-expanded", String(open));
  }

  hide() {
    this.button.hidden = true;
    this.show(false);
  }

  async refresh(conversationId) {
    const gauge = this.button;
    try {
      const info = await api.contextGauge(conversationId);
      const limit = info.budget.effective_input_tokens || info.budget.usable_input_tokens;
      const meter = document.getElementById("gauge-meter");
      meter.value = info.percent;
      // History already summarised to fit is the normal state of a long conversation, not
      // an alarm: the meter stays calm and the label says what happened.
      meter.optimum = info.summarised ? 100 : 0;
      gauge.classList.toggle("summarised", Boolean(info.summarised));
      document.getElementById("gauge-label").textContent = info.summarised
        ? "History summarised to fit"
        : "Context";
      document.getElementById("gauge-text").textContent =
        `${formatK(info.used_tokens)} / ${formatK(limit)}`;
      const model = info.llm.offline ? `${info.llm.model} (offline)` : info.llm.model;
      const detail = [
        `Model: ${model}`,
        `Usable input budget: ${limit.toLocaleString()} tokens ` +
          `(${info.budget.context_size.toLocaleString()} context − ` +
          `${info.budget.max_output_tokens.toLocaleString()} output − 4,000 reserve; ` +
          `from ${info.budget.source})`,
        `History: about ${info.used_tokens.toLocaleString()} tokens in ${info.message_count} messages`,
        `DAG steps use the fast model's budget: ${info.fast_budget.usable_input_tokens.toLocaleString()} tokens`,
        info.summarised
          ? "Older messages are summarised so the conversation fits the model's context; " +
            "recent ones are kept word for word. This is normal for a long conversation."
          : "",
        info.will_compact ? "The next answer will summarise older messages to fit." : "",
      ].filter(Boolean).join("\n");
      gauge.title = detail;
      this.detail.textContent = detail;
      const state = info.summarised ? " (history summarised to fit)" : "";
      gauge.setAttribute(
        "aria-label",
        `Context used: ${info.percent}% of the ${model} budget${state}. Show details`,
      );
      gauge.hidden = false;
    } catch (err) {
      this.hide();
    }
  }
}
