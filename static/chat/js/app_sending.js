// The app's sending side: a message goes to the chat it was sent in — once that chat is
// on screen, or after the user left it (left_chat.js) — and the frames a click sends wait
// for the socket. Methods of ChatApp (app.js), kept here to keep that module small.

import { api } from "./api.js";
import { deliverToLeftChat, keepAsDraft } from "./left_chat.js";

export const sendingMethods = {
  send(message) {
    const { content, images, documents = [], mode } = message;
    if (!content && !images.length && !documents.length) return false;
    if (this.loading) return this.sendOnceLoaded(message);
    const frame = messageFrame(message);
    this.runs.showSent({ content, images, documents, mode });
    this.scroller.scrollToEnd(true);
    // The chat it was sent in: if the user opens another before it goes out, it goes to
    // this one all the same (left_chat.js), not through the socket of the one on screen.
    const token = this.loadToken;
    if (!this.conversation) this.newConversation().messages += 1;
    this.ensureConversation()
      .then((id) => this.saves.settled().then(() => id))
      .then((id) => {
        if (token !== this.loadToken) return this.deliverLeft(id, frame, { content, images, documents });
        this.keepConversation();
        this.transmit(frame);
      })
      .catch((err) => {
        const reason = interpolate(gettext("Could not start the conversation: %(reason)s"), { reason: err.message }, true);
        if (token === this.loadToken) this.runs.failLocalRun(reason);
        else this.toast(reason);
      });
    return true;
  },

  // Sent while the conversation on screen was still loading (the page just opened, or the
  // user opened it from the list): it goes there once its history is shown, or after the
  // user left it, all the same.
  sendOnceLoaded(message) {
    const { id, done } = this.loading;
    const token = this.loadToken;
    done.then((found) => {
      const stayed = token === this.loadToken;
      if (stayed && this.isCurrent(id)) return this.send(message);
      // Gone, or it could not be loaded: back in the box of the chat on screen.
      if (!found || stayed) return this.composer.takeBack(message, notReached());
      this.deliverLeft(id, messageFrame(message), message);
    });
    return true;
  },

  async deliverLeft(id, frame, message) {
    const delivered = await deliverToLeftChat(id, frame);
    if (!delivered) {
      keepAsDraft(id, message, notReached());
      this.toast(gettext("Your message did not reach the chat you left: it waits there as a draft."));
    }
    try {
      const conversation = await api.getConversation(id);
      if (!this.isCurrent(id)) this.sidebar.upsert(conversation, { toTop: true });
    } catch (err) {
      /* deleted meanwhile; the list shows what there is at the next load */
    }
  },

  // The first message of a new chat: it joins the list and the address bar.
  keepConversation() {
    const conversation = this.conversation;
    if (!conversation || !this.emptyChat.kept(conversation.id)) return;
    this.sidebar.upsert(conversation, { toTop: true });
    this.sidebar.select(conversation.id);
    history.pushState({}, "", `/c/${encodeURIComponent(conversation.id)}/`);
  },

  // A message the server never stored, sent again as it was.
  resend(query) {
    this.composer.mode = query.mode || this.composer.mode;
    const images = (query.images || []).filter((i) => i.file_id);
    const documents = (query.documents || []).filter((i) => i.file_id);
    this.send({ content: query.content || "", images, documents, mode: query.mode || this.composer.mode });
  },

  // A frame a click asked for (retry, regenerate, edit, stop, an approval) while the socket
  // is still opening, e.g. just after a reload: it waits in the outbox for the open instead
  // of being refused.
  sendSoon(frame) {
    if (this.socket?.send(frame)) return true;
    if (!this.socket?.opening) return false;
    this.outbox.push(frame);
    return true;
  },

  transmit(frame) {
    if (frame.type === "message") this.lastMessageFrame = frame;
    if (this.socket?.send(frame)) return;
    this.outbox.push(frame); // sent when the socket (re)opens
    this.setConnection(gettext("Connecting… your message will be sent as soon as the server answers."));
  },

  stop() {
    this.runs.stop();
  },

  // The server process is shutting down (``server_draining``) and did not take the
  // message: reconnect, through the proxy to another process, and send it from there
  // (the catch-up after the reconnect sends what is in the outbox).
  retryElsewhere() {
    if (!this.lastMessageFrame || !this.socket) return false;
    this.outbox = [this.lastMessageFrame];
    this.drainRetries = (this.drainRetries || 0) + 1;
    this.socket.cycle(Math.min(10000, 250 * 2 ** this.drainRetries));
    return true;
  },
};

function messageFrame({ content, images, documents = [], mode }) {
  const attachments = [...images, ...documents].map((i) => i.file_id);
  return { type: "message", content, attachments, mode };
}

// Said of a message that did not go (the box it is back in, or the draft it waits in).
export function notReached() {
  return gettext("Your last message did not reach the server. It is back in the box: send it again.");
}
