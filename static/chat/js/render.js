// DOM builders for messages. Text from messages only ever goes in through textContent;
// the one exception is ``html`` rendered and sanitised on the server (markdown-it + nh3).

import { api, attachmentUrl } from "./api.js";
import { decorateCodeBlocks } from "./code_blocks.js";
import { el, icon, placeAction } from "./dom.js";
import { PlanView } from "./plan_view.js";
import { StreamRender } from "./stream_render.js";
import { formatK, usageCard } from "./usage_card.js";

function messages(n) {
  return interpolate(ngettext("%(count)s message", "%(count)s messages", n), { count: n }, true);
}

// ---- user messages -----------------------------------------------------------------------

// A document's chip: its name, pages and size; a link that downloads it once it is stored.
export function documentChip(doc, { pending = false } = {}) {
  const name = doc.name || gettext("document");
  const meta = [];
  if (doc.pages) meta.push(interpolate(ngettext("%(count)s page", "%(count)s pages", doc.pages), { count: doc.pages }, true));
  if (doc.size) meta.push(fileSize(doc.size));
  const url = pending ? null : doc.url || (doc.file_id ? attachmentUrl(doc.file_id) : null);
  const label = interpolate(gettext("Document: %(name)s"), { name }, true);
  return el(
    url ? "a" : "span",
    { class: "doc-chip", ...(url ? { href: url, download: name } : {}), "aria-label": [label, ...meta].join(", ") },
    el("span", { class: "doc-icon", "aria-hidden": "true", text: (doc.document_kind || doc.kind || "doc").toUpperCase().slice(0, 4) }),
    el("span", { class: "doc-name", text: name }),
    meta.length ? el("span", { class: "doc-meta", text: meta.join(" · ") }) : null,
  );
}

export function fileSize(bytes) {
  if (bytes < 1024) return interpolate(gettext("%(n)s B"), { n: bytes }, true);
  if (bytes < 1048576) return interpolate(gettext("%(n)s KB"), { n: Math.round(bytes / 1024) }, true);
  return interpolate(gettext("%(n)s MB"), { n: (bytes / 1048576).toFixed(1) }, true);
}

export function userMessage({ id, content, images = [], documents = [], injected = false }) {
  const imageList = images.length
    ? el(
        "div",
        { class: "msg-images" },
        ...images.map((img) => {
          const full = img.url || (img.file_id ? attachmentUrl(img.file_id) : img.previewUrl);
          const link = el("a", { href: full, target: "_blank", rel: "noopener", title: gettext("Open the full image") });
          link.append(
            imageOrNotice(
              { src: img.previewUrl || full, alt: img.description || gettext("Attached image"), loading: "lazy" },
              gettext("Image unavailable"),
            ),
          );
          return link;
        }),
      )
    : null;
  const node = el(
    "article",
    { class: `msg msg-user${injected ? " injected" : ""}`, "aria-label": gettext("You") },
    injected
      ? el("div", { class: "msg-tag", text: gettext("Follow-up, sent while the agent was working") })
      : null,
    imageList,
    documents.length ? el("div", { class: "msg-documents" }, ...documents.map((doc) => documentChip(doc))) : null,
    content ? el("div", { class: "bubble", text: content }) : null,
    content && isLong(content) ? showMoreButton() : null,
  );
  if (content && isLong(content)) node.querySelector(".bubble").classList.add("collapsed");
  if (id !== undefined && id !== null) node.dataset.messageId = String(id);
  return node;
}

// A long message is shown folded to a few screens' lines, whole in the page (copy and
// edit read all of it), with a button that unfolds it.
const LONG_MESSAGE_CHARS = 1500;
const LONG_MESSAGE_LINES = 24;

function isLong(content) {
  return content.length > LONG_MESSAGE_CHARS || content.split("\n").length > LONG_MESSAGE_LINES;
}

function showMoreButton() {
  const button = el("button", {
    type: "button",
    class: "show-more",
    "aria-expanded": "false",
    text: gettext("Show more"),
    onclick: () => {
      const bubble = button.parentElement.querySelector(".bubble");
      const open = bubble.classList.toggle("collapsed") === false;
      button.setAttribute("aria-expanded", String(open));
      button.textContent = open ? gettext("Show less") : gettext("Show more");
    },
  });
  return button;
}

// An <img> that turns into a small "unavailable" tile when it cannot be loaded, instead of
// the browser's broken-image text spilling out of its box.
export function imageOrNotice(attrs, notice) {
  const img = el("img", attrs);
  img.addEventListener(
    "error",
    () => img.replaceWith(el("span", { class: "img-broken", role: "img", "aria-label": `${attrs.alt}: ${notice}`, text: notice })),
    { once: true },
  );
  return img;
}

// The row of small buttons under a question (Pin, Edit), created when the first one comes.
export function userActions(node) {
  let row = node.querySelector(":scope > .user-actions");
  if (!row) {
    row = el("div", { class: "user-actions" });
    node.append(row);
  }
  return row;
}

// ---- compaction divider ------------------------------------------------------------------

export function summarizedCount(facts) {
  const original = Number(facts.original_count) || 0;
  const compacted = Number(facts.compacted_count) || 0;
  // A summary's count is the one it carries itself (the server sends it), so the divider
  // says what the opened summary says; the rest of the history follows it verbatim.
  const own = Number(facts.summarized_count);
  if (facts.strategy !== "truncate" && Number.isInteger(own) && own > 0) {
    return { summarized: own, kept: Math.max(0, original - own) };
  }
  // Truncation drops old messages; an older answer's facts may lack the summary's count:
  // an LLM compaction replaces the old messages with one summary message.
  // Masking alone keeps every message (as stubs): no summary message among them.
  const kept =
    facts.strategy === "truncate" || facts.strategy === "mask" ? compacted : Math.max(0, compacted - 1);
  return { summarized: Math.max(0, original - kept), kept };
}

// What masking did (``facts.masked``: tool, chars, tokens_saved each), listed apart from
// what was summarised: one line per masked tool result; null when nothing was masked.
export function maskedList(facts) {
  const items = Array.isArray(facts.masked) ? facts.masked : [];
  if (!items.length) return null;
  const number = (v) => (Number(v) || 0).toLocaleString(document.documentElement.lang || undefined);
  const count = Number(facts.masked_count) || items.length;
  const head = interpolate(
    ngettext(
      "%(count)s old tool result masked (a stub says how to get it back), %(saved)s tokens saved:",
      "%(count)s old tool results masked (a stub says how to get each back), %(saved)s tokens saved:",
      count,
    ),
    { count: number(count), saved: number(facts.masked_tokens_saved) },
    true,
  );
  const list = el("ul", { class: "masked-list" });
  for (const item of items) {
    list.append(
      el("li", {
        class: "masked-item",
        text: interpolate(
          gettext("%(tool)s: %(chars)s characters, %(saved)s tokens saved"),
          { tool: String(item.tool || "?"), chars: number(item.chars), saved: number(item.tokens_saved) },
          true,
        ),
      }),
    );
  }
  return el("div", { class: "masked-results", role: "note" }, el("p", { text: head }), list);
}

export function compactDivider(facts) {
  const { summarized } = summarizedCount(facts);
  const text = interpolate(
    facts.strategy === "truncate"
      ? gettext("Earlier context (%(messages)s) was left out to fit the model's context")
      : facts.strategy === "mask"
        ? gettext("Earlier tool results were masked to fit the model's context")
        : gettext("Earlier context (%(messages)s) was summarized by AI"),
    { messages: messages(summarized) },
    true,
  );
  const tip = interpolate(
    gettext("%(before)s → %(after)s, %(tokens_before)s → %(tokens_after)s tokens"),
    {
      before: messages(Number(facts.original_count) || 0),
      after: messages(Number(facts.compacted_count) || 0),
      tokens_before: formatK(facts.tokens_before),
      tokens_after: formatK(facts.tokens_after),
    },
    true,
  );
  return el("div", { class: "compact-divider", role: "separator", title: tip, "aria-label": text }, text);
}

// ---- assistant messages --------------------------------------------------------------------

const STEP_LABEL = {
  thought: gettext("Thought"),
};

// The mark a recorded preview ends with when its text was cut (chat/runs/record.py).
const CUT_TEXT = /… \[[\d,]+ more chars\]$/;

// "Show all" under a cut tool result: the whole stored result, fetched when asked for
// (docs/protocol.md, "Tool results").
function showAllButton(pre, url) {
  const button = el("button", {
    type: "button",
    class: "step-show-all",
    text: gettext("Show all"),
    onclick: async () => {
      button.disabled = true;
      button.textContent = gettext("Loading…");
      try {
        const result = await api.toolResult(url);
        pre.textContent = result.content;
        if (result.truncated) {
          const note = interpolate(
            gettext("(kept up to here: the result had %(chars)s characters)"),
            { chars: Number(result.chars).toLocaleString() },
            true,
          );
          pre.append(`\n… ${note}`);
        }
        button.remove();
      } catch (err) {
        button.disabled = false;
        button.textContent = gettext("Could not load the whole result. Try again.");
        button.title = err.message;
      }
    },
  });
  return button;
}

// A tool call's row: its name and arguments on the summary line, the arguments in full
// and, once it is back, the result when opened.
function toolRow(frame, label) {
  const args = String(frame.arguments ?? "");
  const row = el(
    "details",
    { class: "step step-tool", "data-tool": String(frame.name || "") },
    el(
      "summary",
      {},
      el("span", { class: "step-kind", text: label }),
      el("span", { class: "step-title", text: frame.name || gettext("tool") }),
      el("span", { class: "step-args", text: args.replace(/\s+/g, " ") }),
    ),
    el(
      "div",
      { class: "step-part" },
      el("div", { class: "step-part-label", text: gettext("Arguments") }),
      el("pre", { class: "step-body step-arguments", text: args }),
    ),
  );
  if (frame.call_id) row.dataset.callId = String(frame.call_id);
  if (frame.kind === "tool_call") row.classList.add("waiting");
  return row;
}

// The result, in the call's row: a line of it on the summary, the preview when opened,
// and "Show all" where the preview was cut and the whole result is stored.
function fillToolResult(row, frame) {
  const body = String(frame.result ?? frame.content ?? "");
  row.classList.remove("waiting");
  row.querySelector(":scope > .step-result-part")?.remove();
  row.querySelector(":scope > summary .step-outcome")?.remove();
  row.querySelector(":scope > summary").append(
    el("span", { class: "step-outcome", text: `→ ${body.replace(/\s+/g, " ").trim()}` }),
  );
  const pre = el("pre", { class: "step-body step-output", text: body });
  const part = el(
    "div",
    { class: "step-part step-result-part" },
    el("div", { class: "step-part-label", text: gettext("Result") }),
    pre,
  );
  if (frame.result_url && CUT_TEXT.test(body)) part.append(showAllButton(pre, frame.result_url));
  row.append(part);
}

export class AssistantView {
  constructor({ id = null, onRetry = null } = {}) {
    this.onRetry = onRetry;
    this.answer = el("div", { class: "answer" });
    this.steps = el("div", { class: "steps", hidden: true });
    this.actions = el("div", { class: "msg-actions" });
    this.footer = el("div", { class: "msg-footer" }, this.actions);
    this.node = el(
      "article",
      { class: "msg msg-assistant", "aria-label": gettext("Assistant") },
      el("div", { class: "who-line" }, el("span", { class: "avatar", "aria-hidden": "true", text: "f" }), "fimone"),
      this.steps,
      this.answer,
      this.footer,
    );
    this.plan = new PlanView((box) => this.node.insertBefore(box, this.steps));
    this.text = "";
    this.live = new StreamRender(this.answer, { decorate: decorateCodeBlocks });
    this.setId(id);
  }

  // The answer replies to follow-ups sent while it was written, besides its question.
  markFollowUps(ids) {
    const count = Array.isArray(ids) ? ids.length : 0;
    this.node.querySelector(".follow-up-mark")?.remove();
    if (!count) return;
    this.node.dataset.followUps = ids.join(" ");
    this.node.querySelector(".who-line").append(
      el("span", {
        class: "follow-up-mark",
        text: interpolate(
          ngettext("Also answers your follow-up", "Also answers your %(count)s follow-ups", count),
          { count },
          true,
        ),
      }),
    );
  }

  setId(id) {
    if (id !== undefined && id !== null) this.node.dataset.messageId = String(id);
  }

  get id() {
    return this.node.dataset.messageId || null;
  }

  thinking() {
    this.node.setAttribute("aria-busy", "true");
    this.answer.replaceChildren(
      el(
        "span",
        { class: "thinking", role: "status", "aria-label": gettext("Working") },
        el("span"),
        el("span"),
        el("span"),
      ),
    );
  }

  // Streamed text is shown as Markdown as it arrives (stream_render.js); the server's
  // rendered HTML takes its place at ``done`` where the two differ.
  appendDelta(text) {
    if (!text) return;
    this.clearNotice();
    if (!this.answer.classList.contains("streaming")) {
      this.endReasoning();
      this.answer.classList.add("streaming");
      this.live.reset();
    }
    this.text += text;
    this.live.update(this.text);
  }

  // ``answer.retract``: the last ``chars`` characters (code points) streamed were the
  // model's thinking before a tool call; they leave the answer and become a thought of the
  // step (docs/protocol.md, "Streaming").
  retract(frame) {
    const chars = Array.from(this.text);
    const keep = Math.max(0, chars.length - (Number(frame.chars) || 0));
    this.text = chars.slice(0, keep).join("");
    if (this.text) this.live.update(this.text);
    else {
      this.live.reset();
      this.answer.classList.remove("streaming");
      this.thinking(); // the run goes on: the tool runs next
    }
    if (frame.text) this.addStep({ kind: "thought", iteration: frame.iteration, text: frame.text, step_id: frame.step_id });
  }

  setFinal({ html, content }) {
    this.clearNotice();
    this.endReasoning();
    this.node.removeAttribute("aria-busy");
    this.answer.classList.remove("streaming");
    this.source = content ?? this.text;
    if (html && this.live.active) {
      this.live.finish(html); // only where the live render differs
    } else if (html) {
      this.answer.innerHTML = html; // sanitised server-side (nh3)
      decorateCodeBlocks(this.answer);
    } else {
      this.live.reset();
      this.answer.textContent = this.source;
    }
    this.addCopyButton();
  }

  // Copies the answer's Markdown source, as the model wrote it.
  addCopyButton() {
    this.actions.querySelector(".copy-btn")?.remove();
    if (!this.source) return;
    const button = el("button", {
      type: "button",
      class: "copy-btn",
      text: gettext("Copy"),
      "aria-label": gettext("Copy the answer"),
      onclick: async () => {
        try {
          await navigator.clipboard.writeText(this.source);
          button.textContent = gettext("Copied");
        } catch (err) {
          button.textContent = gettext("Copy failed");
        }
        setTimeout(() => (button.textContent = gettext("Copy")), 1500);
      },
    });
    placeAction(this.actions, button);
  }

  stopStreaming() {
    this.clearNotice();
    this.node.removeAttribute("aria-busy");
    if (this.live.active) this.live.settle();
    this.answer.classList.remove("streaming");
    if (!this.text) this.answer.replaceChildren();
  }

  // ---- tool steps (collapsible) ----
  // A tool call and its result are one row: the call opens it (name and arguments), the
  // result with the same ``call_id`` fills it in. A thought is a row of its own.
  addStep(frame) {
    const kind = frame.kind || "step";
    const where = frame.step_id;
    const planEntry = where !== undefined ? this.plan.stepEntry(where) : null;
    const prefix =
      where !== undefined && !planEntry
        ? interpolate(gettext("Step %(step)s · "), { step: where }, true)
        : "";
    if (kind === "tool_result") {
      const row = this.toolRowFor(frame);
      if (row) return fillToolResult(row, frame);
    }
    let item;
    if (kind === "tool_call" || kind === "tool_result") {
      item = toolRow(frame, `${prefix}${planEntry ? gettext("Called") : gettext("Tool call")}`);
      if (kind === "tool_result") fillToolResult(item, frame);
      else (this.openToolRows ??= []).push(item);
    } else {
      const body = frame.text || "";
      item = el(
        "details",
        { class: `step step-${kind}` },
        el(
          "summary",
          {},
          el("span", { class: "step-kind", text: `${prefix}${STEP_LABEL[kind] || kind}` }),
          el("span", { class: "step-title", text: body.split("\n")[0] }),
        ),
        el("pre", { class: "step-body", text: String(body) }),
      );
    }
    if (planEntry) {
      // A DAG step's own tool calls go inside that step of the plan.
      planEntry.activity.hidden = false;
      planEntry.activity.append(item);
    } else {
      this.steps.hidden = false;
      this.steps.append(item);
    }
  }

  // The row of the call a result answers: the same ``call_id``, else (a record without
  // ids) the oldest call of that tool still waiting for its result.
  toolRowFor(frame) {
    const rows = this.openToolRows || [];
    const at = frame.call_id
      ? rows.findIndex((row) => row.dataset.callId === String(frame.call_id))
      : rows.findIndex((row) => !row.dataset.callId && row.dataset.tool === String(frame.name || ""));
    if (at < 0) return null;
    return rows.splice(at, 1)[0];
  }

  // ---- ``llm.notice``: the model call itself (docs/protocol.md, "Model notices") ----
  // ``unstreamed``: the answer arrives at once; ``rate_limited``: the endpoint asked us to
  // wait, counted down to the retry. Gone once text arrives or the answer ends.
  notice(frame) {
    this.clearNotice();
    this.noticeLine = el("div", { class: "llm-notice", role: "status" });
    this.steps.before(this.noticeLine);
    if (frame.kind === "rate_limited") {
      let left = Math.max(0, Math.ceil(Number(frame.retry_in) || 0));
      const say = () => {
        this.noticeLine.textContent = interpolate(
          gettext("Rate limited by the model's provider, retrying in %(seconds)s s (attempt %(attempt)s of %(attempts)s)."),
          { seconds: left, attempt: frame.attempt, attempts: frame.attempts },
          true,
        );
      };
      say();
      this.noticeTimer = setInterval(() => {
        left = Math.max(0, left - 1);
        say();
      }, 1000);
    } else if (frame.kind === "unstreamed") {
      this.noticeLine.textContent = gettext("This model may not stream here: the answer arrives at once, when it is complete.");
    } else {
      this.clearNotice();
    }
  }

  clearNotice() {
    clearInterval(this.noticeTimer);
    this.noticeTimer = null;
    this.noticeLine?.remove();
    this.noticeLine = null;
  }

  // ---- reasoning ("thinking"): the model's own reasoning text, collapsed, never the answer ----
  appendReasoning(text) {
    if (!text) return;
    if (!this.reasoning) {
      this.reasoningText = el("div", { class: "reasoning-text" });
      this.reasoningLabel = el("span", { text: gettext("Thinking…") });
      this.reasoning = el(
        "details",
        { class: "reasoning" },
        el("summary", {}, this.reasoningLabel),
        this.reasoningText,
      );
      this.answer.before(this.reasoning);
      this.reasoningSource = "";
    }
    this.reasoningSource += text;
    this.reasoningText.textContent = this.reasoningSource;
  }

  // The thinking is over once the answer starts or the run ends.
  endReasoning() {
    if (this.reasoningLabel) this.reasoningLabel.textContent = gettext("Thinking");
  }

  // ``note``: a text, or a node that draws itself (an openable compaction note).
  addNote(note) {
    this.steps.hidden = false;
    this.steps.append(note instanceof Node ? note : el("div", { class: "step-note", text: note }));
  }

  // Forget the steps and plan shown (a fuller record of them is about to be replayed).
  clearTrace() {
    for (const card of this.approvalCards?.values() || []) card.node.remove();
    this.approvalCards = null;
    this.maskNotes = null;
    this.openToolRows = null;
    this.steps.replaceChildren();
    this.steps.hidden = true;
    this.plan.clear();
    this.reasoning?.remove();
    this.reasoning = null;
  }

  // ---- footer: usage card, status, error ----
  setUsage(usage, elapsedMs) {
    if (!usage) return;
    this.footer.querySelector(".usage-wrap")?.remove();
    placeAction(this.actions, usageCard(usage, elapsedMs));
  }

  // ``retry``: offer Retry next to a stopped or interrupted answer (the newest one only).
  setStatus(status, { retry = false } = {}) {
    this.footer.querySelector(".status-badge")?.remove();
    this.footer.querySelector(".status-retry")?.remove();
    const labels = {
      cancelled: gettext("Stopped"),
      interrupted: gettext("Interrupted — the server restarted during this answer"),
      running: gettext("Still running…"),
    };
    if (!labels[status]) return;
    this.footer.append(el("span", { class: "status-badge", text: labels[status] }));
    if (retry && this.onRetry && status !== "running") this.footer.append(this.retryButton("status-retry"));
  }

  retryButton(extraClass = "") {
    return el("button", {
      class: `btn btn-retry ${extraClass}`.trim(),
      type: "button",
      text: gettext("Retry"),
      "aria-label": gettext("Retry: answer the same question again"),
      onclick: () => this.onRetry(this),
    });
  }

  // While a retry frame is on its way: one click is enough.
  retrying(busy) {
    for (const button of this.footer.querySelectorAll(".btn-retry")) {
      button.disabled = busy;
      button.textContent = busy ? gettext("Retrying…") : gettext("Retry");
    }
  }

  // Only the newest answer can be retried: older ones lose the button when a run starts.
  dropRetry() {
    for (const button of this.footer.querySelectorAll(".btn-retry")) button.remove();
  }

  // Regenerate: the newest answer asked again at any time (the old one is kept, hidden).
  offerRegenerate(onRegenerate) {
    this.actions.querySelector(".btn-regenerate")?.remove();
    if (!onRegenerate) return;
    placeAction(
      this.actions,
      el("button", {
        type: "button",
        class: "text-btn btn-regenerate",
        text: gettext("Regenerate"),
        "aria-label": gettext("Regenerate this answer"),
        onclick: (event) => {
          event.currentTarget.disabled = true;
          onRegenerate(this);
        },
      }),
    );
  }

  get status() {
    if (this.footer.querySelector(".error-box")) return "error";
    if (this.footer.querySelector(".status-badge")) return "stopped";
    return this.node.getAttribute("aria-busy") ? "running" : "done";
  }

  setError(message, { retry = true } = {}) {
    this.clearNotice();
    this.stopStreaming();
    this.footer.querySelector(".error-box")?.remove();
    const box = el(
      "div",
      { class: "error-box", role: "alert" },
      el(
        "div",
        { class: "error-text" },
        el("strong", { text: `${gettext("Something went wrong.")} ` }),
        message || gettext("The agent failed."),
      ),
      retry && this.onRetry ? this.retryButton() : null,
    );
    this.footer.append(box);
  }
}
