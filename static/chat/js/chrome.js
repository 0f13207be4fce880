// Page furniture: the context gauge, the offline-model note, toasts.

import { api } from "./api.js";
import { el } from "./dom.js";
import { closeUsageDetails, formatK } from "./usage_card.js";

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
  // On a phone the note is one line until asked for the rest (it took a third of the screen).
  const more = document.getElementById("offline-note-more");
  more?.addEventListener("click", () => {
    const open = more.getAttribute("aria-expanded") !== "true";
    more.setAttribute("aria-expanded", String(open));
    note.classList.toggle("expanded", open);
  });
  document.getElementById("offline-note-close").addEventListener("click", () => {
    note.hidden = true;
    localStorage.setItem(key, "1");
    onHidden();
  });
}

// The offline badge and note follow the model that answers the conversation on screen:
// shown while the built-in model answers (the default when no model is configured, or
// picked beside the configured ones), gone while a configured model answers. A note the
// user hid stays hidden.
class OfflineMarks {
  constructor(defaultIsOffline) {
    this.defaultIsOffline = Boolean(defaultIsOffline);
    this.badge = document.getElementById("offline-badge");
    this.note = document.getElementById("offline-note");
  }

  // ``pick``: the conversation's (ModelPicker's value).
  follow(pick) {
    const offline = pick === BUILTIN || (this.defaultIsOffline && pick === null);
    if (this.badge) this.badge.hidden = !offline;
    if (this.note) this.note.dataset.answering = String(offline);
  }
}

// The picker's value for the built-in offline model picked beside the configured ones.
export const BUILTIN = "builtin";

// A conversation's pick of model, as the picker holds it: a ModelConfig id, ``BUILTIN``, or
// null for the configured default.
export function pickOf(conversation) {
  if (conversation.builtin_model) return BUILTIN;
  return conversation.model_config ?? null;
}

// A pick as the conversation's fields (docs/protocol.md): one of them set, or neither.
export function modelFields(pick) {
  return { model_config: typeof pick === "number" ? pick : null, builtin_model: pick === BUILTIN };
}

// The models a conversation may use, as the picker's options: the configured default (the
// active main model, the environment's, or the offline model) as "", every other main
// model an admin configured by its id, and the built-in offline model beside them
// (``builtin``: false leaves it out).
export function modelChoices({ llm, models, builtinModel }, { builtin = true } = {}) {
  const main = llm?.main || {};
  const active = (models || []).find((m) => m.active);
  const offlineName = (model) => interpolate(gettext("%(model)s (offline)"), { model }, true);
  const defaultName = main.offline ? offlineName(main.model) : active ? active.name : main.model;
  return [
    { value: "", text: interpolate(gettext("Default: %(model)s"), { model: defaultName }, true) },
    ...(models || []).filter((m) => !m.active).map((m) => ({ value: String(m.id), text: `${m.name} (${m.model})` })),
    // Where the default is the built-in model, it is that option already.
    ...(builtin && !main.offline && builtinModel ? [{ value: BUILTIN, text: offlineName(builtinModel) }] : []),
  ];
}

// The model a conversation uses: the configured default, another main model an admin
// configured, or the built-in offline model beside them.
export class ModelPicker {
  constructor(config, onChange) {
    this.select = document.getElementById("model-picker");
    const main = config.llm?.main || {};
    this.select.replaceChildren(...modelChoices(config).map((choice) => el("option", choice)));
    this.select.disabled = this.select.options.length < 2;
    this.marks = new OfflineMarks(main.offline);
    this.select.addEventListener("change", () => {
      this.marks.follow(this.value);
      onChange(this.value);
    });
  }

  // A ModelConfig id, ``BUILTIN``, or null for the default.
  get value() {
    const chosen = this.select.value;
    if (!chosen) return null;
    return chosen === BUILTIN ? BUILTIN : Number(chosen);
  }

  set value(pick) {
    const wanted = pick === null || pick === undefined ? "" : String(pick);
    // A pick that is no longer offered (deleted, or now the active default) shows as default.
    this.select.value = [...this.select.options].some((o) => o.value === wanted) ? wanted : "";
    this.marks.follow(this.value);
  }
}

// Where a budget's figures come from (contextmgmt.budget), as the gauge's details say it.
const BUDGET_SOURCES = {
  db: gettext("the admin's model configuration"),
  env: gettext("the environment"),
  default: gettext("fimone's defaults"),
};

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
    if (open) closeUsageDetails(); // one popover open at a time
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
        ? gettext("History summarised to fit")
        : gettext("Context");
      document.getElementById("gauge-text").textContent =
        `${formatK(info.used_tokens)} / ${formatK(limit)}`;
      const model = info.llm.offline
        ? interpolate(gettext("%(model)s (offline)"), { model: info.llm.model }, true)
        : info.llm.model;
      const number = (n) => n.toLocaleString(document.documentElement.lang || undefined);
      const detail = [
        interpolate(gettext("Model: %(model)s"), { model }, true),
        interpolate(
          gettext(
            "Usable input budget: %(limit)s tokens (%(context)s context − %(output)s output − " +
              "%(reserve)s reserve; from %(source)s)",
          ),
          {
            limit: number(limit),
            context: number(info.budget.context_size),
            output: number(info.budget.max_output_tokens),
            reserve: number(4000),
            source: BUDGET_SOURCES[info.budget.source] || info.budget.source,
          },
          true,
        ),
        interpolate(
          ngettext(
            "History: about %(tokens)s tokens in %(count)s message",
            "History: about %(tokens)s tokens in %(count)s messages",
            info.message_count,
          ),
          { tokens: number(info.history_tokens), count: info.message_count },
          true,
        ),
        tierLine(info, number),
        interpolate(
          gettext("DAG steps use the fast model's budget: %(tokens)s tokens"),
          { tokens: number(info.fast_budget.usable_input_tokens) },
          true,
        ),
        info.summarised
          ? gettext(
              "Older messages are summarised so the conversation fits the model's context; " +
                "recent ones are kept word for word. This is normal for a long conversation.",
            )
          : "",
        info.will_compact ? gettext("The next answer will summarise older messages to fit.") : "",
        ledgerSummary(info.ledger, number),
      ].filter(Boolean).join("\n");
      gauge.title = detail;
      this.detail.textContent = detail;
      const label = info.summarised
        ? gettext(
            "Context used: %(percent)s% of the %(model)s budget (history summarised to fit). " +
              "Show details",
          )
        : gettext("Context used: %(percent)s% of the %(model)s budget. Show details");
      gauge.setAttribute("aria-label", interpolate(label, { percent: info.percent, model }, true));
      gauge.hidden = false;
    } catch (err) {
      this.hide();
    }
  }
}

// The request tier by tier (system prompt, the project's and the conversation's
// instructions, tool definitions, history), and when the tool definitions were cut to their
// share, how many go with each call of how many there are.
function tierLine(info, number) {
  const tiers = info.tiers;
  if (!tiers) return "";
  const line = interpolate(
    gettext(
      "Sent before the question: system prompt %(system)s, instructions %(instructions)s, " +
        "tool definitions %(tools)s, history %(history)s tokens",
    ),
    {
      system: number(tiers.system),
      instructions: number(tiers.instructions),
      tools: number(tiers.tools),
      history: number(tiers.history),
    },
    true,
  );
  const tools = info.tools || {};
  if (!tools.deferred) return line;
  const cut = interpolate(
    gettext("%(offered)s of %(enabled)s tool definitions sent; the model finds the others with find_tools"),
    { offered: number(tools.offered), enabled: number(tools.enabled) },
    true,
  );
  return `${line}\n${cut}`;
}

// The conversation's compaction ledger: what compaction cost and saved so far, then the
// newest stored summaries, each with what it cost and what the requests that started from
// it saved (its net saving over the following requests).
const LEDGER_SUMMARY_LINES = 3;

function ledgerSummary(ledger, number) {
  if (!ledger || !(ledger.compactions || ledger.saved_input_tokens)) return "";
  const summaries = (Array.isArray(ledger.summaries) ? ledger.summaries : []).slice(-LEDGER_SUMMARY_LINES);
  const lines = summaries.map((summary) =>
    interpolate(
      ngettext(
        "Summary of %(count)s messages: cost %(cost)s tokens, used by %(requests)s request, net %(net)s",
        "Summary of %(count)s messages: cost %(cost)s tokens, used by %(requests)s requests, net %(net)s",
        summary.requests,
      ),
      {
        count: number(summary.covered_count),
        cost: number(summary.cost_tokens),
        requests: number(summary.requests),
        net: number(summary.net_saved_tokens),
      },
      true,
    ),
  );
  return [totalLine(ledger, number), ...lines].join("\n");
}

// What compaction cost and saved in the whole conversation.
function totalLine(ledger, number) {
  return interpolate(
    ngettext(
      "Compaction so far: %(count)s compaction cost %(cost)s tokens and saved %(saved)s " +
        "input tokens (net %(net)s)",
      "Compaction so far: %(count)s compactions cost %(cost)s tokens and saved %(saved)s " +
        "input tokens (net %(net)s)",
      ledger.compactions,
    ),
    {
      count: number(ledger.compactions),
      cost: number(ledger.cost_input_tokens + ledger.cost_output_tokens),
      saved: number(ledger.saved_input_tokens),
      net: number(ledger.net_saved_tokens),
    },
    true,
  );
}
