// The composer: text, ReAct/DAG switch, images and documents (button, drag-and-drop,
// paste) with thumbnails or chips and remove-before-send, Enter to send, Shift+Enter for
// a new line.

import { api, attachmentUrl } from "./api.js";
import { loadDraft, saveDraft } from "./drafts.js";
import { el } from "./dom.js";
import { documentChip, imageOrNotice } from "./render.js";

export const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/webp", "image/gif"]);
// What the server reads as a document (it decides by the content; this only spares an
// upload of what it would refuse anyway).
const DOCUMENT_EXTENSIONS = new Set(["pdf", "docx", "pptx", "xlsx", "txt", "md", "markdown", "csv", "json", "html", "htm"]);
const DOCUMENT_TYPES = new Set([
  "application/pdf",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  "application/vnd.openxmlformats-officedocument.presentationml.presentation",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  "text/plain",
  "text/markdown",
  "text/csv",
  "application/json",
  "text/html",
]);

export function isDocument(file) {
  const ext = (file.name || "").split(".").pop().toLowerCase();
  return DOCUMENT_TYPES.has(file.type) || DOCUMENT_EXTENSIONS.has(ext);
}

export class Composer {
  // draftKey(): the conversation whose draft the composer holds (null: a new chat).
  constructor({
    onSend,
    onStop,
    ensureConversation,
    maxUploadBytes,
    toast,
    draftKey = () => null,
    pasteAttachChars = 20000,
    maxMessageChars = 100000,
  }) {
    // Text longer than this (pasted, or typed and sent) goes as a text document attached
    // to the message, read by the existing attachment rules (docs/protocol.md, "Long text").
    this.pasteAttachChars = pasteAttachChars;
    this.maxMessageChars = maxMessageChars;
    this.pastes = 0;
    this.sendWhenReady = false;
    this.draftKey = draftKey;
    this.notice = document.getElementById("composer-notice");
    this.onSend = onSend;
    this.onStop = onStop;
    this.ensureConversation = ensureConversation;
    this.maxUploadBytes = maxUploadBytes || 10 * 1024 * 1024;
    this.toast = toast;
    this.form = document.getElementById("composer");
    this.prompt = document.getElementById("prompt");
    this.sendBtn = document.getElementById("send");
    this.stopBtn = document.getElementById("stop");
    this.fileInput = document.getElementById("file-input");
    this.tray = document.getElementById("attachment-tray");
    this.dropzone = document.getElementById("dropzone");
    this.items = []; // {key, file, previewUrl, state: uploading|ready|failed, fileId, node}
    this.running = false;
    this.bind();
  }

  bind() {
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.submit();
    });
    this.prompt.addEventListener("keydown", (event) => {
      // isComposing: Enter confirms an IME candidate (Chinese, Japanese…), it must not send.
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.submit();
      } else if (event.key === "Escape" && this.running) {
        event.preventDefault();
        this.onStop();
      }
    });
    this.prompt.addEventListener("input", () => {
      this.refresh();
      this.keepDraft();
    });
    this.prompt.addEventListener("paste", (event) => {
      // Files pasted (an image, a document copied in a file manager); pasted text stays text.
      const files = [...(event.clipboardData?.files || [])];
      if (files.length) {
        event.preventDefault();
        this.addFiles(files);
        return;
      }
      // A long text pasted becomes a text document attached (a chip with its size), so
      // no length limit can refuse it once sent and the chat shows no giant bubble.
      const text = event.clipboardData?.getData("text/plain") || "";
      if (text.length > this.pasteAttachChars) {
        event.preventDefault();
        this.attachText(text);
      }
    });
    document.getElementById("attach").addEventListener("click", () => this.fileInput.click());
    this.fileInput.addEventListener("change", () => {
      this.addFiles([...this.fileInput.files]);
      this.fileInput.value = "";
    });
    this.stopBtn.addEventListener("click", () => this.onStop());

    // Drag-and-drop anywhere on the main pane.
    const pane = document.getElementById("main");
    let depth = 0;
    const hasFiles = (event) => [...(event.dataTransfer?.types || [])].includes("Files");
    pane.addEventListener("dragenter", (event) => {
      if (!hasFiles(event)) return;
      depth += 1;
      this.dropzone.hidden = false;
    });
    pane.addEventListener("dragleave", () => {
      depth = Math.max(0, depth - 1);
      if (!depth) this.dropzone.hidden = true;
    });
    pane.addEventListener("dragover", (event) => {
      if (hasFiles(event)) event.preventDefault();
    });
    pane.addEventListener("drop", (event) => {
      if (!hasFiles(event)) return;
      event.preventDefault();
      depth = 0;
      this.dropzone.hidden = true;
      this.addFiles([...event.dataTransfer.files]);
    });
  }

  get mode() {
    return document.querySelector('input[name="mode"]:checked')?.value || "react";
  }

  set mode(value) {
    const radio = document.getElementById(value === "dag" ? "mode-dag" : "mode-react");
    if (radio) radio.checked = true;
  }

  onModeChange(handler) {
    for (const radio of document.querySelectorAll('input[name="mode"]')) {
      radio.addEventListener("change", () => handler(this.mode));
    }
  }

  setRunning(running) {
    this.running = running;
    this.stopBtn.hidden = !running;
    this.stopBtn.disabled = false;
    this.prompt.placeholder = running
      ? gettext("Add a follow-up — the agent sees it at its next step…")
      : gettext("Message fimone…");
    this.refresh();
  }

  setStopping() {
    this.stopBtn.disabled = true;
  }

  focus() {
    this.prompt.focus();
  }

  refresh() {
    const text = this.prompt.value.trim();
    const uploading = this.items.some((i) => i.state === "uploading");
    const ready = this.items.some((i) => i.state === "ready");
    this.sendBtn.disabled = uploading || (!text && !ready);
    // Grow with the text, up to the CSS max-height.
    this.prompt.style.height = "auto";
    this.prompt.style.height = `${this.prompt.scrollHeight}px`;
  }

  clearImages() {
    for (const item of this.items) if (item.previewUrl) URL.revokeObjectURL(item.previewUrl);
    this.items = [];
    this.renderTray();
  }

  async addFiles(files) {
    for (const file of files) {
      const asDocument = !IMAGE_TYPES.has(file.type) && isDocument(file);
      if (!IMAGE_TYPES.has(file.type) && !asDocument) {
        this.toast(
          file.name
            ? interpolate(gettext("%(name)s is not a supported image or document."), { name: file.name }, true)
            : gettext("That file is not a supported image or document."),
        );
        continue;
      }
      if (file.size > this.maxUploadBytes) {
        const size = Math.round(this.maxUploadBytes / 1048576);
        this.toast(
          file.name
            ? interpolate(gettext("%(name)s is larger than %(size)s MB."), { name: file.name, size }, true)
            : interpolate(gettext("The image is larger than %(size)s MB."), { size }, true),
        );
        continue;
      }
      const item = {
        key: crypto.randomUUID ? crypto.randomUUID() : String(Math.random()),
        file,
        document: asDocument,
        previewUrl: asDocument ? "" : URL.createObjectURL(file),
        state: "uploading",
        fileId: null,
      };
      this.items.push(item);
      this.renderTray();
      this.upload(item);
    }
  }

  // ``text`` as a text document in the tray (uploaded like any other file).
  attachText(text) {
    this.pastes += 1;
    const name = `pasted-text-${this.pastes}.txt`;
    this.addFiles([new File([text], name, { type: "text/plain" })]);
    this.showNotice(
      interpolate(
        gettext("Text longer than %(count)s characters is attached as a text document."),
        { count: this.pasteAttachChars.toLocaleString() },
        true,
      ),
    );
  }

  async upload(item) {
    try {
      const conversationId = await this.ensureConversation();
      const result = await api.uploadImage(conversationId, item.file);
      item.fileId = result.file_id;
      item.mimeType = result.mime_type;
      item.info = result;
      item.state = "ready";
      // The server reads the bytes: a file the browser called an image may be a document.
      if ((result.kind === "document") !== item.document) {
        item.document = result.kind === "document";
        item.tile = null;
      }
      // A scan without a text layer, or pages left out at the limits: said once, here.
      for (const warning of result.warnings || []) this.toast(`${result.name || item.file.name}: ${warning}`);
    } catch (err) {
      item.state = "failed";
      item.error = err.message;
      this.toast(interpolate(gettext("Upload failed: %(reason)s"), { reason: err.message }, true));
    }
    if (this.items.includes(item)) this.renderTray();
    this.keepDraft();
    // Sent with Enter while its long text was still uploading as a document: it goes now.
    if (this.sendWhenReady && !this.items.some((i) => i.state === "uploading")) {
      this.sendWhenReady = false;
      if (!this.items.some((i) => i.state === "failed")) this.submit();
    }
  }

  remove(item) {
    this.items = this.items.filter((i) => i !== item);
    if (item.previewUrl) URL.revokeObjectURL(item.previewUrl);
    this.renderTray();
    this.keepDraft();
    this.prompt.focus();
  }

  renderTray() {
    this.tray.replaceChildren(...this.items.map((item, index) => this.tile(item, index)));
    this.tray.hidden = this.items.length === 0;
    this.refresh();
  }

  // Each image keeps one tile for its whole life: re-rendering the tray only updates its
  // state, so a preview is decoded once and a "No preview" notice is not rebuilt (and lost
  // for a moment) whenever another upload finishes.
  tile(item, index) {
    if (item.document) return this.documentTile(item);
    const name = item.file.name || interpolate(gettext("image %(number)s"), { number: index + 1 }, true);
    if (!item.tile) {
      item.stateNode = el("span", { class: "thumb-state" });
      item.tile = el(
        "li",
        {},
        imageOrNotice(
          {
            src: item.previewUrl,
            alt: interpolate(gettext("Image to send: %(name)s"), { name }, true),
          },
          gettext("No preview"),
        ),
        item.stateNode,
        el("button", {
          type: "button",
          class: "remove",
          "aria-label": interpolate(gettext("Remove %(name)s"), { name }, true),
          text: "×",
          onclick: () => this.remove(item),
        }),
      );
    }
    const stateText = { uploading: gettext("Uploading…"), failed: gettext("Failed") }[item.state];
    item.tile.className = `thumb ${item.state}`;
    item.tile.title = item.error || name;
    item.stateNode.textContent = stateText || "";
    item.stateNode.hidden = !stateText;
    return item.tile;
  }

  // A document's chip: its name, then its pages and size once the server has read it.
  documentTile(item) {
    const name = item.file.name;
    const info = item.info || { name, size: item.file.size };
    const stateText = { uploading: gettext("Uploading…"), failed: gettext("Failed") }[item.state];
    return el(
      "li",
      { class: `doc-tile ${item.state}`, title: item.error || name },
      documentChip(info, { pending: !item.info }),
      stateText ? el("span", { class: "doc-state", text: stateText }) : null,
      el("button", {
        type: "button",
        class: "remove",
        "aria-label": interpolate(gettext("Remove %(name)s"), { name }, true),
        text: "×",
        onclick: () => this.remove(item),
      }),
    );
  }

  submit() {
    const typed = this.prompt.value.trim();
    if (typed.length > this.pasteAttachChars) {
      // Typed (or pasted in pieces) past the size: it goes as a document, once uploaded.
      this.prompt.value = "";
      this.attachText(typed);
      this.sendWhenReady = true;
      this.keepDraft();
      return;
    }
    if (this.sendBtn.disabled) {
      if (this.items.some((i) => i.state === "uploading")) {
        this.sendWhenReady = true;
        this.toast(gettext("Files are still uploading…"));
      }
      return;
    }
    const content = this.prompt.value.trim();
    if (content.length > this.maxMessageChars) {
      // Checked before sending: refused here, the message stays in the box.
      this.showNotice(
        interpolate(
          gettext("The message is longer than %(count)s characters: shorten it or attach it as a file."),
          { count: this.maxMessageChars.toLocaleString() },
          true,
        ),
      );
      return;
    }
    const ready = this.items.filter((i) => i.state === "ready");
    const images = ready
      .filter((i) => !i.document)
      .map((i) => ({ file_id: i.fileId, mime_type: i.mimeType, previewUrl: i.previewUrl }));
    const documents = ready.filter((i) => i.document).map((i) => ({ ...i.info }));
    const accepted = this.onSend({ content, images, documents, mode: this.mode });
    if (accepted === false) return; // keep the text: nothing was sent
    this.prompt.value = "";
    this.showNotice("");
    // Preview URLs stay alive: the sent message shows them until reload.
    this.items = [];
    this.renderTray();
    this.keepDraft();
  }

  // ---- drafts (drafts.js) ----------------------------------------------------------------

  keepDraft() {
    const attachments = this.items
      .filter((i) => i.state === "ready")
      .map((i) => ({
        file_id: i.fileId,
        kind: i.document ? "document" : "image",
        mime_type: i.mimeType,
        name: i.file.name || "",
        size: i.file.size || 0,
        info: i.document ? i.info : undefined,
      }));
    saveDraft(this.draftKey(), { content: this.prompt.value, attachments, notice: this.notice?.textContent || "" });
  }

  // Shows the draft kept for the conversation now on screen (or an empty composer).
  showDraft() {
    const draft = loadDraft(this.draftKey());
    this.prompt.value = draft?.content || "";
    this.items = (draft?.attachments || []).filter((a) => a.file_id).map((a) => this.keptItem(a));
    this.renderTray();
    this.showNotice(draft?.notice || "");
  }

  // A message the server refused before storing it, back in the box with its files.
  takeBack({ content, images = [], documents = [] }, notice) {
    this.prompt.value = content || "";
    const files = [
      ...images.map((i) => ({ ...i, kind: "image" })),
      ...documents.map((d) => ({ ...d, kind: "document", info: d })),
    ];
    this.items = files.filter((a) => a.file_id).map((a) => this.keptItem(a));
    this.renderTray();
    this.showNotice(notice);
    this.keepDraft();
    this.prompt.focus();
  }

  keptItem(a) {
    const document = a.kind === "document";
    return {
      key: crypto.randomUUID ? crypto.randomUUID() : String(Math.random()),
      file: { name: a.name || a.info?.name || "", size: a.size || a.info?.size || 0 },
      document,
      previewUrl: document ? "" : a.previewUrl || attachmentUrl(a.file_id),
      state: "ready",
      fileId: a.file_id,
      mimeType: a.mime_type,
      info: document ? a.info || a : undefined,
    };
  }

  showNotice(text) {
    if (!this.notice) return;
    this.notice.textContent = text || "";
    this.notice.hidden = !text;
  }
}
