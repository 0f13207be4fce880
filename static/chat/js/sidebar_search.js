// Search over the conversations' titles and message text (GET /api/search/): results as
// the user types, keyboard moves among them, and a hit opened at its message. The
// conversation list (sidebar.js) gives way to the results while there is a query.

import { loginUrl } from "./api.js";
import { el } from "./dom.js";

const SEARCH_DELAY_MS = 200;
const MAX_OLDER_PAGES = 40; // how far back a search hit may send "Show earlier messages"

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export class SidebarSearch {
  // nav: the list's <nav>, the results go at its top; titleOf(conversation) -> text;
  // open(id) -> Promise (the conversation on screen); onShow(on): the results (true) or
  // the list (false) are shown.
  constructor({ nav, titleOf, open, onShow }) {
    this.titleOf = titleOf;
    this.open = open;
    this.onShow = onShow;
    this.searchInput = el("input", {
      id: "conversation-search",
      class: "conv-search-input",
      type: "search",
      placeholder: gettext("Search conversations"),
      "aria-label": gettext("Search conversations"),
      "aria-controls": "search-results",
      autocomplete: "off",
      maxlength: "200",
      spellcheck: "false",
    });
    this.searchStatus = el("p", { class: "search-status", role: "status", "aria-live": "polite" });
    this.searchResults = el("ul", {
      id: "search-results",
      class: "search-results",
      "aria-label": gettext("Search results"),
      hidden: true,
    });
    const form = el(
      "form",
      { class: "conv-search", role: "search", onsubmit: (event) => event.preventDefault() },
      this.searchInput,
    );
    nav.before(form);
    nav.prepend(this.searchStatus, this.searchResults);
    this.searchToken = 0;
    this.searchTimer = null;
    this.searchInput.addEventListener("input", () => this.scheduleSearch());
    this.searchInput.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && this.searchInput.value) {
        event.preventDefault();
        event.stopPropagation(); // clear the search, do not close the drawer
        this.clearSearch();
      } else if (event.key === "ArrowDown") {
        const first = this.searchResults.querySelector("a");
        if (first && !this.searchResults.hidden) {
          event.preventDefault();
          first.focus();
        }
      }
    });
  }

  clearSearch() {
    this.searchInput.value = "";
    this.scheduleSearch();
  }

  scheduleSearch() {
    clearTimeout(this.searchTimer);
    const token = ++this.searchToken;
    if (!this.active) {
      this.showSearch(false);
      return;
    }
    this.searchTimer = setTimeout(() => this.runSearch(token), SEARCH_DELAY_MS);
  }

  get active() {
    return this.searchInput.value.trim().length > 0;
  }

  showSearch(on) {
    this.searchResults.hidden = !on;
    if (!on) {
      this.searchStatus.textContent = "";
      this.searchResults.replaceChildren();
    }
    this.onShow(on);
  }

  async runSearch(token) {
    const query = this.searchInput.value;
    let data;
    try {
      const response = await fetch(`/api/search/?q=${encodeURIComponent(query)}`, {
        headers: { Accept: "application/json" },
        credentials: "same-origin",
      });
      if (response.status === 401) return window.location.assign(loginUrl());
      data = await response.json();
      if (!response.ok) throw new Error(data?.error?.message || `HTTP ${response.status}`);
    } catch (err) {
      if (token !== this.searchToken) return;
      this.showSearch(true);
      this.searchResults.replaceChildren();
      this.searchStatus.textContent = interpolate(
        gettext("Search failed: %(reason)s"),
        { reason: err.message },
        true,
      );
      return;
    }
    if (token !== this.searchToken) return; // a newer query is on its way
    this.showSearch(true);
    const results = data.results || [];
    this.searchStatus.textContent = results.length
      ? interpolate(
          ngettext("%(count)s match", "%(count)s matches", results.length),
          { count: results.length },
          true,
        )
      : gettext("No matches");
    this.searchResults.replaceChildren(...results.map((result) => this.searchItem(result)));
  }

  searchItem(result) {
    const conversation = result.conversation;
    const snippet = el("span", { class: "search-snippet" });
    for (const [text, marked] of result.parts || [[result.snippet, false]]) {
      snippet.append(marked ? el("mark", { text }) : document.createTextNode(text));
    }
    const where =
      result.kind === "title"
        ? gettext("Title")
        : result.kind === "tool"
          ? interpolate(gettext("Tool result · %(tool)s"), { tool: result.label }, true)
          : result.kind === "document"
            ? interpolate(gettext("Document · %(where)s"), { where: result.label }, true)
            : result.role === "assistant"
            ? gettext("Answer")
            : gettext("You");
    const when = new Date(result.created_at).toLocaleDateString(document.documentElement.lang);
    const href = `/c/${encodeURIComponent(conversation.id)}/` +
      (result.message_id ? `#message-${result.message_id}` : "");
    const link = el(
      "a",
      {
        class: "search-hit",
        href,
        onclick: (event) => {
          if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
          event.preventDefault();
          this.jumpTo(conversation.id, result.message_id);
        },
        onkeydown: (event) => this.moveInResults(event),
      },
      el("span", { class: "search-title", text: this.titleOf(conversation) }),
      snippet,
      el("span", { class: "search-meta", text: `${where} · ${when}` }),
    );
    return el("li", { class: "search-item", "data-id": conversation.id }, link);
  }

  moveInResults(event) {
    const links = [...this.searchResults.querySelectorAll("a")];
    const at = links.indexOf(event.currentTarget);
    if (event.key === "ArrowDown" && at < links.length - 1) links[at + 1].focus();
    else if (event.key === "ArrowUp") (at > 0 ? links[at - 1] : this.searchInput).focus();
    else return;
    event.preventDefault();
  }

  // Open the conversation, then bring the message into view: older pages are loaded with
  // the page's own "Show earlier messages" button until the message is there.
  async jumpTo(conversationId, messageId) {
    await this.open(conversationId);
    if (!messageId) return;
    const box = document.getElementById("messages");
    const selector = `[data-message-id="${CSS.escape(String(messageId))}"]`;
    let node = box.querySelector(selector);
    for (let page = 0; !node && page < MAX_OLDER_PAGES; page += 1) {
      const more = box.querySelector(".load-more");
      if (!more) break;
      if (!more.disabled) more.click();
      await sleep(100);
      node = box.querySelector(selector);
    }
    if (!node) return;
    await new Promise((resolve) => requestAnimationFrame(resolve));
    node.scrollIntoView({ block: "center" });
    node.classList.add("search-target");
    node.tabIndex = -1;
    node.focus({ preventScroll: true });
    setTimeout(() => node.classList.remove("search-target"), 2500);
  }
}
