// A project's panel (docs/ui.md, "Projects"): its name, instructions (with their count
// against the server's limit), default model and files — upload, size and pages, remove —
// and deleting it, which asks what becomes of its conversations. The Projects API is
// described in docs/protocol.md; every error it answers is shown in the panel, next to what
// was typed, which stays.

import { api } from "./api.js";
import { BUILTIN, modelChoices, modelFields, pickOf } from "./chrome.js";
import { IMAGE_TYPES, isDocument } from "./composer.js";
import { el } from "./dom.js";
import { InstructionsField, errorLine, openDialog, showError } from "./instructions_field.js";
import { documentChip } from "./render.js";

export class ProjectPanel {
  // host: {config, onSaved(project), onDeleted(project, {deleteConversations}),
  //        onNewChat(project), toast(text)}
  constructor(host) {
    this.host = host;
    this.dialog = null;
  }

  get isOpen() {
    return Boolean(this.dialog?.open);
  }

  // ``project``: the project to change, or null for a new one.
  open(project = null) {
    // Gone at once: its "close" event comes later, and the new panel reuses its ids.
    this.dialog?.close();
    this.dialog?.remove();
    this.project = project;
    this.files = [];
    this.uploads = 0;
    const dialog = openDialog({
      className: "project-dialog",
      labelledBy: "project-dialog-title",
      build: (node) => this.build(node),
      // "close" arrives a moment later: the panel may show another project by then.
      onClose: () => {
        if (this.dialog === dialog) this.dialog = null;
      },
    });
    this.dialog = dialog;
    this.nameInput.focus();
    if (project) this.loadFiles();
  }

  build(dialog) {
    const project = this.project;
    this.title = el("h2", {
      id: "project-dialog-title",
      class: "panel-title",
      text: project ? gettext("Project settings") : gettext("New project"),
    });
    this.nameInput = el("input", {
      id: "project-name",
      type: "text",
      class: "panel-input",
      autocomplete: "off",
      value: project?.name || "",
    });
    this.instructions = new InstructionsField({
      id: "project-instructions",
      label: gettext("Instructions"),
      hint: gettext("Sent whole with every message of this project's conversations, before a chat's own."),
      value: project?.instructions || "",
      maxChars: this.host.config.maxInstructionsChars,
    });
    this.modelSelect = el(
      "select",
      { id: "project-model", class: "panel-select" },
      ...modelChoices(this.host.config).map((choice) => el("option", choice)),
    );
    const pick = project ? pickOf(project) : null;
    const wanted = pick === null ? "" : String(pick);
    this.modelSelect.value = [...this.modelSelect.options].some((o) => o.value === wanted) ? wanted : "";
    this.error = errorLine("project-error");
    this.saveButton = el("button", {
      type: "submit",
      class: "btn btn-primary",
      id: "project-save",
      text: project ? gettext("Save") : gettext("Create project"),
    });
    const form = el(
      "form",
      { class: "panel-form", method: "dialog", onsubmit: (event) => this.save(event) },
      el(
        "div",
        { class: "field" },
        el("label", { for: "project-name", text: gettext("Name") }),
        this.nameInput,
      ),
      this.instructions.node,
      el(
        "div",
        { class: "field" },
        el("label", { for: "project-model", text: gettext("Model for new chats") }),
        this.modelSelect,
      ),
      this.error,
      el(
        "div",
        { class: "panel-actions" },
        project
          ? el("button", {
              type: "button",
              class: "btn btn-danger-outline",
              id: "project-delete",
              text: gettext("Delete project"),
              onclick: () => this.confirmDelete(),
            })
          : null,
        project
          ? el("a", {
              class: "btn",
              id: "project-export",
              href: `/api/projects/${encodeURIComponent(project.id)}/export/`,
              download: "",
              text: gettext("Download as JSON"),
            })
          : null,
        el("span", { class: "spacer" }),
        el("button", {
          type: "button",
          class: "btn",
          text: project ? gettext("Close") : gettext("Cancel"),
          onclick: () => this.dialog.close(),
        }),
        this.saveButton,
      ),
    );
    dialog.append(this.title, form, project ? this.filesSection() : this.filesLater());
  }

  // A new project has no files yet: they are added once it exists.
  filesLater() {
    return el("p", { class: "field-hint panel-files-later", text: gettext("Files can be added once the project is created.") });
  }

  filesSection() {
    this.fileList = el("ul", { class: "project-files", "aria-labelledby": "project-files-title" });
    this.fileInput = el("input", {
      type: "file",
      id: "project-file-input",
      multiple: true,
      hidden: true,
      accept: document.getElementById("file-input")?.accept || "",
      onchange: () => {
        this.addFiles([...this.fileInput.files]);
        this.fileInput.value = "";
      },
    });
    this.fileError = errorLine("project-file-error");
    this.fileStatus = el("p", { class: "field-hint", role: "status", "aria-live": "polite" });
    return el(
      "section",
      { class: "panel-files" },
      el("h3", { id: "project-files-title", class: "panel-subtitle", text: gettext("Files") }),
      el("p", {
        class: "field-hint",
        text: gettext("Knowledge for every conversation of the project: small files are read whole, large ones searched."),
      }),
      this.fileList,
      this.fileError,
      this.fileStatus,
      el(
        "button",
        {
          type: "button",
          class: "btn",
          id: "project-upload",
          onclick: () => this.fileInput.click(),
        },
        gettext("Add files"),
      ),
      this.fileInput,
    );
  }

  async loadFiles() {
    const project = this.project;
    try {
      const { files } = await api.projectFiles(project.id);
      if (this.project !== project || !this.dialog) return;
      this.files = files;
      this.renderFiles();
    } catch (err) {
      showError(this.fileError, interpolate(gettext("Could not list the files: %(reason)s"), { reason: err.message }, true));
    }
  }

  renderFiles() {
    this.fileList.replaceChildren(
      ...this.files.map((file) => {
        const name = file.name || gettext("document");
        return el(
          "li",
          { class: "project-file", "data-file-id": file.id },
          documentChip({ ...file, document_kind: file.document_kind || extensionOf(name), url: file.url || null }),
          el("button", {
            type: "button",
            class: "btn project-file-remove",
            text: gettext("Remove"),
            "aria-label": interpolate(gettext("Remove %(name)s"), { name }, true),
            onclick: (event) => this.removeFile(file, event.currentTarget),
          }),
        );
      }),
    );
    if (!this.files.length) {
      this.fileList.append(el("li", { class: "project-files-empty", text: gettext("No files yet.") }));
    }
  }

  // The same types and size as a chat's attachments; what the browser can tell is refused
  // here, the rest by the server, each with its reason.
  async addFiles(files) {
    showError(this.fileError, "");
    const refused = [];
    const project = this.project;
    const maxBytes = this.host.config.maxUploadBytes || 10 * 1024 * 1024;
    for (const file of files) {
      if (!IMAGE_TYPES.has(file.type) && !isDocument(file)) {
        refused.push(interpolate(gettext("%(name)s is not a supported image or document."), { name: file.name }, true));
        continue;
      }
      if (file.size > maxBytes) {
        const size = Math.round(maxBytes / 1048576);
        refused.push(interpolate(gettext("%(name)s is larger than %(size)s MB."), { name: file.name, size }, true));
        continue;
      }
      this.uploads += 1;
      this.fileStatus.textContent = interpolate(gettext("Uploading %(name)s…"), { name: file.name }, true);
      try {
        const added = await api.uploadProjectFile(project.id, file);
        if (this.project === project && this.dialog) {
          // The list read when the panel opened may have it already (read after it was stored).
          this.files = [...this.files.filter((f) => f.id !== added.id), added];
          this.renderFiles();
        }
        for (const warning of added.warnings || []) refused.push(`${added.name || file.name}: ${warning}`);
      } catch (err) {
        refused.push(interpolate(gettext("%(name)s was not added: %(reason)s"), { name: file.name, reason: err.message }, true));
      } finally {
        this.uploads -= 1;
      }
    }
    if (this.project !== project || !this.dialog) return;
    this.fileStatus.textContent = "";
    showError(this.fileError, refused.join("\n"));
  }

  async removeFile(file, button) {
    button.disabled = true;
    showError(this.fileError, "");
    try {
      await api.deleteProjectFile(this.project.id, file.id);
    } catch (err) {
      if (err.status !== 404) {
        button.disabled = false;
        showError(this.fileError, interpolate(gettext("Could not remove %(name)s: %(reason)s"), { name: file.name, reason: err.message }, true));
        return;
      }
    }
    this.files = this.files.filter((f) => f.id !== file.id);
    this.renderFiles();
    this.fileStatus.textContent = interpolate(gettext("%(name)s removed."), { name: file.name }, true);
    this.dialog?.querySelector("#project-upload")?.focus();
  }

  // The model picked for new chats: a ModelConfig id, ``BUILTIN``, or null (the default).
  modelPick() {
    const chosen = this.modelSelect.value;
    if (!chosen) return null;
    return chosen === BUILTIN ? BUILTIN : Number(chosen);
  }

  async save(event) {
    event.preventDefault();
    showError(this.error, "");
    const fields = {
      name: this.nameInput.value,
      instructions: this.instructions.value,
      ...modelFields(this.modelPick()),
    };
    this.saveButton.disabled = true;
    let saved;
    try {
      saved = this.project ? await api.updateProject(this.project.id, fields) : await api.createProject(fields);
    } catch (err) {
      // Nothing typed is lost: the panel stays open with it, and says why.
      this.saveButton.disabled = false;
      showError(this.error, err.message);
      (err.code?.includes("instructions") ? this.instructions.textarea : err.code?.includes("name") ? this.nameInput : this.saveButton).focus();
      return;
    }
    this.saveButton.disabled = false;
    const created = !this.project;
    this.host.onSaved(saved);
    if (created) {
      // Open as the new project's panel: its files can be added now.
      this.open(saved);
      this.fileList && this.dialog.querySelector("#project-upload").focus();
      this.host.toast(gettext("Project created."));
      return;
    }
    this.dialog.close();
    this.host.toast(gettext("Project saved."));
  }

  // Asks what becomes of the project's conversations: kept (moved out of it, the default)
  // or deleted with it.
  confirmDelete() {
    const project = this.project;
    const choice = (value, label, checked) =>
      el(
        "label",
        { class: "choice" },
        el("input", { type: "radio", name: "project-conversations", value, checked }),
        el("span", { text: label }),
      );
    const keep = choice("keep", gettext("Keep them, moved out of the project"), true);
    const remove = choice("delete", gettext("Delete them too"), false);
    const cancel = el("button", { type: "button", class: "btn", text: gettext("Cancel") });
    const confirm = el("button", { type: "button", class: "btn btn-danger", id: "project-delete-confirm", text: gettext("Delete project") });
    const dialog = openDialog({
      className: "confirm-dialog project-delete-dialog",
      labelledBy: "project-delete-text",
      build: (node) =>
        node.append(
          el("p", {
            id: "project-delete-text",
            text: interpolate(
              gettext("Delete the project “%(name)s” and its files? This cannot be undone."),
              { name: project.name },
              true,
            ),
          }),
          el(
            "fieldset",
            { class: "choices" },
            el("legend", { text: gettext("Its conversations:") }),
            keep,
            remove,
          ),
          el("div", { class: "confirm-actions" }, cancel, confirm),
        ),
    });
    cancel.addEventListener("click", () => dialog.close());
    confirm.addEventListener("click", async () => {
      const deleteConversations = dialog.querySelector('input[value="delete"]').checked;
      confirm.disabled = true;
      try {
        await api.deleteProject(project.id, { deleteConversations });
      } catch (err) {
        if (err.status !== 404) {
          confirm.disabled = false;
          dialog.close();
          showError(this.error, interpolate(gettext("Could not delete the project: %(reason)s"), { reason: err.message }, true));
          return;
        }
      }
      dialog.close();
      this.dialog?.close();
      this.host.onDeleted(project, { deleteConversations });
    });
    cancel.focus();
  }
}

// "notes.txt" -> "txt": what the file's chip shows as its kind.
function extensionOf(name) {
  const dot = name.lastIndexOf(".");
  return dot > 0 ? name.slice(dot + 1) : "";
}
