// The app's side of the conversation's socket (socket.js): connecting, what its states
// show, the outbox of frames waiting for it to open, and catching up after a drop from
// the messages API. Methods of ChatApp (app.js), kept here to keep that module small.

import { api, loginUrl } from "./api.js";
import { notReached } from "./app_sending.js";
import { ChatSocket } from "./socket.js";

export const connectionMethods = {
  connect() {
    if (!this.conversation || this.socket) return;
    this.socket = new ChatSocket(this.conversation.id, {
      onEvent: (frame) => this.onEvent(frame),
      onStatus: (state, detail) => this.onSocketStatus(state, detail),
    });
    this.socket.connect();
  },

  onSocketStatus(state, detail) {
    if (state === "reconnecting" && detail.draining) {
      this.setConnection(
        gettext("The server is restarting; your message will be sent again in a moment."),
      );
    } else if (state === "reconnecting") {
      const text = detail.delay
        ? interpolate(
            gettext("Connection lost. Reconnecting in %(seconds)s s…"),
            { seconds: Math.ceil(detail.delay / 1000) },
            true,
          )
        : gettext("Connection lost. Reconnecting…");
      this.setConnection(text, "error");
      // A refused handshake looks like a network error: every few tries, ask the API
      // whether we are still logged in (401 → login page) and the conversation exists.
      if (detail.delay && detail.attempt % 3 === 0) this.checkStillWelcome();
    } else if (state === "refused") {
      if (detail.code === 4401) window.location.assign(loginUrl());
      else this.conversationGone();
    } else if (state === "open") {
      this.setConnection(null);
      if (detail.reconnected) this.catchUp();
      else this.flushOutbox();
    }
  },

  async checkStillWelcome() {
    if (!this.conversation) return;
    const id = this.conversation.id;
    try {
      await api.getConversation(id);
    } catch (err) {
      if (err.status !== 404) return;
      if (this.isCurrent(id)) this.conversationGone();
      else this.sidebar.removeItem(id); // left meanwhile: only its row goes
    }
  },

  conversationGone() {
    const id = this.conversation?.id;
    this.toast(gettext("This conversation was deleted."));
    if (id) this.sidebar.removeItem(id);
    this.newChat();
  },

  flushOutbox() {
    const frames = this.outbox;
    this.outbox = [];
    for (const frame of frames) this.transmit(frame);
  },

  // After a drop: the server's runs went on without us; the messages API has the truth.
  async catchUp() {
    if (!this.conversation) return;
    this.eventBuffer = [];
    try {
      await this.reloadAfterDrop();
    } finally {
      const frames = this.eventBuffer;
      this.eventBuffer = null;
      for (const frame of frames) this.onEvent(frame);
    }
  },

  async reloadAfterDrop() {
    const id = this.conversation.id;
    try {
      const page = await api.messagePage(id);
      const messages = page.messages;
      if (!this.isCurrent(id)) return;
      const unconfirmed = this.runs.takeUnconfirmed();
      this.renderHistory(messages, page.has_more);
      if (unconfirmed && this.outbox.length) {
        // Never sent: show it again as pending and send it now.
        this.outbox = [];
        this.send(unconfirmed);
        return;
      }
      const lastUser = messages.filter((m) => m.role === "user").pop();
      if (unconfirmed && lastUser?.content !== unconfirmed.content) {
        // Sent as the connection died, never reached the server: nothing typed is lost.
        this.composer.prompt.value = unconfirmed.content;
        this.composer.refresh();
        this.toast(
          notReached(),
        );
      }
    } catch (err) {
      this.toast(interpolate(gettext("Could not refresh the conversation: %(reason)s"), { reason: err.message }, true));
    }
    this.flushOutbox();
    this.refreshGauge();
  },

  onEvent(frame) {
    if (frame.type === "run.started") this.drainRetries = 0;
    if (this.eventBuffer) {
      // Catching up: events wait until the history they apply to is on the page.
      this.eventBuffer.push(frame);
      return;
    }
    this.runs.handle(frame);
    this.scroller.scrollToEnd(false);
  },
};
