// The conversation websocket (docs/protocol.md) with reconnect and exponential backoff.
//
// ``onEvent(frame)`` gets every server frame; ``onStatus(state, detail)`` gets
// "connecting" | "open" | "reconnecting" | "closed", with detail.reconnected on the
// first open after a drop (the app then catches up through the messages API).

const MIN_DELAY_MS = 500;
const MAX_DELAY_MS = 10000;

export class ChatSocket {
  constructor(conversationId, { onEvent, onStatus }) {
    this.conversationId = conversationId;
    this.onEvent = onEvent;
    this.onStatus = onStatus;
    this.ws = null;
    this.attempt = 0;
    this.closedByUs = false;
    this.timer = null;
    this.everOpened = false;
  }

  get url() {
    const scheme = window.location.protocol === "https:" ? "wss" : "ws";
    // ``run_state=1``: with no run under way the server says so (``run.none``), so an answer
    // the page holds as running is read again when its run ended before the socket joined.
    return `${scheme}://${window.location.host}/ws/chat/${encodeURIComponent(this.conversationId)}/?run_state=1`;
  }

  get isOpen() {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN;
  }

  // The handshake is under way (a page just loaded, or a reconnect attempt): a frame
  // queued now can go out in a moment.
  get opening() {
    return !this.closedByUs && this.ws !== null && this.ws.readyState === WebSocket.CONNECTING;
  }

  connect() {
    this.closedByUs = false;
    this.onStatus(this.everOpened ? "reconnecting" : "connecting", { attempt: this.attempt });
    const ws = new WebSocket(this.url);
    this.ws = ws;
    ws.addEventListener("open", () => {
      if (ws !== this.ws) return;
      const reconnected = this.everOpened;
      this.everOpened = true;
      this.attempt = 0;
      this.onStatus("open", { reconnected });
    });
    ws.addEventListener("message", (event) => {
      if (ws !== this.ws) return;
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch (err) {
        return; // not ours to show; the protocol is JSON objects only
      }
      if (frame && typeof frame.type === "string") this.onEvent(frame);
    });
    ws.addEventListener("close", (event) => {
      if (ws !== this.ws || this.closedByUs) return;
      if (event.code === 4401 || event.code === 4404) {
        // The server refused us for good (logged out, conversation gone): do not retry.
        this.closedByUs = true;
        this.onStatus("refused", { code: event.code });
        return;
      }
      this.scheduleReconnect();
    });
  }

  scheduleReconnect() {
    const base = Math.min(MAX_DELAY_MS, MIN_DELAY_MS * 2 ** this.attempt);
    const delay = base * (0.8 + Math.random() * 0.4); // jitter: clients do not stampede
    this.attempt += 1;
    this.onStatus("reconnecting", { attempt: this.attempt, delay });
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), delay);
  }

  // Leave this server and connect again in ``delayMs``: it is shutting down (a deploy) and
  // the proxy will send the new connection to a process that takes runs.
  cycle(delayMs) {
    if (this.closedByUs) return;
    const old = this.ws;
    this.ws = null; // its close event is ours, not a drop to reconnect from
    old?.close(4000, "server draining");
    this.onStatus("reconnecting", { attempt: this.attempt, delay: delayMs, draining: true });
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), delayMs);
  }

  // Reconnect now (e.g. the tab became visible or the network came back).
  nudge() {
    if (this.closedByUs || this.isOpen) return;
    if (this.ws && this.ws.readyState === WebSocket.CONNECTING) return;
    clearTimeout(this.timer);
    this.connect();
  }

  send(frame) {
    if (!this.isOpen) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }

  close() {
    this.closedByUs = true;
    clearTimeout(this.timer);
    if (this.ws) this.ws.close(1000);
    this.ws = null;
    this.onStatus("closed", {});
  }
}
