// The composer's tools menu: which tools this chat's answers may use, by source (built-in,
// and every other source such as an MCP server), each tool with its description, and a
// switch per source and per tool that turns it off for this chat alone (docs/protocol.md,
// "Tools of a conversation"). A tool server that cannot be listed says so plainly.

import { api } from "./api.js";
import { el } from "./dom.js";

export class ToolsMenu {
  // host: {conversationId() -> id|null, ensureConversation() -> Promise<id>,
  //        trackSave(promise) -> promise, toast(text), onChanged()}
  constructor(host) {
    this.host = host;
    this.button = document.getElementById("tools-button");
    this.menu = document.getElementById("tools-menu");
    this.count = document.getElementById("tools-count");
    this.sources = [];
    this.loadToken = 0;
    this.switches = 0; // switches made so far
    this.saving = Promise.resolve(); // settles when every switch made so far is saved
    this.button.addEventListener("click", () => this.show(this.menu.hidden));
    document.addEventListener("click", (event) => {
      if (!this.menu.hidden && !this.menu.contains(event.target) && !this.button.contains(event.target)) {
        this.show(false);
      }
    });
    // Escape closes the menu wherever the focus is (creating the conversation on the first
    // switch may move it to the composer).
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && !this.menu.hidden) {
        event.preventDefault();
        const inside = this.menu.contains(document.activeElement);
        this.show(false);
        if (inside) this.button.focus();
      }
    });
  }

  show(open) {
    this.menu.hidden = !open;
    this.button.setAttribute("aria-expanded", String(open));
    if (open) {
      // The listing may arrive after the user has already moved into the menu: their focus
      // stays where they put it.
      this.load().then(() => {
        if (!this.menu.contains(document.activeElement)) this.menu.querySelector("input, button")?.focus();
      });
    }
  }

  // The conversation shown changed (or its tools did): read the listing again.
  async load() {
    const token = ++this.loadToken;
    // A listing read while a switch is being saved may be answered from before the save and
    // arrive after it: it is read once the saves have settled.
    await this.saving;
    if (token !== this.loadToken) return;
    const switches = this.switches;
    try {
      const { sources } = await api.tools(this.host.conversationId());
      // A switch made meanwhile answered with a newer listing: this one is stale.
      if (token !== this.loadToken || switches !== this.switches) return;
      this.sources = sources;
    } catch (err) {
      if (token !== this.loadToken) return;
      this.sources = [];
      this.menu.replaceChildren(el("p", { class: "tools-empty", text: err.message }));
      return;
    }
    this.render();
  }

  render() {
    const on = this.sources
      .filter((s) => s.enabled)
      .reduce((n, s) => n + s.tools.filter((t) => t.enabled !== false).length, 0);
    this.count.textContent = on ? String(on) : "";
    this.button.title = interpolate(
      ngettext("%(count)s tool on in this chat", "%(count)s tools on in this chat", on),
      { count: on },
      true,
    );
    // A new listing replaces every switch: the one the user is on keeps the focus, so a key
    // pressed as the listing arrives still reaches it.
    const focused = this.menu.contains(document.activeElement) ? document.activeElement.id : "";
    this.menu.replaceChildren(
      el("p", { class: "tools-heading", text: gettext("Tools this chat's answers may use") }),
      ...this.sources.map((source) => this.sourceNode(source)),
    );
    if (focused) document.getElementById(focused)?.focus();
  }

  sourceNode(source) {
    const id = `tools-source-${source.source.replace(/[^A-Za-z0-9_-]/g, "_")}`;
    const header = source.can_disable
      ? el(
          "label",
          { class: "tools-source-switch", for: id },
          el("input", {
            type: "checkbox",
            id,
            role: "switch",
            checked: source.enabled,
            onchange: (event) => this.switchSource(source, event.currentTarget),
          }),
          el("span", { class: "tools-source-label", text: source.label }),
        )
      : el("span", { class: "tools-source-label", text: source.label });
    const list = el("ul", { class: "tools-list" }, ...source.tools.map((tool) => this.toolNode(source, tool)));
    return el(
      "section",
      { class: `tools-source${source.enabled ? "" : " tools-source-off"}`, "data-source": source.source },
      header,
      source.note ? el("p", { class: "tools-note", text: source.note }) : null,
      source.error ? el("p", { class: "tools-note tools-error", text: source.error }) : null,
      source.tools.length
        ? list
        : source.error
          ? null
          : el("p", { class: "tools-empty", text: gettext("No tools listed right now.") }),
    );
  }

  // One tool: a switch with its name, what it does below.
  toolNode(source, tool) {
    const id = `tools-tool-${tool.name.replace(/[^A-Za-z0-9_-]/g, "_")}`;
    return el(
      "li",
      { class: `tools-tool${tool.enabled === false ? " tools-tool-off" : ""}`, "data-tool": tool.name },
      el(
        "label",
        { class: "tools-tool-switch", for: id },
        el("input", {
          type: "checkbox",
          id,
          role: "switch",
          checked: tool.enabled !== false,
          disabled: !source.enabled,
          onchange: (event) => this.switchTool(tool, event.currentTarget),
        }),
        el("code", { text: tool.name }),
        tool.needs_approval
          ? el("span", {
              class: "tools-badge",
              text: tool.approved ? gettext("always allowed here") : gettext("asks first"),
            })
          : null,
      ),
      tool.description ? el("p", { class: "tools-description", text: tool.description }) : null,
    );
  }

  switchTool(tool, input) {
    return this.track(this.saveToolSwitch(tool, input));
  }

  // A save never rejects (it says its failure in a toast and puts the switch back).
  track(save) {
    this.switches += 1;
    this.saving = Promise.all([this.saving, save]);
    return this.host.trackSave(save);
  }

  async saveToolSwitch(tool, input) {
    const enabled = input.checked;
    input.disabled = true;
    try {
      const id = await this.host.ensureConversation();
      const { sources } = await api.switchTool(id, tool.name, enabled);
      this.sources = sources;
      this.render();
      this.menu.querySelector(`[data-tool="${CSS.escape(tool.name)}"] input`)?.focus();
      this.host.onChanged();
    } catch (err) {
      input.checked = !enabled;
      input.disabled = false;
      this.host.toast(
        interpolate(gettext("Could not switch %(source)s: %(reason)s"), { source: tool.name, reason: err.message }, true),
      );
    }
  }

  // A message sent right after a switch waits for its save (``trackSave``), so its answer
  // uses the tools the menu shows.
  switchSource(source, input) {
    return this.track(this.saveSwitch(source, input));
  }

  async saveSwitch(source, input) {
    const enabled = input.checked;
    input.disabled = true;
    try {
      const id = await this.host.ensureConversation();
      const { sources } = await api.switchToolSource(id, source.source, enabled);
      this.sources = sources;
      this.render();
      this.menu.querySelector(`[data-source="${CSS.escape(source.source)}"] input`)?.focus();
      this.host.onChanged();
    } catch (err) {
      input.checked = !enabled;
      input.disabled = false;
      this.host.toast(
        interpolate(gettext("Could not switch %(source)s: %(reason)s"), { source: source.label, reason: err.message }, true),
      );
    }
  }
}
