// The "Show earlier messages" button and the pages it loads: a conversation's history is
// shown newest page first (``renderHistory`` in app.js) and older pages load on demand,
// above what is shown, keeping the reader's place.
// host: {messagesEl, runs, conversationId(), placeDivider(facts, node), toast(text)}

import { api } from "./api.js";
import { el } from "./dom.js";

export class EarlierPages {
  constructor(host) {
    this.host = host;
    this.button = null;
    this.oldestId = null;
  }

  // A history of ``messages`` (oldest first) was just shown: the button to put above it
  // when older ones exist, else null.
  reset(messages, hasMore) {
    this.oldestId = messages.length ? messages[0].id : null;
    this.button = hasMore
      ? el("button", {
          type: "button",
          class: "btn load-more",
          text: gettext("Show earlier messages"),
          onclick: () => this.load(),
        })
      : null;
    return this.button;
  }

  async load() {
    const button = this.button;
    const id = this.host.conversationId();
    if (!button || !id || this.oldestId === null) return;
    button.disabled = true;
    try {
      const page = await api.messagePage(id, { before: this.oldestId });
      if (this.host.conversationId() !== id) return; // left meanwhile
      const built = this.host.runs.olderHistory(page.messages);
      const box = this.host.messagesEl;
      const fromBottom = box.scrollHeight - box.scrollTop;
      button.after(...built.nodes);
      if (page.messages.length) this.oldestId = page.messages[0].id;
      if (built.compaction && !box.querySelector(".compact-divider")) {
        this.host.placeDivider(built.compaction.facts, built.compaction.node);
      }
      box.scrollTop = box.scrollHeight - fromBottom; // keep the reader's place
      if (page.has_more) {
        button.disabled = false;
        return;
      }
      button.remove();
      this.button = null;
      const first = built.nodes[0];
      if (first) {
        // The button is gone: keep keyboard focus where the reader is.
        first.tabIndex = -1;
        first.focus({ preventScroll: true });
      }
    } catch (err) {
      button.disabled = false;
      this.host.toast(
        interpolate(gettext("Could not load earlier messages: %(reason)s"), { reason: err.message }, true),
      );
    }
  }
}
