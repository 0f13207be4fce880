// Sending a message: it goes to the chat it was sent in — once that chat is on screen, or
// after the user left it (left_chat.js) — through the page's link (connection.js).

import { api } from "./api.js";
import { deliverToLeftChat, keepAsDraft } from "./left_chat.js";

export class MessageSender {
  // page: the ChatApp (app.js) — which conversation is on screen (``conversation``,
  // ``loading``, ``loadToken``, ``isCurrent``, ``newConversation``, ``ensureConversation``)
  // and its parts (``runs``, ``composer``, ``sidebar``, ``scroller``, ``saves``,
  // ``emptyChat``, ``link``, ``toast``).
  constructor(page) {
    this.page = page;
  }

  send(message) {
    const { content, images, documents = [], mode } = message;
    if (!content && !images.length && !documents.length) return false;
    if (this.page.loading) return this.sendOnceLoaded(message);
    const frame = messageFrame(message);
    this.page.runs.showSent({ content, images, documents, mode });
    this.page.scroller.scrollToEnd(true);
    // The chat it was sent in: if the user opens another before it goes out, it goes to
    // this one all the same (left_chat.js), not through the socket of the one on screen.
    const token = this.page.loadToken;
    if (!this.page.conversation) this.page.newConversation().messages += 1;
    this.page.ensureConversation()
      .then((id) => this.page.saves.settled().then(() => id))
      .then((id) => {
        if (token !== this.page.loadToken) return this.deliverLeft(id, frame, { content, images, documents });
        this.keepConversation();
        this.page.link.transmit(frame);
      })
      .catch((err) => {
        const reason = interpolate(gettext("Could not start the conversation: %(reason)s"), { reason: err.message }, true);
        if (token === this.page.loadToken) this.page.runs.failLocalRun(reason);
        else this.page.toast(reason);
      });
    return true;
  }

  // Sent while the conversation on screen was still loading (the page just opened, or the
  // user opened it from the list): it goes there once its history is shown, or after the
  // user left it, all the same.
  sendOnceLoaded(message) {
    const { id, done } = this.page.loading;
    const token = this.page.loadToken;
    done.then((found) => {
      const stayed = token === this.page.loadToken;
      if (stayed && this.page.isCurrent(id)) return this.send(message);
      // Gone, or it could not be loaded: back in the box of the chat on screen.
      if (!found || stayed) return this.page.composer.takeBack(message, notReached());
      this.deliverLeft(id, messageFrame(message), message);
    });
    return true;
  }

  async deliverLeft(id, frame, message) {
    const delivered = await deliverToLeftChat(id, frame);
    if (!delivered) {
      keepAsDraft(id, message, notReached());
      this.page.toast(gettext("Your message did not reach the chat you left: it waits there as a draft."));
    }
    try {
      const conversation = await api.getConversation(id);
      if (!this.page.isCurrent(id)) this.page.sidebar.upsert(conversation, { toTop: true });
    } catch (err) {
      /* deleted meanwhile; the list shows what there is at the next load */
    }
  }

  // The first message of a new chat: it joins the list and the address bar.
  keepConversation() {
    const conversation = this.page.conversation;
    if (!conversation || !this.page.emptyChat.kept(conversation.id)) return;
    this.page.sidebar.upsert(conversation, { toTop: true });
    this.page.sidebar.select(conversation.id);
    history.pushState({}, "", `/c/${encodeURIComponent(conversation.id)}/`);
  }

  // A message the server never stored, sent again as it was.
  resend(query) {
    this.page.composer.mode = query.mode || this.page.composer.mode;
    const images = (query.images || []).filter((i) => i.file_id);
    const documents = (query.documents || []).filter((i) => i.file_id);
    this.send({ content: query.content || "", images, documents, mode: query.mode || this.page.composer.mode });
  }
}

function messageFrame({ content, images, documents = [], mode }) {
  const attachments = [...images, ...documents].map((i) => i.file_id);
  return { type: "message", content, attachments, mode };
}

// Said of a message that did not go (the box it is back in, or the draft it waits in).
export function notReached() {
  return gettext("Your last message did not reach the server. It is back in the box: send it again.");
}
