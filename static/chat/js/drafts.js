// What the user is writing in a conversation — its text, the files already uploaded for it
// and a notice about why it is there (a message the server refused) — kept in this
// browser's localStorage per conversation until it is sent, so a reload, another chat
// opened meanwhile or a refused message loses none of it.

const PREFIX = "fimone-draft:";

// The key of the new chat's draft (no conversation yet, or an empty one). It keeps the
// text and the notice only: the files of an empty chat go with it when the page is left.
export const NEW_CHAT_DRAFT = "new";

export function loadDraft(conversationId) {
  if (!conversationId) return null;
  try {
    const draft = JSON.parse(localStorage.getItem(PREFIX + conversationId) || "null");
    return draft && typeof draft === "object" ? draft : null;
  } catch (err) {
    return null; // no storage, or something else's value under our key
  }
}

// ``draft``: {content, attachments: [{file_id, kind, mime_type, name, size, info}], notice}.
export function saveDraft(conversationId, draft) {
  if (!conversationId) return;
  if (conversationId === NEW_CHAT_DRAFT && draft) draft = { ...draft, attachments: [] };
  const empty = !draft || (!draft.content?.trim() && !draft.attachments?.length && !draft.notice);
  try {
    if (empty) localStorage.removeItem(PREFIX + conversationId);
    else localStorage.setItem(PREFIX + conversationId, JSON.stringify(draft));
  } catch (err) {
    /* storage full or refused: the draft lives as long as the page */
  }
}
