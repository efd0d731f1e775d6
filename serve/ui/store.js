// store.js: what the page knows, kept in stores that apply what the
// server says and tell the panels that subscribe to them what changed.
// A panel renders from a store; it never edits another panel's DOM.
//
// SessionsStore is the sessions list. (The open session's view is still
// app.js's; it moves here next, as one store per session.)

/**
 * SessionsStore is the sessions list: a Map of id -> SessionInfo (as the
 * server sends it, plus evSeq: the last event applied to the line) that
 * tells its subscribers which lines changed.
 */
export class SessionsStore extends Map {
  constructor() {
    super();
    this.subs = new Set();
  }

  /** subscribe calls fn(ids) after each change: the ids changed, or null for all. It returns the unsubscribe function. */
  subscribe(fn) {
    this.subs.add(fn);
    return () => this.subs.delete(fn);
  }

  notify(ids) {
    for (const fn of this.subs) fn(ids);
  }

  /** replace takes the whole list (a sessions frame, a list reply). */
  replace(list) {
    this.clear();
    for (const s of list || []) if (s && s.id) super.set(s.id, s);
    this.notify(null);
  }

  /**
   * update merges one line (a session frame, a start's reply) and
   * returns the line as it was ({} when new). A line read before events
   * the page applied already keeps what those events said (state, cost).
   */
  update(info) {
    const old = this.get(info.id) || {};
    const cur = { ...old, ...info };
    if (old.evSeq > (info.seq || 0)) for (const k of ["state", "tool", "cost_usd", "last_event"]) cur[k] = old[k];
    super.set(info.id, cur);
    this.notify([info.id]);
    return old;
  }

  /** remove forgets a line (a removed frame). */
  remove(id) {
    if (this.delete(id)) this.notify([id]);
  }

  /**
   * applyEvent moves the line of a session the page follows with its
   * events: its state at once, and its cost with the turn's result (not
   * a moment later, with the next list update).
   */
  applyEvent(id, ev, data) {
    const s = this.get(id);
    if (!s || !(ev.seq > (s.evSeq || 0))) return;
    s.evSeq = ev.seq;
    s.last_event = ev.time;
    if (ev.kind === "state") {
      s.state = data.state;
      s.tool = data.tool;
      this.notify([id]);
    } else if (ev.kind === "cost" && typeof data.usd === "number" && data.usd !== s.cost_usd) {
      s.cost_usd = data.usd;
      this.notify([id]);
    }
  }
}
