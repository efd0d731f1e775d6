// store.js: what the page knows, kept in stores that apply what the
// server says and tell the panels that subscribe to them what changed.
// A panel renders from a store; it never edits another panel's DOM.
//
// SessionsStore is the sessions list; SessionStore one session's facts,
// applied from its snapshot and events in order. (The transcript, the
// approval cards and the queued prompts are still rendered by app.js
// from the events SessionStore.apply lets through; they become panels
// of the store next.)

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
    // tasks is left out of a line when none runs.
    const cur = { ...old, ...info, tasks: info.tasks || 0 };
    if (old.evSeq > (info.seq || 0)) for (const k of ["state", "tool", "cost_usd", "last_event", "tasks"]) cur[k] = old[k];
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
   * events: its state at once, its cost with the turn's result and its
   * count of background tasks (watchers left out) as they start and end
   * (not a moment later, with the next list update).
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
    } else if (ev.kind === "tasks" && Array.isArray(data)) {
      // Watchers (ambient) are no work, as the server counts them.
      const n = data.filter((t) => !t.ambient).length;
      if (n !== (s.tasks || 0)) {
        s.tasks = n;
        this.notify([id]);
      }
    }
  }
}

/** The facts of a session a subscriber of SessionStore can ask about. */
const facts = ["state", "model", "mode", "cwd", "cost", "ended", "suggestion", "tasks"];

/**
 * suggestionAfter is what the suggestion becomes after an item: the CLI's
 * guess at the next prompt, until a prompt or a new turn makes it moot.
 */
function suggestionAfter(cur, it) {
  if (it.kind === "suggestion") return it.text || "";
  if (it.kind === "prompt" || (it.kind === "system" && it.subtype === "init")) return "";
  return cur;
}

/**
 * SessionStore is one session's facts as the page follows it: the last
 * event applied (lastSeq, lastEvent), its state, model, permission mode,
 * working directory, cost, whether it ended, the CLI's suggestion for
 * the next prompt ("" when none stands), and the background tasks its CLI
 * runs (TaskInfo list, oldest first). load takes a snapshot,
 * apply each event in order; subscribers hear which facts changed.
 */
export class SessionStore {
  constructor(id) {
    this.id = id;
    this.lastSeq = 0;
    this.lastEvent = null;
    this.state = { state: "" };
    this.model = "";
    this.mode = "";
    this.cwd = "";
    this.cost = null;
    this.ended = false;
    this.suggestion = "";
    this.tasks = [];
    this.subs = new Set();
  }

  /** subscribe calls fn(changed) after each change: a Set of the facts that changed ("snapshot" after load). It returns the unsubscribe function. */
  subscribe(fn) {
    this.subs.add(fn);
    return () => this.subs.delete(fn);
  }

  notify(changed) {
    if (changed.size) for (const fn of this.subs) fn(changed);
  }

  /** set changes facts by hand (a model switched from this page), telling subscribers. */
  set(patch) {
    const changed = new Set();
    for (const [k, v] of Object.entries(patch)) {
      if (facts.includes(k) && this[k] !== v) {
        this[k] = v;
        changed.add(k);
      }
    }
    this.notify(changed);
  }

  /** load replaces the facts with a snapshot's; the events after snap.seq follow. */
  load(snap) {
    this.lastSeq = snap.seq || 0;
    this.state = snap.state || { state: "" };
    this.model = snap.model || "";
    this.mode = snap.permission_mode || "";
    this.cwd = snap.cwd || "";
    this.ended = !!snap.ended;
    this.cost = snap.cost || null;
    this.tasks = snap.tasks || [];
    this.suggestion = "";
    for (const it of snap.items || []) this.suggestion = suggestionAfter(this.suggestion, it);
    this.notify(new Set(["snapshot", ...facts]));
  }

  /**
   * apply takes the next event. It returns "dup" for an event applied
   * already (ignore it), "gap" when events are missing before it (render
   * nothing past it: take a snapshot), else the event's data.
   */
  apply(ev, data) {
    if (ev.seq <= this.lastSeq) return "dup";
    if (this.lastSeq && ev.seq !== this.lastSeq + 1) return "gap";
    this.lastSeq = ev.seq;
    this.lastEvent = ev.time;
    const d = data;
    const changed = new Set();
    const put = (k, v) => {
      if (this[k] !== v) {
        this[k] = v;
        changed.add(k);
      }
    };
    switch (ev.kind) {
      case "state":
        put("state", d);
        break;
      case "message":
        if (d && d.type === "system" && d.subtype === "init") {
          put("model", d.model || this.model);
          put("mode", d.permissionMode || this.mode);
          put("cwd", d.cwd || this.cwd);
        } else if (d && d.type === "system" && d.subtype === "status" && d.permissionMode) {
          put("mode", d.permissionMode);
        }
        break;
      case "items":
        // The transcript items of a message event (a subscription with items).
        for (const it of d || []) {
          put("suggestion", suggestionAfter(this.suggestion, it));
          if (it.kind !== "system") continue;
          if (it.subtype === "init") {
            put("model", it.model || this.model);
            put("mode", it.permission_mode || this.mode);
            put("cwd", it.cwd || this.cwd);
          } else if (it.permission_mode) put("mode", it.permission_mode);
        }
        break;
      case "cost":
        put("cost", d);
        break;
      case "tasks":
        put("tasks", d || []);
        break;
      case "files_changed":
        changed.add("files"); // a hint: the changes panel asks again
        break;
      case "closed":
        put("ended", true);
        put("state", { state: "closed", since: ev.time });
        break;
    }
    this.notify(changed);
    return d;
  }
}
