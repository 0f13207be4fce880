// The conversation list: open, new, rename (inline), delete, export; search over titles
// and message text (GET /api/search/); a drawer on narrow screens.

import { loginUrl } from "./api.js";
import { el, icon } from "./dom.js";

const SEARCH_DELAY_MS = 200;
const MAX_OLDER_PAGES = 40; // how far back a search hit may send "Show earlier messages"
const SVG_NS = "http://www.w3.org/2000/svg";

function downloadIcon() {
  const svg = document.createElementNS(SVG_NS, "svg");
  for (const [k, v] of Object.entries({
    viewBox: "0 0 24 24", width: "16", height: "16", fill: "none", stroke: "currentColor",
    "stroke-width": "1.8", "stroke-linecap": "round", "stroke-linejoin": "round",
    "aria-hidden": "true", focusable: "false",
  })) svg.setAttribute(k, v);
  const path = document.createElementNS(SVG_NS, "path");
  path.setAttribute("d", "M12 4v11M7 10l5 5 5-5M5 20h14");
  svg.append(path);
  return svg;
}

function exportUrl(id, format) {
  return `/api/conversations/${encodeURIComponent(id)}/export/?format=${format}`;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function titleOf(conversation) {
  return conversation.title || gettext("New chat");
}

const DAY_MS = 24 * 60 * 60 * 1000;

// The heading a conversation is listed under, by when it last changed, in the reader's own
// calendar: Today, Yesterday, Previous 7 days, Previous 30 days, then its month (with the
// year once it is not this year's). The list is newest first, so each heading starts a run.
export function dateGroupOf(updatedAt, now = new Date()) {
  const when = new Date(updatedAt);
  if (Number.isNaN(when.getTime())) return gettext("Older");
  const startOfToday = new Date(now.getFullYear(), now.getMonth(), now.getDate()).getTime();
  const days = Math.floor((startOfToday - new Date(when.getFullYear(), when.getMonth(), when.getDate()).getTime()) / DAY_MS);
  if (days <= 0) return gettext("Today");
  if (days === 1) return gettext("Yesterday");
  if (days < 7) return gettext("Previous 7 days");
  if (days < 30) return gettext("Previous 30 days");
  const lang = document.documentElement.lang || undefined;
  const options = when.getFullYear() === now.getFullYear() ? { month: "long" } : { month: "long", year: "numeric" };
  return new Intl.DateTimeFormat(lang, options).format(when);
}

export class Sidebar {
  constructor({ onOpen, onNew, onRename, onDelete, loadPage }) {
    this.onOpen = onOpen;
    this.onNew = onNew;
    this.onRename = onRename;
    this.onDelete = onDelete;
    this.loadPage = loadPage;
    this.list = document.getElementById("conversation-list");
    this.empty = document.getElementById("conversation-empty");
    this.layout = document.getElementById("layout");
    this.toggle = document.getElementById("sidebar-toggle");
    this.conversations = [];
    this.currentId = null;
    this.setUpOlderPages();
    this.setUpSearch();
    this.setUpExportMenu();

    document.getElementById("new-conversation").addEventListener("click", () => {
      this.close();
      this.onNew();
    });
    this.toggle.addEventListener("click", () => (this.isOpen ? this.close() : this.open()));
    document.getElementById("sidebar-close").addEventListener("click", () => this.close());
    document.getElementById("scrim").addEventListener("click", () => this.close());
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && this.isOpen) {
        this.close();
        this.toggle.focus();
      }
    });
  }

  get isOpen() {
    return this.layout.classList.contains("sidebar-open");
  }

  open() {
    this.layout.classList.add("sidebar-open");
    this.toggle.setAttribute("aria-expanded", "true");
    document.getElementById("scrim").hidden = false;
    (this.list.querySelector('[aria-current="page"] a') || document.getElementById("new-conversation")).focus();
  }

  close() {
    if (!this.isOpen) return;
    this.layout.classList.remove("sidebar-open");
    this.toggle.setAttribute("aria-expanded", "false");
    document.getElementById("scrim").hidden = true;
  }

  set(conversations, currentId, next = null) {
    this.conversations = conversations;
    this.currentId = currentId;
    this.next = next;
    this.render();
    this.watchMore();
  }

  // ---- older pages: loaded when "Show older conversations" scrolls into view or is pressed

  setUpOlderPages() {
    this.next = null;
    this.loadingMore = false;
    this.more = el("button", {
      type: "button",
      class: "btn conv-more",
      text: gettext("Show older conversations"),
      hidden: true,
      onclick: () => this.loadMore(),
    });
    this.list.after(this.more);
    // Scrolling near the end loads the next page by itself; a keyboard user on the button
    // loads one page per press (focus keeps the button in view, which would otherwise load
    // page after page on its own).
    this.observer =
      "IntersectionObserver" in window
        ? new IntersectionObserver(
            (entries) =>
              entries.some((e) => e.isIntersecting) && document.activeElement !== this.more && this.loadMore(),
            { root: this.list.closest("nav"), rootMargin: "200px 0px" },
          )
        : null;
    this.observer?.observe(this.more);
  }

  // Observing anew reports the button's current state, so a page that still leaves it in
  // view (a tall screen) loads the next one too.
  watchMore() {
    this.observer?.unobserve(this.more);
    this.observer?.observe(this.more);
  }

  async loadMore() {
    if (this.loadingMore || !this.next || this.searching) return;
    // Read before the button changes; it is marked busy, not disabled, because a disabled
    // button drops the keyboard focus it holds.
    const keepFocus = document.activeElement === this.more;
    this.loadingMore = true;
    this.more.setAttribute("aria-disabled", "true");
    this.more.textContent = gettext("Loading…");
    try {
      const page = await this.loadPage(this.next);
      const known = new Set(this.conversations.map((c) => c.id));
      this.conversations = [
        ...this.conversations,
        ...page.conversations.filter((c) => !known.has(c.id)),
      ];
      this.next = page.next;
    } catch (err) {
      this.more.textContent = interpolate(
        gettext("Could not load older conversations: %(reason)s. Try again"),
        { reason: err.message },
        true,
      );
      this.more.setAttribute("aria-disabled", "false");
      this.loadingMore = false;
      return;
    }
    this.loadingMore = false;
    this.render();
    this.watchMore();
    if (keepFocus) (this.more.hidden ? this.list.querySelector(".conv-item:last-child a") : this.more)?.focus();
  }

  upsert(conversation, { toTop = false } = {}) {
    const rest = this.conversations.filter((c) => c.id !== conversation.id);
    const index = this.conversations.findIndex((c) => c.id === conversation.id);
    if (toTop || index < 0) this.conversations = [conversation, ...rest];
    else this.conversations[index] = conversation;
    this.render();
  }

  removeItem(id) {
    this.conversations = this.conversations.filter((c) => c.id !== id);
    this.render();
  }

  select(id) {
    this.currentId = id;
    this.render();
  }

  render() {
    this.empty.hidden = this.conversations.length > 0 || this.searching;
    const rows = [];
    let group = null;
    for (const conversation of this.conversations) {
      const heading = dateGroupOf(conversation.updated_at);
      if (heading !== group) {
        group = heading;
        rows.push(el("li", { class: "conv-group", role: "presentation" }, el("h2", { class: "conv-group-title", text: heading })));
      }
      rows.push(this.item(conversation));
    }
    this.list.replaceChildren(...rows);
    this.more.hidden = !this.next || this.searching;
    this.more.setAttribute("aria-disabled", String(this.loadingMore));
    if (!this.loadingMore) this.more.textContent = gettext("Show older conversations");
  }

  item(conversation) {
    const current = conversation.id === this.currentId;
    const title = titleOf(conversation);
    const link = el("a", {
      class: "conv-link",
      href: `/c/${encodeURIComponent(conversation.id)}/`,
      text: title,
      title,
      onclick: (event) => {
        if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
        event.preventDefault();
        this.close();
        this.onOpen(conversation.id);
      },
    });
    const li = el(
      "li",
      { class: "conv-item", "aria-current": current ? "page" : null, "data-id": conversation.id },
      link,
      el(
        "span",
        { class: "conv-actions" },
        el(
          "button",
          {
            type: "button",
            class: "icon-btn conv-export",
            "aria-label": interpolate(gettext("Export “%(title)s”"), { title }, true),
            "aria-haspopup": "menu",
            "aria-expanded": "false",
            title: gettext("Export"),
            onclick: (event) => this.toggleExportMenu(event.currentTarget, conversation),
          },
          downloadIcon(),
        ),
        el(
          "button",
          {
            type: "button",
            class: "icon-btn conv-rename",
            "aria-label": interpolate(gettext("Rename “%(title)s”"), { title }, true),
            title: gettext("Rename"),
            onclick: () => this.startRename(li, conversation),
          },
          icon("edit"),
        ),
        el(
          "button",
          {
            type: "button",
            class: "icon-btn conv-delete",
            "aria-label": interpolate(gettext("Delete “%(title)s”"), { title }, true),
            title: gettext("Delete"),
            onclick: () => this.confirmDelete(conversation),
          },
          icon("trash"),
        ),
      ),
    );
    return li;
  }

  startRename(li, conversation) {
    const input = el("input", {
      class: "conv-rename-input",
      type: "text",
      value: conversation.title || "",
      maxlength: "200",
      "aria-label": gettext("New title"),
    });
    let done = false;
    const finish = async (save) => {
      if (done) return;
      done = true;
      const title = input.value.trim();
      if (save && title && title !== conversation.title) {
        await this.onRename(conversation.id, title);
      } else {
        this.render();
      }
      this.list.querySelector(`[data-id="${CSS.escape(conversation.id)}"] .conv-link`)?.focus();
    };
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        finish(true);
      } else if (event.key === "Escape") {
        event.preventDefault();
        event.stopPropagation();
        finish(false);
      }
    });
    input.addEventListener("blur", () => finish(true));
    li.replaceChildren(input);
    input.focus();
    input.select();
  }

  // An in-page modal <dialog>: focus moves into it, Escape cancels, Cancel is the default.
  confirmDelete(conversation) {
    document.querySelector(".confirm-dialog")?.remove();
    const dialog = el("dialog", { class: "confirm-dialog", "aria-labelledby": "confirm-text" });
    const close = (confirmed) => {
      dialog.close();
      dialog.remove();
      if (confirmed) this.onDelete(conversation.id);
    };
    const cancel = el("button", { type: "button", class: "btn", text: gettext("Cancel"), onclick: () => close(false) });
    dialog.append(
      el("p", {
        id: "confirm-text",
        text: interpolate(
          gettext("Delete “%(title)s”? This cannot be undone."),
          { title: titleOf(conversation) },
          true,
        ),
      }),
      el(
        "div",
        { class: "confirm-actions" },
        cancel,
        el("button", { type: "button", class: "btn btn-danger", text: gettext("Delete"), onclick: () => close(true) }),
      ),
    );
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault();
      close(false);
    });
    document.body.append(dialog);
    dialog.showModal();
    cancel.focus();
  }

  // ---- export ----------------------------------------------------------------------------

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
  }

  toggleExportMenu(button, conversation) {
    if (!this.exportMenu.hidden && this.exportButton === button) return this.closeExportMenu();
    this.closeExportMenu();
    const title = titleOf(conversation);
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
  }

  closeExportMenu({ focus = false } = {}) {
    if (this.exportMenu.hidden) return;
    this.exportMenu.hidden = true;
    this.exportButton?.setAttribute("aria-expanded", "false");
    if (focus) this.exportButton?.focus();
    this.exportButton = null;
  }

  // ---- search ----------------------------------------------------------------------------

  setUpSearch() {
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
    const nav = this.list.closest("nav");
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

  get searching() {
    return this.searchInput.value.trim().length > 0;
  }

  clearSearch() {
    this.searchInput.value = "";
    this.scheduleSearch();
  }

  scheduleSearch() {
    clearTimeout(this.searchTimer);
    const token = ++this.searchToken;
    if (!this.searching) {
      this.showSearch(false);
      return;
    }
    this.searchTimer = setTimeout(() => this.runSearch(token), SEARCH_DELAY_MS);
  }

  showSearch(on) {
    this.searchResults.hidden = !on;
    this.list.hidden = on;
    this.more.hidden = on || !this.next;
    if (on) this.empty.hidden = true;
    else {
      this.searchStatus.textContent = "";
      this.searchResults.replaceChildren();
      this.render();
    }
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
      el("span", { class: "search-title", text: titleOf(conversation) }),
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
    this.close();
    await this.onOpen(conversationId);
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
