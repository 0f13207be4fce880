// The page's link to the server for the conversation on screen: its socket (socket.js),
// what the socket's states show, the outbox of frames waiting for it to open, and the
// events held back while the page catches up after a drop. The frames are described in
// docs/protocol.md.

import { loginUrl } from "./api.js";
import { ChatSocket } from "./socket.js";

export class ConversationLink {
  // host: {onFrame(frame): a server frame to draw; showState(text, tone): the connection
  //        line (null: hidden); catchUp() -> Promise: the history read again after a
  //        drop; checkStillWelcome(): ask the API whether the user is still signed in and
  //        the conversation still exists; gone(): the server refused it as deleted}
  constructor(host) {
    this.host = host;
    this.socket = null;
    this.outbox = [];
    this.eventBuffer = null; // while catching up: the events that wait for the history
    this.lastMessageFrame = null;
    this.drainRetries = 0;
  }

  open(conversationId) {
    if (this.socket) return;
    this.socket = new ChatSocket(conversationId, {
      onEvent: (frame) => this.onEvent(frame),
      onStatus: (state, detail) => this.onSocketStatus(state, detail),
    });
    this.socket.connect();
  }

  // Another conversation goes on screen: what waited for this one's socket goes too.
  close() {
    this.socket?.close();
    this.socket = null;
    this.outbox = [];
  }

  // The browser is back online or the tab visible: reconnect now rather than at the
  // next back-off step.
  nudge() {
    this.socket?.nudge();
  }

  onSocketStatus(state, detail) {
    if (state === "reconnecting" && detail.draining) {
      this.host.showState(
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
      this.host.showState(text, "error");
      // A refused handshake looks like a network error: every few tries, ask the API
      // whether we are still logged in (401 → login page) and the conversation exists.
      if (detail.delay && detail.attempt % 3 === 0) this.host.checkStillWelcome();
    } else if (state === "refused") {
      if (detail.code === 4401) window.location.assign(loginUrl());
      else this.host.gone();
    } else if (state === "open") {
      this.host.showState(null);
      if (detail.reconnected) this.catchUp();
      else this.flush();
    }
  }

  onEvent(frame) {
    if (frame.type === "run.started") this.drainRetries = 0;
    if (this.eventBuffer) {
      // Catching up: events wait until the history they apply to is on the page.
      this.eventBuffer.push(frame);
      return;
    }
    this.host.onFrame(frame);
  }

  // After a drop: the server's runs went on without us; the messages API has the truth.
  async catchUp() {
    this.eventBuffer = [];
    try {
      await this.host.catchUp();
    } finally {
      const frames = this.eventBuffer;
      this.eventBuffer = null;
      for (const frame of frames) this.onEvent(frame);
    }
  }

  // ---- the outbox ----------------------------------------------------------------------

  get hasQueued() {
    return this.outbox.length > 0;
  }

  dropQueued() {
    this.outbox = [];
  }

  flush() {
    const frames = this.outbox;
    this.outbox = [];
    for (const frame of frames) this.transmit(frame);
  }

  // A message (or a frame that must go): sent now, or when the socket (re)opens.
  transmit(frame) {
    if (frame.type === "message") this.lastMessageFrame = frame;
    if (this.socket?.send(frame)) return;
    this.outbox.push(frame);
    this.host.showState(gettext("Connecting… your message will be sent as soon as the server answers."));
  }

  // A frame a click asked for (retry, regenerate, edit, stop, an approval) while the socket
  // is still opening, e.g. just after a reload: it waits in the outbox for the open instead
  // of being refused.
  sendSoon(frame) {
    if (this.socket?.send(frame)) return true;
    if (!this.socket?.opening) return false;
    this.outbox.push(frame);
    return true;
  }

  // The server process is shutting down (``server_draining``) and did not take the
  // message: reconnect, through the proxy to another process, and send it from there
  // (the catch-up after the reconnect sends what is in the outbox).
  retryElsewhere() {
    if (!this.lastMessageFrame || !this.socket) return false;
    this.outbox = [this.lastMessageFrame];
    this.drainRetries += 1;
    this.socket.cycle(Math.min(10000, 250 * 2 ** this.drainRetries));
    return true;
  }
}
