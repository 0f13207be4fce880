// A new chat becomes a conversation on the server as soon as it needs one — an attachment
// uploads into it, a tool source is switched — before anything is sent. Until its first
// message it stays out of the conversation list and the address bar, and it is deleted when
// the user leaves it (for another chat, a new one, or by closing the tab): an image
// attached, removed and never sent leaves no empty conversation behind.

import { api, csrfToken } from "./api.js";

// The empty chat a page dropped as it closed. Its delete outlives that page, but the next
// page of this tab may list the conversations before the server has done it: that page
// leaves it out of its list.
const DROPPED_KEY = "fimone:dropped-empty-chat";

export function takeDroppedEmptyChat() {
  try {
    const id = sessionStorage.getItem(DROPPED_KEY);
    sessionStorage.removeItem(DROPPED_KEY);
    return id;
  } catch (err) {
    return null; // storage refused (private mode): the list may show it until the next load
  }
}

export class EmptyChatGuard {
  constructor() {
    this.id = null; // the conversation created on this page that nothing was sent to yet
    window.addEventListener("pagehide", () => this.dropOnExit());
  }

  created(id) {
    this.id = id;
  }

  isEmpty(id) {
    return id !== null && id !== undefined && id === this.id;
  }

  // Its first message was sent: from now on it is a conversation like any other. True the
  // first time (the caller lists it then).
  kept(id) {
    if (!this.isEmpty(id)) return false;
    this.id = null;
    return true;
  }

  // The user goes to ``nextId`` (null: a new chat): the empty one they leave is deleted.
  leave(nextId) {
    if (!this.id || this.id === nextId) return;
    const id = this.id;
    this.id = null;
    api.deleteConversation(id).catch(() => {
      /* already gone, or offline: it is not listed either way */
    });
  }

  // The tab closes or navigates away: a request that outlives the page.
  dropOnExit() {
    if (!this.id) return;
    fetch(`/api/conversations/${encodeURIComponent(this.id)}/`, {
      method: "DELETE",
      keepalive: true,
      credentials: "same-origin",
      headers: { "X-CSRFToken": csrfToken() },
    }).catch(() => {});
    try {
      sessionStorage.setItem(DROPPED_KEY, this.id);
    } catch (err) {
      /* storage refused: the next list may show it once */
    }
    this.id = null;
  }
}
