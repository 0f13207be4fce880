// JSON API client (docs/protocol.md): session cookie auth, CSRF header on every write.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export function csrfToken() {
  const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  return match ? decodeURIComponent(match[1]) : "";
}

async function request(method, url, { json, body } = {}) {
  const headers = { Accept: "application/json" };
  if (method !== "GET" && method !== "HEAD") headers["X-CSRFToken"] = csrfToken();
  if (json !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(json);
  }
  let response;
  try {
    response = await fetch(url, { method, headers, body, credentials: "same-origin" });
  } catch (err) {
    throw new ApiError(0, "network", gettext("The server cannot be reached. Check your connection."));
  }
  if (response.status === 204) return null;
  let data = null;
  try {
    data = await response.json();
  } catch (err) {
    data = null;
  }
  if (!response.ok) {
    const error = (data && data.error) || {};
    if (response.status === 401) window.location.assign(loginUrl());
    throw new ApiError(
      response.status,
      error.code || `http_${response.status}`,
      error.message ||
        interpolate(gettext("The server answered %(status)s."), { status: response.status }, true),
    );
  }
  return data;
}

export function loginUrl() {
  return `/accounts/login/?next=${encodeURIComponent(window.location.pathname)}`;
}

const enc = encodeURIComponent;

export const api = {
  // One page of the list, most recently active first; ``next`` (or null) asks for the rest;
  // ``project``: only that project's conversations.
  listConversations: ({ before = null, limit = 50, project = null } = {}) =>
    request(
      "GET",
      `/api/conversations/?limit=${limit}${before === null ? "" : `&before=${enc(before)}`}` +
        (project === null ? "" : `&project=${enc(project)}`),
    ),
  createConversation: (fields) => request("POST", "/api/conversations/", { json: fields }),
  getConversation: (id) => request("GET", `/api/conversations/${enc(id)}/`),
  updateConversation: (id, fields) =>
    request("PATCH", `/api/conversations/${enc(id)}/`, { json: fields }),
  deleteConversation: (id) => request("DELETE", `/api/conversations/${enc(id)}/`),
  contextGauge: (id) => request("GET", `/api/conversations/${enc(id)}/context/`),
  // The tools a run is offered, by source (docs/protocol.md, "Tools of a conversation").
  tools: (id) => request("GET", id ? `/api/conversations/${enc(id)}/tools/` : "/api/tools/"),
  switchToolSource: (id, source, enabled) =>
    request("PATCH", `/api/conversations/${enc(id)}/tools/`, { json: { source, enabled } }),
  switchTool: (id, tool, enabled) =>
    request("PATCH", `/api/conversations/${enc(id)}/tools/`, { json: { tool, enabled } }),

  // One page, oldest first: the newest ``limit`` messages, or those just before ``before``.
  messagePage(id, { before = null, limit = 100 } = {}) {
    const cursor = before === null ? "" : `&before=${enc(before)}`;
    return request("GET", `/api/conversations/${enc(id)}/messages/?limit=${limit}${cursor}`);
  },

  // Every message, oldest first: newest page, then older pages until none are left.
  async allMessages(id) {
    const base = `/api/conversations/${enc(id)}/messages/?limit=200`;
    let page = await request("GET", base);
    const messages = [...page.messages];
    while (page.has_more && messages.length) {
      page = await request("GET", `${base}&before=${enc(messages[0].id)}`);
      messages.unshift(...page.messages);
    }
    return messages;
  },

  // Messages created after ``afterId`` (catch-up after a reconnect), oldest first.
  async messagesAfter(id, afterId) {
    const base = `/api/conversations/${enc(id)}/messages/?limit=200`;
    const messages = [];
    let cursor = afterId;
    for (;;) {
      const page = await request("GET", `${base}&after=${enc(cursor)}`);
      messages.push(...page.messages);
      if (!page.has_more || !page.messages.length) return messages;
      cursor = page.messages[page.messages.length - 1].id;
    }
  },

  // Show another version of an edited question or a regenerated answer (with its branch).
  showVersion: (id, messageId) =>
    request("POST", `/api/conversations/${enc(id)}/messages/${enc(messageId)}/show/`),

  // Steering compaction: pins and the summary behind the divider (``summaryId``: an id or
  // "current").
  pinMessage: (id, messageId, pinned) =>
    request("PATCH", `/api/conversations/${enc(id)}/messages/${enc(messageId)}/`, { json: { pinned } }),
  getSummary: (id, summaryId) => request("GET", `/api/conversations/${enc(id)}/summaries/${enc(summaryId)}/`),
  editSummary: (id, summaryId, content) =>
    request("PATCH", `/api/conversations/${enc(id)}/summaries/${enc(summaryId)}/`, { json: { content } }),
  discardSummary: (id, summaryId) =>
    request("DELETE", `/api/conversations/${enc(id)}/summaries/${enc(summaryId)}/`),
  summaryMessages(id, summaryId, { after = null, limit = 50 } = {}) {
    const cursor = after === null ? "" : `&after=${enc(after)}`;
    return request("GET", `/api/conversations/${enc(id)}/summaries/${enc(summaryId)}/messages/?limit=${limit}${cursor}`);
  },

  // A run's whole tool result (``url``: a recorded step's ``result_url``).
  toolResult: (url) => request("GET", url),

  // Projects (docs/protocol.md, "Projects"): instructions and files shared by conversations.
  listProjects: () => request("GET", "/api/projects/"),
  createProject: (fields) => request("POST", "/api/projects/", { json: fields }),
  getProject: (id) => request("GET", `/api/projects/${enc(id)}/`),
  updateProject: (id, fields) => request("PATCH", `/api/projects/${enc(id)}/`, { json: fields }),
  // ``deleteConversations``: its conversations go with it (else they are moved out of it).
  deleteProject: (id, { deleteConversations = false } = {}) =>
    request("DELETE", `/api/projects/${enc(id)}/${deleteConversations ? "?conversations=delete" : ""}`),
  projectFiles: (id) => request("GET", `/api/projects/${enc(id)}/files/`),
  uploadProjectFile(id, file) {
    const form = new FormData();
    form.append("file", file, file.name || "file");
    return request("POST", `/api/projects/${enc(id)}/files/`, { body: form });
  },
  deleteProjectFile: (id, fileId) => request("DELETE", `/api/projects/${enc(id)}/files/${enc(fileId)}/`),

  uploadImage(id, file) {
    const form = new FormData();
    form.append("file", file, file.name || "pasted-image.png");
    return request("POST", `/api/conversations/${enc(id)}/attachments/`, { body: form });
  },
};

export function attachmentUrl(fileId) {
  return `/api/attachments/${enc(fileId)}/`;
}
