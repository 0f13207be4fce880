// Saves on their way to the server that a message sent now must wait for: its run reads
// what they save (a tools-menu switch, the mode or model picked for the conversation;
// docs/protocol.md, "Tools of a conversation").

export class PendingSaves {
  constructor() {
    this.inFlight = new Set();
  }

  // ``save`` reports its own failure (it never rejects); returns it.
  track(save) {
    this.inFlight.add(save);
    save.finally(() => this.inFlight.delete(save));
    return save;
  }

  get busy() {
    return this.inFlight.size > 0;
  }

  // Resolves once every save tracked so far has been answered.
  settled() {
    return Promise.allSettled([...this.inFlight]);
  }
}
