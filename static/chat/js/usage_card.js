// An answer's usage card: its tokens in and out (reasoning and compaction included), and
// behind a click the details: the split by kind, the compaction ledger, cache, time.

import { el } from "./dom.js";

// Token counts as the usage line shows them: "X.Xk in / X.Xk out", and a count under a
// thousand as the number itself ("12 out", not "0.0k out").
export function formatK(tokens) {
  const count = Math.round(Number(tokens) || 0);
  if (Math.abs(count) < 1000) return String(count);
  return `${(count / 1000).toFixed(1)}k`;
}

// The run's compaction ledger, as lines of the usage card's details: each compaction with
// its tokens before and after and its own cost, then what they saved (docs/architecture.md,
// "Compaction ledger"). Empty when the run compacted nothing.
const LEDGER_SCOPES = {
  history: () => gettext("History at load"),
  iteration: () => gettext("During the run"),
  planner: () => gettext("Planner input"),
  step: () => gettext("DAG step"),
};

export function ledgerLines(usage) {
  const entries = Array.isArray(usage.compactions) ? usage.compactions : [];
  if (!entries.length) return "";
  const n = (v) => (Number(v) || 0).toLocaleString(document.documentElement.lang || undefined);
  const lines = entries.map((entry) => {
    const scope = (LEDGER_SCOPES[entry.scope] || (() => String(entry.scope || "")))();
    const facts = {
      scope,
      before: n(entry.tokens_before),
      after: n(entry.tokens_after),
      cost: n((Number(entry.cost_input_tokens) || 0) + (Number(entry.cost_output_tokens) || 0)),
    };
    const format = entry.reused_summary
      ? gettext("%(scope)s: stored summary reused, %(before)s → %(after)s tokens, cost %(cost)s")
      : gettext("%(scope)s: %(before)s → %(after)s tokens, cost %(cost)s");
    const line = interpolate(format, facts, true);
    const masked = Array.isArray(entry.masked) ? entry.masked : [];
    if (!masked.length) return line;
    // Masked tool results, apart from what was summarised: tool, size, tokens saved.
    const each = masked.map((m) =>
      interpolate(
        gettext("%(tool)s %(chars)s chars, %(saved)s tokens saved"),
        { tool: String(m.tool || "?"), chars: n(m.chars), saved: n(m.tokens_saved) },
        true,
      ),
    );
    const head = interpolate(
      ngettext("masked %(count)s tool result:", "masked %(count)s tool results:", Number(entry.masked_count) || masked.length),
      { count: n(entry.masked_count || masked.length) },
      true,
    );
    return `${line}\n  ${head} ${each.join("; ")}`;
  });
  lines.push(
    interpolate(
      gettext("Compaction saved %(saved)s input tokens"),
      { saved: n(usage.compaction_saved_tokens) },
      true,
    ),
  );
  return lines.join("\n");
}

// Images the fast model described after the answer, for the answers that follow (their
// tokens are part of the compaction figures above).
function describedAfterLine(entry) {
  if (!entry) return "";
  const number = (v) => (Number(v) || 0).toLocaleString(document.documentElement.lang || undefined);
  const format = ngettext(
    "%(count)s image described for later answers: %(in)s in / %(out)s out",
    "%(count)s images described for later answers: %(in)s in / %(out)s out",
    Number(entry.images) || 0,
  );
  return interpolate(
    format,
    { count: number(entry.images), in: number(entry.input_tokens), out: number(entry.output_tokens) },
    true,
  );
}

// Closes every usage card's details that is open: another popover (the gauge's, another
// card's) is opening in its place.
export function closeUsageDetails() {
  for (const detail of document.querySelectorAll(".usage-detail:not([hidden])")) {
    detail.hidden = true;
    detail.parentElement.querySelector(".usage-card")?.setAttribute("aria-expanded", "false");
  }
}

// The card and its details, for the row of actions (``placeAction``).
export function usageCard(usage, elapsedMs) {
  const cin = Number(usage.compaction_input_tokens) || 0;
  const cout = Number(usage.compaction_output_tokens) || 0;
  const tin = Number(usage.input_tokens) || 0;
  const tout = Number(usage.output_tokens) || 0;
  const model = usage.model ? String(usage.model) : "";
  const reasoning = Number(usage.reasoning_tokens) || 0;
  // A provider that sends no usage is counted by fimone: said so, and marked "~".
  const approx = usage.estimated ? "~" : "";
  // Totals include compaction calls and reasoning; the tooltip splits them out.
  const number = (n) => n.toLocaleString(document.documentElement.lang || undefined);
  const tip = [
    model ? interpolate(gettext("Model: %(model)s"), { model }, true) : "",
    interpolate(
      gettext("Answer: %(in)s in / %(out)s out"),
      { in: number(tin - cin), out: number(tout - cout) },
      true,
    ),
    reasoning
      ? interpolate(
          gettext("Reasoning: %(tokens)s of the output tokens"),
          { tokens: number(reasoning) },
          true,
        )
      : "",
    interpolate(
      gettext("Compaction: %(in)s in / %(out)s out"),
      { in: number(cin), out: number(cout) },
      true,
    ),
    Number(usage.cached_input_tokens)
      ? interpolate(
          gettext("Cached input: %(tokens)s of the input tokens were read from the provider's cache"),
          { tokens: number(Number(usage.cached_input_tokens)) },
          true,
        )
      : "",
    // The tool definitions every call carried, as fimone estimates them (docs/tools.md).
    Number(usage.tool_definition_tokens)
      ? interpolate(
          gettext("Tool definitions: about %(tokens)s of the input tokens"),
          { tokens: number(Number(usage.tool_definition_tokens)) },
          true,
        )
      : "",
    ledgerLines(usage),
    describedAfterLine(usage.described_after),
    usage.estimated ? gettext("Estimated: some of these figures are fimone's own count, as the model did not report them") : "",
    elapsedMs
      ? interpolate(gettext("Time: %(seconds)s s"), { seconds: (elapsedMs / 1000).toFixed(1) }, true)
      : "",
  ]
    .filter(Boolean)
    .join("\n");
  const ariaValues = { in: formatK(tin), out: formatK(tout), reasoning: formatK(reasoning) };
  const ariaFormat = usage.estimated
    ? reasoning
      ? gettext("Token usage (estimated): %(in)s in, %(out)s out, %(reasoning)s of it reasoning. Show details")
      : gettext("Token usage (estimated): %(in)s in, %(out)s out. Show details")
    : reasoning
      ? gettext("Token usage: %(in)s in, %(out)s out, %(reasoning)s of it reasoning. Show details")
      : gettext("Token usage: %(in)s in, %(out)s out. Show details");
  const detail = el("div", { class: "usage-detail", role: "tooltip", hidden: true, text: tip });
  const card = el(
    "button",
    {
      type: "button",
      class: "usage-card",
      title: tip,
      "aria-expanded": "false",
      "aria-label": interpolate(ariaFormat, ariaValues, true),
      onclick: () => {
        const open = detail.hidden;
        if (open) closeUsageDetails(); // one popover open at a time
        detail.hidden = !open;
        card.setAttribute("aria-expanded", String(open));
      },
    },
    el("span", {
      class: "usage-total",
      text: interpolate(
        gettext("%(in)s in / %(out)s out"),
        { in: approx + formatK(tin), out: approx + formatK(tout) },
        true,
      ),
    }),
    reasoning ? el("span", { class: "sep", text: "·" }) : null,
    reasoning
      ? el("span", {
          class: "usage-reasoning",
          text: interpolate(gettext("%(tokens)s reasoning"), { tokens: formatK(reasoning) }, true),
        })
      : null,
    cin || cout ? el("span", { class: "sep", text: "·" }) : null,
    cin || cout
      ? el("span", {
          text: interpolate(gettext("incl. %(tokens)s compaction"), { tokens: formatK(cin + cout) }, true),
        })
      : null,
    model ? el("span", { class: "sep", text: "·" }) : null,
    model ? el("span", { class: "usage-model", text: model }) : null,
  );
  return el("span", { class: "usage-wrap" }, card, detail);
}
