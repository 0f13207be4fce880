// A message sent in a chat the user left before it went out — a new chat the server had not
// made yet when another conversation was opened, or one waiting for a model pick to save —
// still goes to that chat, never to the one now on screen: through a socket of its own,
// closed once the run has started there. What cannot go stays that chat's draft
// (drafts.js), with a notice, for when the user opens it.

import { saveDraft } from "./drafts.js";
import { ChatSocket } from "./socket.js";

// Long enough for a busy server to start the run; a message taken as a follow-up of a run
// already going gets no ``run.started`` of its own and ends here too, as delivered.
const WAIT_MS = 20000;

// Resolves true when the frame went out (the run started, or the socket took it), false
// when the server refused it or it never went.
export function deliverToLeftChat(conversationId, frame) {
  return new Promise((resolve) => {
    let sent = false;
    let ended = false;
    let timer = null;
    let socket = null;
    const end = (delivered) => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      socket.close();
      resolve(delivered);
    };
    socket = new ChatSocket(conversationId, {
      onEvent: (event) => {
        if (event.type === "run.started") end(true);
        else if (event.type === "error") end(false);
      },
      onStatus: (state) => {
        if (state === "open" && !sent) sent = socket.send(frame);
        else if (state === "refused") end(false);
        // Sent, then dropped: it reached the server, or the chat shows it did not; sending
        // again could store it twice.
        else if (state === "reconnecting" && sent) end(true);
      },
    });
    timer = setTimeout(() => end(sent), WAIT_MS);
    socket.connect();
  });
}

// The message as that chat's draft: its text and files, and why it is there.
export function keepAsDraft(conversationId, { content, images = [], documents = [] }, notice) {
  const attachments = [
    ...images.map((i) => ({ file_id: i.file_id, kind: "image", mime_type: i.mime_type, name: "", size: 0 })),
    ...documents.map((d) => ({ ...d, kind: "document", info: d })),
  ].filter((a) => a.file_id);
  saveDraft(conversationId, { content: content || "", attachments, notice });
}
