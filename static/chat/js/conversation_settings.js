// A chat's own instructions and its project, from the button in the top bar: the button
// names the project the chat is in (if any); its dialog moves the chat into a project or
// out of it and edits the chat's instructions (sent whole after the project's). A refused
// save keeps the dialog open with what was typed and says why.

import { api } from "./api.js";
import { el } from "./dom.js";
import { InstructionsField, errorLine, openDialog, showError } from "./instructions_field.js";

export class ConversationSettings {
  // host: {config, conversation() -> the conversation shown or null,
  //        newChatProject() -> the project a new chat starts in (or null),
  //        projects() -> the user's projects, ensureConversation() -> Promise<id>,
  //        trackSave(promise), onSaved(conversation), openProject(project)}
  constructor(host) {
    this.host = host;
    this.button = document.getElementById("conversation-settings");
    this.projectName = document.getElementById("conversation-project");
    this.button.addEventListener("click", () => this.open());
  }

  projectOf(conversation) {
    const id = conversation ? conversation.project : this.host.newChatProject()?.id;
    if (id === null || id === undefined) return null;
    return this.host.projects().find((p) => p.id === id) || null;
  }

  // The top bar's button: the project's name when the chat is in one.
  refresh() {
    const conversation = this.host.conversation();
    const project = this.projectOf(conversation);
    const hasOwn = Boolean(conversation?.instructions);
    this.projectName.textContent = project ? project.name : "";
    this.projectName.hidden = !project;
    this.button.classList.toggle("has-instructions", hasOwn);
    const label = project
      ? interpolate(gettext("Project “%(name)s”: this chat's project and instructions"), { name: project.name }, true)
      : gettext("This chat's project and instructions");
    this.button.setAttribute("aria-label", label);
    this.button.title = label;
  }

  open() {
    const conversation = this.host.conversation();
    const current = this.projectOf(conversation);
    this.projectSelect = el(
      "select",
      { id: "conversation-project-select", class: "panel-select" },
      el("option", { value: "", text: gettext("No project") }),
      ...this.host.projects().map((p) => el("option", { value: String(p.id), text: p.name })),
    );
    this.projectSelect.value = current ? String(current.id) : "";
    this.instructions = new InstructionsField({
      id: "conversation-instructions",
      label: gettext("This chat's instructions"),
      hint: gettext("Sent whole with every message of this chat, after the project's instructions."),
      value: conversation?.instructions || "",
      maxChars: this.host.config.maxInstructionsChars,
    });
    this.error = errorLine("conversation-settings-error");
    this.saveButton = el("button", { type: "submit", class: "btn btn-primary", id: "conversation-settings-save", text: gettext("Save") });
    const projectSettings = el("button", {
      type: "button",
      class: "btn",
      id: "conversation-project-settings",
      text: gettext("Project settings"),
      hidden: !current,
      onclick: () => {
        const project = this.projectOf(this.host.conversation());
        if (!project) return;
        this.dialog.close();
        this.host.openProject(project);
      },
    });
    this.projectSelect.addEventListener("change", () => {
      projectSettings.hidden = !current || this.projectSelect.value !== String(current.id);
    });
    this.dialog = openDialog({
      className: "conversation-dialog",
      labelledBy: "conversation-dialog-title",
      build: (dialog) =>
        dialog.append(
          el("h2", { id: "conversation-dialog-title", class: "panel-title", text: gettext("This chat") }),
          el(
            "form",
            { class: "panel-form", method: "dialog", onsubmit: (event) => this.save(event) },
            el(
              "div",
              { class: "field" },
              el("label", { for: "conversation-project-select", text: gettext("Project") }),
              el("div", { class: "field-row" }, this.projectSelect, projectSettings),
            ),
            this.instructions.node,
            this.error,
            el(
              "div",
              { class: "panel-actions" },
              el("span", { class: "spacer" }),
              el("button", { type: "button", class: "btn", text: gettext("Cancel"), onclick: () => this.dialog.close() }),
              this.saveButton,
            ),
          ),
        ),
      onClose: () => this.button.focus(),
    });
    this.instructions.textarea.focus();
  }

  async save(event) {
    event.preventDefault();
    showError(this.error, "");
    const before = this.host.conversation();
    const project = this.projectSelect.value ? Number(this.projectSelect.value) : null;
    const fields = {};
    if (project !== (before ? before.project ?? null : this.host.newChatProject()?.id ?? null)) fields.project = project;
    if (this.instructions.value !== (before?.instructions || "")) fields.instructions = this.instructions.value;
    if (!Object.keys(fields).length) {
      this.dialog.close();
      return;
    }
    this.saveButton.disabled = true;
    const saving = this.patch(fields);
    this.host.trackSave(saving);
    const saved = await saving;
    if (!saved) return;
    this.dialog.close();
    this.host.onSaved(saved);
  }

  // The conversation saved, or null when refused (said in the dialog, nothing lost).
  async patch(fields) {
    try {
      const id = await this.host.ensureConversation();
      return await api.updateConversation(id, fields);
    } catch (err) {
      this.saveButton.disabled = false;
      showError(this.error, err.message);
      (err.code?.includes("project") ? this.projectSelect : this.instructions.textarea).focus();
      return null;
    }
  }
}
