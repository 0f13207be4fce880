// An answer's live DAG plan: its steps with their status, what each did, and the analyser's
// verdict per round. Each AssistantView (render.js) has one, placed above its steps.

import { decorateCodeBlocks } from "./code_blocks.js";
import { el } from "./dom.js";

// What a DAG step's status pill says.
const STEP_STATUS = {
  pending: gettext("pending"),
  running: gettext("running"),
  done: gettext("done"),
  error: gettext("error"),
};

export class PlanView {
  // ``place(box)``: puts a first plan on the page (a new round's plan replaces the old).
  constructor(place) {
    this.place = place;
    this.clear();
  }

  // Forget the plan shown (a fuller record of it is about to be replayed).
  clear() {
    this.box?.remove();
    this.box = null;
    this.steps = null; // step id -> {row, pill, activity, progress}
    this.verdictLine = null;
    this.lastVerdict = null;
  }

  // Where a DAG step's own tool calls go; null when there is no such step on screen.
  stepEntry(id) {
    return this.steps?.get(String(id)) || null;
  }

  show(frame, round = 0) {
    const steps = Array.isArray(frame.steps) ? frame.steps : [];
    const list = el("ol", { class: "plan-steps" });
    this.steps = new Map();
    for (const step of steps) {
      const deps = Array.isArray(step.depends_on) ? step.depends_on : [];
      const pill = el("span", { class: "pill pending", text: STEP_STATUS.pending });
      const activity = el("div", { class: "steps plan-activity", hidden: true });
      const row = el(
        "li",
        { class: "plan-step pending", "data-step-id": String(step.id) },
        el("span", { class: "sid", text: String(step.id) }),
        el("span", { class: "task", text: step.task || "" }),
        pill,
        deps.length
          ? el("span", {
              class: "deps",
              text: interpolate(
                gettext("after %(steps)s"),
                { steps: deps.map((d) => `#${d}`).join(", ") },
                true,
              ),
            })
          : null,
        activity,
      );
      this.steps.set(String(step.id), { row, pill, activity });
      list.append(row);
    }
    const head = el(
      "div",
      { class: "plan-head" },
      el("span", {
        text: interpolate(
          ngettext("Plan · %(count)s step", "Plan · %(count)s steps", steps.length),
          { count: steps.length },
          true,
        ),
      }),
      round
        ? el("span", {
            class: "round",
            text: interpolate(gettext("re-plan round %(round)s"), { round }, true),
          })
        : null,
    );
    const box = el("section", { class: "plan", "aria-label": gettext("Execution plan") }, head, list);
    if (this.box) this.box.replaceWith(box);
    else this.place(box);
    this.box = box;
    this.verdictLine = null;
  }

  // ``dag.step.delta``: a running step's text as its model writes it.
  progress(frame) {
    const entry = this.stepEntry(frame.id);
    if (!entry || !frame.text) return;
    if (!entry.progress) {
      entry.progress = el("div", { class: "plan-progress", "aria-live": "off" });
      entry.row.append(entry.progress);
    }
    entry.progress.textContent += frame.text;
    entry.progress.scrollTop = entry.progress.scrollHeight; // the newest lines in view
  }

  step(frame) {
    const entry = this.stepEntry(frame.id);
    if (!entry) return;
    const status = String(frame.status || "pending");
    if (status !== "running" && entry.progress) {
      // The result (or the error) replaces the live progress.
      entry.progress.remove();
      entry.progress = null;
    }
    entry.row.className = `plan-step ${status}`;
    entry.pill.className = `pill ${status}`;
    entry.pill.textContent = STEP_STATUS[status] || status;
    const detail = frame.result ?? frame.error ?? frame.summary;
    if (detail) {
      entry.row.querySelector(":scope > details.step-result")?.remove();
      // A result is Markdown: the server sends it rendered and sanitised (``result_html``).
      const body = el("div", { class: "result-body" });
      if (frame.result_html && !frame.error) {
        body.innerHTML = frame.result_html; // nh3-sanitised
        decorateCodeBlocks(body);
      } else {
        body.classList.add("plain");
        body.textContent = String(detail);
      }
      entry.row.append(
        el("details", { class: "step-result" }, el("summary", { text: frame.error ? gettext("Error") : gettext("Result") }), body),
      );
    }
  }

  analysis(frame) {
    if (!this.box) return;
    const confidence = Number(frame.confidence);
    const known = frame.confidence !== null && Number.isFinite(confidence);
    const values = { percent: Math.round(confidence * 100) };
    let text = gettext("Analyser: no readable verdict");
    let tone = "not-achieved";
    if (frame.achieved === true) {
      text = known
        ? interpolate(gettext("Analyser: goal achieved (confidence %(percent)s%)"), values, true)
        : gettext("Analyser: goal achieved");
      tone = "achieved";
    } else if (frame.achieved === false) {
      text = known
        ? interpolate(gettext("Analyser: goal not achieved (confidence %(percent)s%)"), values, true)
        : gettext("Analyser: goal not achieved");
    }
    const reason = frame.reason || frame.reasoning;
    this.lastVerdict = { text, reason };
    this.verdictLine?.remove();
    this.verdictLine = el(
      "div",
      { class: `verdict ${tone}`, role: "status" },
      text,
      reason ? el("div", { class: "step-note", text: String(reason) }) : null,
    );
    this.box.append(this.verdictLine);
  }
}
