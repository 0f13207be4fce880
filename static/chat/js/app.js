// The chat page: which conversation is on screen, and the parts it is made of — the
// sidebar (sidebar.js), the composer (composer.js), the link to the server with its
// outbox (connection.js), sending (sending.js), and the run on screen with its events
// (run_controller.js), and projects: the project panel (projects.js) and a chat's own
// project and instructions (conversation_settings.js). The frames are described in
// docs/protocol.md.

import { api } from "./api.js";
import { Gauge, ModelPicker, modelFields, pickOf, setUpOfflineNote, toast } from "./chrome.js";
import { Composer } from "./composer.js";
import { EarlierPages } from "./earlier_pages.js";
import { placeDivider } from "./history.js";
import { PendingSaves } from "./pending_saves.js";
import { RunController } from "./run_controller.js";
import { Sidebar } from "./sidebar.js";
import { EmptyChatGuard, takeDroppedEmptyChat } from "./empty_chat.js";
import { NEW_CHAT_DRAFT } from "./drafts.js";
import { ScrollFollower } from "./scroll_follow.js";
import { MessageSender, notReached } from "./sending.js";
import { setSteeringConversation, watchPins } from "./steering.js";
import { ConversationLink } from "./connection.js";
import { ConversationSettings } from "./conversation_settings.js";
import { ProjectPanel } from "./projects.js";
import { ToolsMenu } from "./tools_menu.js";

const config = JSON.parse(document.getElementById("ui-config").textContent);

class ChatApp {
  constructor() {
    this.messagesEl = document.getElementById("messages");
    this.emptyState = document.getElementById("empty-state");
    this.titleEl = document.getElementById("conversation-title");
    this.connectionEl = document.getElementById("connection");
    this.conversation = null;
    this.saves = new PendingSaves(); // what a message sent now waits for
    this.creating = null;
    this.loadToken = 0;
    this.picks = { mode: 0, model: 0 };
    this.newChatProject = null; // the project a new chat on screen starts in
    this.emptyChat = new EmptyChatGuard();
    this.scroller = new ScrollFollower(this.messagesEl);
    this.link = new ConversationLink({
      onFrame: (frame) => {
        this.runs.handle(frame);
        this.scroller.scrollToEnd(false);
      },
      showState: (text, tone) => this.setConnection(text, tone),
      catchUp: () => this.conversation && this.reloadAfterDrop(),
      checkStillWelcome: () => this.checkStillWelcome(),
      gone: () => this.conversationGone(),
    });
    this.sender = new MessageSender(this);

    this.sidebar = new Sidebar({
      onOpen: (id) => this.open(id, { push: true }),
      onNew: () => this.newChat(),
      onRename: (id, title) => this.rename(id, title),
      onDelete: (id) => this.remove(id),
      loadPage: (before, options = {}) => api.listConversations({ before, ...options }),
      onNewInProject: (project) => this.newChat({ project }),
      onProjectSettings: (project) => this.projectPanel.open(project),
      onNewProject: () => this.projectPanel.open(null),
    });
    this.projectPanel = new ProjectPanel({
      config,
      toast: (text) => this.toast(text),
      onSaved: (project) => this.projectSaved(project),
      onDeleted: (project, how) => this.projectDeleted(project, how),
    });
    this.chatSettings = new ConversationSettings({
      config,
      conversation: () => this.conversation,
      newChatProject: () => this.newChatProject,
      projects: () => this.sidebar.projects,
      ensureConversation: () => this.ensureConversation(),
      trackSave: (save) => this.saves.track(save),
      onSaved: (conversation) => {
        if (!this.isCurrent(conversation.id)) return;
        this.setConversation(conversation);
        this.refreshGauge();
      },
      openProject: (project) => this.projectPanel.open(project),
    });
    this.composer = new Composer({
      onSend: (message) => this.sender.send(message),
      onStop: () => this.runs.stop(),
      ensureConversation: () => this.ensureConversation(),
      maxUploadBytes: config.maxUploadBytes,
      pasteAttachChars: config.pasteAttachChars,
      maxMessageChars: config.maxMessageChars,
      toast: (text) => this.toast(text),
      // While a conversation loads, the box is already that conversation's.
      draftKey: () => this.draftKey(),
    });
    this.composer.onModeChange((mode) => this.changeMode(mode));
    this.gauge = new Gauge();
    this.modelPicker = new ModelPicker(config, (pick) => this.changeModel(pick));
    this.runs = new RunController({
      messagesEl: this.messagesEl,
      emptyState: this.emptyState,
      composer: this.composer,
      toast: (text) => this.toast(text),
      sendFrame: (frame) => this.link.sendSoon(frame),
      conversationId: () => this.conversation?.id ?? null,
      resend: (query) => this.sender.resend(query),
      retryElsewhere: () => this.link.retryElsewhere(),
      onStarted: () => this.refreshTitle(),
      onEnded: () => this.refreshGauge(),
      onContextChanged: () => this.refreshGauge(),
      reloadMessages: () => this.conversation && this.reloadAfterDrop(),
      catchUp: () => this.link.catchUp(),
      reloadConversation: () => this.reloadConversation(),
      onFirstMessageRefused: () => this.unlistEmpty(),
      onAnswered: () => {
        if (this.conversation) this.sidebar.upsert(this.conversation, { toTop: true });
      },
    });

    this.earlier = new EarlierPages({
      messagesEl: this.messagesEl,
      runs: this.runs,
      conversationId: () => this.conversation?.id ?? null,
      placeDivider: (facts, node) => this.placeDivider(facts, node),
      toast: (text) => this.toast(text),
    });

    this.toolsMenu = new ToolsMenu({
      conversationId: () => this.conversation?.id ?? null,
      ensureConversation: () => this.ensureConversation(),
      trackSave: (save) => this.saves.track(save),
      toast: (text) => this.toast(text),
      onChanged: () => this.refreshGauge(),
    });

    // Pins and the opened divider talk to the API about the conversation shown.
    setSteeringConversation(() => this.conversation?.id ?? null);
    watchPins(this.messagesEl);
    this.messagesEl.addEventListener("fimone:toast", (event) => this.toast(event.detail));

    window.addEventListener("popstate", () => this.open(idFromPath(), { push: false }));
    window.addEventListener("online", () => this.link.nudge());
    document.addEventListener("visibilitychange", () => {
      if (!document.hidden) this.link.nudge();
    });
  }

  async start() {
    setUpOfflineNote(() => this.composer.focus());
    this.scroller.start(() => this.composer.focus());
    // The conversation loads beside the list: a message sent before either is in waits for
    // the conversation (``send``); it does not start a new chat.
    const dropped = takeDroppedEmptyChat(); // the last page's empty chat, maybe not yet deleted
    const listed = api.listConversations();
    const projects = api.listProjects();
    projects.catch(() => {}); // said once the list is in (``loadProjects``)
    const shown = config.conversationId ? this.open(config.conversationId, { push: false }) : this.newChat({ push: false });
    try {
      const page = await listed;
      const conversations = page.conversations.filter((c) => c.id !== dropped);
      this.sidebar.set(conversations, this.conversation?.id ?? config.conversationId ?? null, page.next);
      // Already on screen, and perhaps older than the list's first page: it stays listed.
      if (this.conversation && !this.emptyChat.isEmpty(this.conversation.id)) this.sidebar.upsert(this.conversation);
    } catch (err) {
      this.toast(interpolate(gettext("Could not load your conversations: %(reason)s"), { reason: err.message }, true));
    }
    // After the list: an open project then loads those of its conversations the list's
    // first page does not have.
    await this.loadProjects(projects);
    await shown;
    this.composer.focus();
    // Tests (and scripts driving the page) wait for this before typing: keys pressed
    // before the composer listens would be lost.
    document.documentElement.dataset.app = "ready";
  }

  // ---- conversations -------------------------------------------------------------------

  // ``nextId``: the conversation shown next (null: a new chat).
  reset(nextId = null) {
    this.emptyChat.leave(nextId);
    this.creating = null;
    this.loading = null;
    this.link.close();
    this.runs.reset();
    this.messagesEl.replaceChildren(this.emptyState);
    this.emptyState.hidden = false;
    this.composer.setRunning(false);
    this.composer.clearImages();
    this.setConnection(null);
  }

  // ``project``: a new chat in that project (with its default model).
  newChat({ push = true, project = null } = {}) {
    this.loadToken += 1;
    this.reset();
    this.conversation = null;
    this.creating = null;
    this.newChatProject = project;
    this.titleEl.textContent = gettext("New chat");
    document.title = gettext("fimone — chat");
    this.modelPicker.value = project ? pickOf(project) : null;
    this.chatSettings.refresh();
    this.gauge.hide();
    this.composer.showDraft();
    this.toolsMenu.load();
    this.sidebar.select(null);
    if (push && window.location.pathname !== "/") history.pushState({}, "", "/");
    this.composer.focus();
  }

  async open(id, { push }) {
    if (!id) return this.newChat({ push: false });
    const token = ++this.loadToken;
    this.reset(id);
    this.sidebar.select(id);
    if (push) history.pushState({}, "", `/c/${encodeURIComponent(id)}/`);
    // A message sent before the conversation is on screen waits for it (``send``), and
    // what is typed meanwhile is its draft, shown at once: the draft is in this browser,
    // and the history's arrival must not replace what the user typed while it came.
    const loading = { id, done: null };
    this.loading = loading;
    this.composer.showDraft();
    loading.done = this.load(id, token);
    await loading.done;
    if (this.loading === loading) this.loading = null;
  }

  // Resolves false when the conversation does not exist (any more).
  async load(id, token) {
    const picks = { ...this.picks };
    try {
      const [conversation, page] = await Promise.all([
        api.getConversation(id),
        api.messagePage(id),
      ]);
      if (token !== this.loadToken) return true;
      // A mode or model picked while it loaded stays: its save is on its way.
      this.setConversation(this.keepPicks(conversation, picks));
      this.renderHistory(page.messages, page.has_more);
    } catch (err) {
      if (token !== this.loadToken) return err.status !== 404;
      if (err.status === 404) {
        this.toast(gettext("That conversation does not exist any more."));
        this.sidebar.removeItem(id);
        this.newChat();
        return false;
      }
      this.toast(interpolate(gettext("Could not load the conversation: %(reason)s"), { reason: err.message }, true));
    }
    this.connect();
    this.refreshGauge();
    this.toolsMenu.load();
    this.composer.focus();
    return true;
  }

  setConversation(conversation) {
    this.conversation = conversation;
    this.titleEl.textContent = conversation.title || gettext("New chat");
    document.title = `${conversation.title || gettext("New chat")} — fimone`;
    this.composer.mode = conversation.mode;
    this.modelPicker.value = pickOf(conversation);
    if (!this.emptyChat.isEmpty(conversation.id)) this.sidebar.upsert(conversation);
    this.sidebar.select(conversation.id);
    this.chatSettings.refresh();
  }

  // ---- projects ------------------------------------------------------------------------

  async loadProjects(listed) {
    try {
      const { projects } = await listed;
      this.sidebar.setProjects(projects);
      this.chatSettings.refresh();
    } catch (err) {
      this.toast(interpolate(gettext("Could not load your projects: %(reason)s"), { reason: err.message }, true));
    }
  }

  projectSaved(project) {
    this.sidebar.upsertProject(project);
    if (this.newChatProject?.id === project.id) this.newChatProject = project;
    this.chatSettings.refresh();
    // Its instructions are part of the next request of its conversations.
    if (this.conversation?.project === project.id) this.refreshGauge();
  }

  // Its conversations were moved out of it, or deleted with it (``deleteConversations``).
  projectDeleted(project, { deleteConversations }) {
    for (const conversation of this.sidebar.conversations.filter((c) => c.project === project.id)) {
      if (deleteConversations) this.sidebar.removeItem(conversation.id);
      else this.sidebar.upsert({ ...conversation, project: null });
    }
    this.sidebar.removeProject(project.id);
    if (this.newChatProject?.id === project.id) this.newChatProject = null;
    this.toast(
      deleteConversations
        ? gettext("Project and its conversations deleted.")
        : gettext("Project deleted; its conversations are kept."),
    );
    if (this.conversation?.project === project.id) {
      if (deleteConversations) return this.newChat();
      this.conversation = { ...this.conversation, project: null };
      this.refreshGauge();
    }
    this.chatSettings.refresh();
  }

  // Whose draft the box holds: the conversation on screen, or ``NEW_CHAT_DRAFT`` while it is
  // a new chat (with no conversation yet, or an empty one: deleted when the page is left,
  // so a reload shows the new chat's draft there).
  draftKey() {
    const id = this.shownId();
    return id && !this.emptyChat.isEmpty(id) ? id : NEW_CHAT_DRAFT;
  }

  // The chat on screen has no message after all (its first was refused): out of the list
  // and the address bar again, deleted when the user leaves it (empty_chat.js).
  unlistEmpty() {
    const id = this.conversation?.id;
    if (!id) return;
    this.sidebar.removeItem(id);
    this.emptyChat.created(id);
    history.replaceState({}, "", "/");
  }

    ensureConversation() {
    const id = this.shownId(); // an upload while it loads goes to the one loading
    if (id) return Promise.resolve(id);
    return this.newConversation().made.then((conversation) => conversation.id);
  }

  // The new chat on screen made a conversation on the server, once (an upload, a tool
  // switch and the first message share it); ``messages``: how many were sent to it.
  newConversation() {
    if (this.creating) return this.creating;
    const token = this.loadToken;
    const fields = { mode: this.composer.mode, ...modelFields(this.modelPicker.value) };
    if (this.newChatProject) fields.project = this.newChatProject.id;
    const creating = { messages: 0 };
    creating.made = api.createConversation(fields).then((conversation) => {
      if (token !== this.loadToken) {
        // Another chat was opened meanwhile: this one is not brought back on screen. Its
        // messages still go to it (``send``); with none it is an empty chat left, deleted.
        if (!creating.messages) api.deleteConversation(conversation.id).catch(() => {});
        return conversation;
      }
      this.emptyChat.created(conversation.id); // listed and addressed once a message is sent
      this.setConversation(conversation);
      this.connect();
      this.refreshGauge();
      return conversation;
    });
    creating.made.catch(() => {
      if (this.creating === creating) this.creating = null;
    });
    this.creating = creating;
    return creating;
  }

  async rename(id, title) {
    try {
      const conversation = await api.updateConversation(id, { title });
      this.sidebar.upsert(conversation);
      if (this.conversation?.id === id) this.setConversation(conversation);
    } catch (err) {
      this.sidebar.render();
      this.toast(interpolate(gettext("Could not rename: %(reason)s"), { reason: err.message }, true));
    }
  }

  async remove(id) {
    try {
      await api.deleteConversation(id);
    } catch (err) {
      if (err.status !== 404) return this.toast(interpolate(gettext("Could not delete: %(reason)s"), { reason: err.message }, true));
    }
    this.sidebar.removeItem(id);
    if (this.conversation?.id === id) this.newChat();
    this.toast(gettext("Conversation deleted."));
  }

  // Whether the conversation ``id`` is still the one on screen: an answer about it that
  // arrives after the user opened another one, or a new chat, must not bring it back.
  isCurrent(id) {
    return this.conversation?.id === id;
  }

  // The conversation on screen: the one being opened while it loads (the box, the mode and
  // the model are already its own), else the one shown; null for a new chat.
  shownId() {
    return this.loading?.id ?? this.conversation?.id ?? null;
  }

  // A mode or a model picked: saved on the conversation, and a message sent meanwhile waits
  // for the save (``send``). ``picks`` counts them, so that an older answer about the
  // conversation does not undo a newer pick (``reloadConversation``).
  changeMode(mode) {
    this.pick("mode", (id) => this.saveMode(id, mode));
  }

  // ``kind``: which pick it is (``this.picks``); ``save(id)``: its save on the conversation
  // on screen. A new chat has nothing to save yet: it takes the picks when it is created.
  pick(kind, save) {
    const id = this.shownId();
    if (!id) return;
    this.picks[kind] += 1;
    this.saves.track(save(id));
  }

  async saveMode(id, mode) {
    try {
      const saved = await api.updateConversation(id, { mode });
      if (this.isCurrent(id)) this.conversation = saved;
    } catch (err) {
      this.toast(interpolate(gettext("Could not switch mode: %(reason)s"), { reason: err.message }, true));
    }
  }

  // A new chat takes the model picked when it is created; its run reads the pick.
  changeModel(pick) {
    this.pick("model", (id) => this.saveModel(id, pick));
  }

  async saveModel(id, pick) {
    try {
      const saved = await api.updateConversation(id, modelFields(pick));
      if (!this.isCurrent(id)) return;
      this.conversation = saved;
      this.refreshGauge();
    } catch (err) {
      if (this.isCurrent(id)) this.modelPicker.value = pickOf(this.conversation);
      this.toast(interpolate(gettext("Could not switch the model: %(reason)s"), { reason: err.message }, true));
    }
  }

  async refreshTitle() {
    if (!this.conversation || this.conversation.title) return;
    return this.reloadConversation();
  }

  async reloadConversation() {
    if (!this.conversation) return;
    const id = this.conversation.id;
    const picks = { ...this.picks };
    const saving = this.saves.busy;
    try {
      const conversation = await api.getConversation(id);
      if (!this.isCurrent(id)) {
        this.sidebar.refresh(conversation); // left meanwhile: its row still gets the title
        return;
      }
      // Read before a pick reached the server: the page keeps the user's newer choice.
      this.setConversation(this.keepPicks(conversation, picks, { all: saving }));
    } catch (err) {
      /* the title is cosmetic; the next load shows it */
    }
  }

  // ``conversation`` as read, with what the user picked since ``picks`` (a copy of
  // ``this.picks``) put back; ``all``: both picks, whichever changed.
  keepPicks(conversation, picks, { all = false } = {}) {
    if (all || picks.mode !== this.picks.mode) conversation.mode = this.composer.mode;
    if (all || picks.model !== this.picks.model) Object.assign(conversation, modelFields(this.modelPicker.value));
    return conversation;
  }

  // ---- the link to the server ----------------------------------------------------------

  connect() {
    if (this.conversation) this.link.open(this.conversation.id);
  }

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
  }

  conversationGone() {
    const id = this.conversation?.id;
    this.toast(gettext("This conversation was deleted."));
    if (id) this.sidebar.removeItem(id);
    this.newChat();
  }

  // After a drop (or when the run asks): the history as the server has it.
  async reloadAfterDrop() {
    const id = this.conversation.id;
    try {
      const page = await api.messagePage(id);
      const messages = page.messages;
      if (!this.isCurrent(id)) return;
      const unconfirmed = this.runs.takeUnconfirmed();
      this.renderHistory(messages, page.has_more);
      if (unconfirmed && this.link.hasQueued) {
        // Never sent: show it again as pending and send it now.
        this.link.dropQueued();
        this.sender.send(unconfirmed);
        return;
      }
      const lastUser = messages.filter((m) => m.role === "user").pop();
      if (unconfirmed && lastUser?.content !== unconfirmed.content) {
        // Sent as the connection died, never reached the server: nothing typed is lost.
        this.composer.prompt.value = unconfirmed.content;
        this.composer.refresh();
        this.toast(notReached());
      }
    } catch (err) {
      this.toast(interpolate(gettext("Could not refresh the conversation: %(reason)s"), { reason: err.message }, true));
    }
    this.link.flush();
    this.refreshGauge();
  }

  // ---- history -------------------------------------------------------------------------

  // History arrives a page at a time (newest first shown); older pages load on demand.
  renderHistory(messages, hasMore = false) {
    const built = this.runs.showHistory(messages);
    const button = this.earlier.reset(messages, hasMore);
    this.messagesEl.replaceChildren(...[button, ...built.nodes].filter(Boolean));
    // On reopen, the divider of the newest load-time compaction, from the persisted facts.
    if (built.compaction) this.placeDivider(built.compaction.facts, built.compaction.node);
    this.emptyState.hidden = messages.length > 0;
    if (!messages.length) this.messagesEl.append(this.emptyState);
    this.composer.setRunning(this.runs.active);
    this.scroller.scrollToEnd(true);
  }

  placeDivider(facts, queryNode) {
    placeDivider(this.messagesEl, facts, queryNode);
  }

  // ---- chrome --------------------------------------------------------------------------

  refreshGauge() {
    if (this.conversation) this.gauge.refresh(this.conversation.id);
  }

  setConnection(text, tone = "") {
    this.connectionEl.hidden = !text;
    this.connectionEl.textContent = text || "";
    this.connectionEl.className = `connection ${tone}`;
  }

  toast(text) {
    toast(text);
  }
}

function idFromPath() {
  const match = window.location.pathname.match(/^\/c\/([^/]+)\/?$/);
  return match ? decodeURIComponent(match[1]) : null;
}

new ChatApp().start();
