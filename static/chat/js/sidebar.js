// The conversation list: open, new, rename (inline), delete, export; search over titles
// and message text (GET /api/search/); a drawer on narrow screens. Projects come first,
// each expandable with its conversations under it; the others follow by date.

import { el, icon } from "./dom.js";
import { ExportMenu } from "./sidebar_export.js";
import { SidebarSearch } from "./sidebar_search.js";

const DAY_MS = 24 * 60 * 60 * 1000;
const EXPANDED_KEY = "fimone.expandedProjects";

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
  // onNewInProject(project), onProjectSettings(project), onNewProject(): the projects'
  // buttons.
  constructor({ onOpen, onNew, onRename, onDelete, loadPage, onNewInProject, onProjectSettings, onNewProject }) {
    this.onOpen = onOpen;
    this.onNew = onNew;
    this.onNewInProject = onNewInProject;
    this.onProjectSettings = onProjectSettings;
    this.onRename = onRename;
    this.onDelete = onDelete;
    this.loadPage = loadPage;
    this.list = document.getElementById("conversation-list");
    this.empty = document.getElementById("conversation-empty");
    this.layout = document.getElementById("layout");
    this.toggle = document.getElementById("sidebar-toggle");
    this.conversations = [];
    this.currentId = null;
    this.projects = [];
    this.projectSection = document.getElementById("projects");
    this.projectList = document.getElementById("project-list");
    this.expanded = loadExpanded();
    this.loadingProjects = new Set();
    document.getElementById("new-project").addEventListener("click", () => {
      this.close();
      onNewProject();
    });
    this.setUpOlderPages();
    this.search = new SidebarSearch({
      nav: this.list.closest("nav"),
      titleOf: (conversation) => this.titleOf(conversation),
      open: async (id) => {
        this.close();
        await this.onOpen(id);
      },
      onShow: (on) => this.showSearchResults(on),
    });
    this.exportMenu = new ExportMenu();

    document.getElementById("new-conversation").addEventListener("click", () => {
      this.close();
      this.onNew();
    });
    // On a phone the list is a drawer: New chat is in the top bar too.
    document.getElementById("new-chat-top")?.addEventListener("click", () => this.onNew());
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

  titleOf(conversation) {
    return conversation.title || gettext("New chat");
  }

  open() {
    this.layout.classList.add("sidebar-open");
    this.toggle.setAttribute("aria-expanded", "true");
    document.getElementById("scrim").hidden = false;
    (this.list.parentElement.querySelector('[aria-current="page"] a') || document.getElementById("new-conversation")).focus();
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
    this.moreError = null;
    this.render();
    this.watchMore();
  }

  // ---- older pages: loaded when "Show older conversations" scrolls into view or is pressed

  setUpOlderPages() {
    this.next = null;
    this.loadingMore = false;
    // Why the last older page failed, until the next try: a render for another reason (the
    // projects arriving, a title) keeps saying so, and scrolling no longer retries by itself
    // against a server that just failed; the button does.
    this.moreError = null;
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
              entries.some((e) => e.isIntersecting) &&
              document.activeElement !== this.more &&
              this.moreError === null &&
              this.loadMore(),
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
    this.moreError = null;
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
      this.moreError = err.message;
      this.loadingMore = false;
      this.more.setAttribute("aria-disabled", "false");
      this.more.textContent = this.moreText();
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

  // A listed conversation read again (its automatic title, after the user left it): its
  // row is brought up to date; one not listed is not added.
  refresh(conversation) {
    const index = this.conversations.findIndex((c) => c.id === conversation.id);
    if (index < 0) return;
    this.conversations[index] = conversation;
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

  // ---- projects -------------------------------------------------------------------------

  setProjects(projects) {
    this.projects = projects;
    this.render();
    for (const project of projects) {
      if (!this.expanded.has(project.id)) continue;
      const shown = this.conversations.filter((c) => c.project === project.id).length;
      this.loadProjectConversations(project, shown);
    }
  }

  upsertProject(project) {
    const index = this.projects.findIndex((p) => p.id === project.id);
    if (index < 0) {
      // A new project opens at once: its "New chat in this project" is what comes next.
      this.projects = [project, ...this.projects];
      this.expand(project.id, true);
    } else this.projects[index] = project;
    this.render();
  }

  removeProject(id) {
    this.projects = this.projects.filter((p) => p.id !== id);
    this.render();
  }

  projectOf(conversation) {
    if (conversation?.project === null || conversation?.project === undefined) return null;
    return this.projects.find((p) => p.id === conversation.project) || null;
  }

  expand(projectId, open) {
    if (open) this.expanded.add(projectId);
    else this.expanded.delete(projectId);
    saveExpanded(this.expanded);
  }

  // A project's row (its name opens and closes its group; a button opens its panel), then
  // "New chat in this project" and its conversations.
  projectItem(project, conversations) {
    const current = conversations.some((c) => c.id === this.currentId);
    const open = this.expanded.has(project.id) || current;
    const listId = `project-${project.id}-conversations`;
    const name = project.name || gettext("Untitled project");
    const toggle = el(
      "button",
      {
        type: "button",
        class: "project-toggle",
        "aria-expanded": String(open),
        "aria-controls": listId,
        title: name,
        onclick: () => {
          const opening = toggle.getAttribute("aria-expanded") !== "true";
          this.expand(project.id, opening);
          toggle.setAttribute("aria-expanded", String(opening));
          group.hidden = !opening;
          if (opening) this.loadProjectConversations(project, conversations.length);
        },
      },
      icon("caret"),
      el("span", { class: "project-name", text: name }),
      conversations.length ? el("span", { class: "project-count", text: String(conversations.length) }) : null,
    );
    const group = el(
      "ul",
      { id: listId, class: "project-conversations", hidden: !open },
      el(
        "li",
        { class: "project-new-chat-row" },
        el(
          "button",
          {
            type: "button",
            class: "project-new-chat",
            onclick: () => {
              this.close();
              this.onNewInProject(project);
            },
          },
          icon("plus"),
          el("span", { text: gettext("New chat in this project") }),
        ),
      ),
      ...conversations.map((conversation) => this.item(conversation)),
    );
    return el(
      "li",
      { class: "project-item", "data-project-id": project.id, "aria-current": current ? "true" : null },
      el(
        "div",
        { class: "project-row" },
        toggle,
        el(
          "button",
          {
            type: "button",
            class: "icon-btn project-settings",
            "aria-label": interpolate(gettext("Settings of the project “%(name)s”"), { name }, true),
            title: gettext("Project settings"),
            onclick: () => {
              this.close();
              this.onProjectSettings(project);
            },
          },
          icon("settings"),
        ),
      ),
      group,
    );
  }

  // An open project shows all its conversations, also those older than the pages of the
  // list loaded so far (``?project=``, newest first).
  async loadProjectConversations(project, shown) {
    if (shown >= (project.conversation_count ?? 0) || this.loadingProjects.has(project.id)) return;
    this.loadingProjects.add(project.id);
    try {
      const page = await this.loadPage(null, { project: project.id, limit: 200 });
      const known = new Set(this.conversations.map((c) => c.id));
      const older = page.conversations.filter((c) => !known.has(c.id));
      if (older.length) {
        this.conversations = [...this.conversations, ...older].sort((a, b) => (a.updated_at < b.updated_at ? 1 : -1));
        this.render();
      }
    } catch (err) {
      /* the loaded pages still show; "Show older conversations" brings the rest */
    } finally {
      this.loadingProjects.delete(project.id);
    }
  }

  renderProjects(byProject) {
    this.projectList.replaceChildren(
      ...this.projects.map((project) => this.projectItem(project, byProject.get(project.id) || [])),
    );
    this.projectSection.hidden = this.searching;
  }

  render() {
    // A conversation of a project the list knows goes under it; the others by date.
    const byProject = new Map();
    const loose = [];
    for (const conversation of this.conversations) {
      const project = this.projectOf(conversation);
      if (!project) {
        loose.push(conversation);
        continue;
      }
      if (!byProject.has(project.id)) byProject.set(project.id, []);
      byProject.get(project.id).push(conversation);
    }
    this.renderProjects(byProject);
    this.empty.hidden = this.conversations.length > 0 || this.searching;
    const rows = [];
    let group = null;
    for (const conversation of loose) {
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
    if (!this.loadingMore) this.more.textContent = this.moreText();
  }

  moreText() {
    return this.moreError === null
      ? gettext("Show older conversations")
      : interpolate(
          gettext("Could not load older conversations: %(reason)s. Try again"),
          { reason: this.moreError },
          true,
        );
  }

  item(conversation) {
    const current = conversation.id === this.currentId;
    const title = this.titleOf(conversation);
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
            onclick: (event) => this.exportMenu.toggle(event.currentTarget, conversation, title),
          },
          icon("download"),
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
      this.list.parentElement.querySelector(`[data-id="${CSS.escape(conversation.id)}"] .conv-link`)?.focus();
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
          { title: this.titleOf(conversation) },
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

  get searching() {
    return this.search.active;
  }

  // While there is a query its results take the list's place.
  showSearchResults(on) {
    this.list.hidden = on;
    this.projectSection.hidden = on;
    this.more.hidden = on || !this.next;
    if (on) this.empty.hidden = true;
    else this.render();
  }
}

// Which projects' groups are open, kept in this browser.
function loadExpanded() {
  try {
    const ids = JSON.parse(localStorage.getItem(EXPANDED_KEY) || "[]");
    return new Set(Array.isArray(ids) ? ids : []);
  } catch (err) {
    return new Set();
  }
}

function saveExpanded(ids) {
  try {
    localStorage.setItem(EXPANDED_KEY, JSON.stringify([...ids]));
  } catch (err) {
    /* storage refused: the groups stay as they are for this page */
  }
}
