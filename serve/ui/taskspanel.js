// taskspanel.js: the background tasks of one session, under its
// transcript: an agent the model started in the background, a shell
// command it backgrounded. They outlive the turn that started them, so a
// session can be idle while they work; each line says what it is and has
// its own Stop (a turn's Stop may leave them running). Rendered from the
// session's store (its tasks); keyed by task, so a Stop in focus stays.

import { el, reorder } from "./dom.js";

/** taskKind is a task's kind as a person reads it. */
function taskKind(t) {
  const type = t.type || "";
  if (type.includes("agent")) return "agent";
  if (type.includes("bash") || type.includes("shell")) return "shell";
  return type.replace(/^local_/, "") || "task";
}

/**
 * TasksPanel lists one session's background tasks in ul.
 * @param {HTMLElement} ul
 * @param {{store: import("./store.js").SessionStore, stop: (taskID: string) => Promise<any>,
 *   canAct: () => boolean, shown: () => boolean}} o
 *   stop asks for the task's end; canAct says whether this person may
 *   stop it (a viewer may not); shown whether this session is still the
 *   one on the page (the next one reuses ul).
 */
export class TasksPanel {
  constructor(ul, o) {
    this.ul = ul;
    this.o = o;
    this.lines = new Map(); // task id -> {li, key, stopping}
    o.store.subscribe((changed) => {
      if (changed.has("tasks") || changed.has("snapshot") || changed.has("ended")) this.render();
    });
  }

  render() {
    if (!this.o.shown()) return;
    const store = this.o.store;
    const tasks = store.ended ? [] : store.tasks || [];
    const act = this.o.canAct();
    const lines = new Map();
    const want = [];
    for (const t of tasks) {
      const line = this.lines.get(t.id) || { li: el("li"), key: null, stopping: false };
      const key = JSON.stringify([t.description, t.type, t.ambient, act, line.stopping]);
      if (line.key !== key) {
        line.key = key;
        this.fill(line, t, act);
      }
      lines.set(t.id, line);
      want.push(line.li);
    }
    this.lines = lines;
    reorder(this.ul, want);
    this.ul.hidden = want.length === 0;
  }

  fill(line, t, act) {
    const li = line.li;
    li.replaceChildren();
    li.dataset.task = t.id;
    const kind = el("span", "tkind", t.ambient ? "watching" : taskKind(t));
    kind.title = t.type || "";
    li.appendChild(kind);
    li.appendChild(el("span", "ttext", t.description || t.id));
    if (!act) return;
    const b = el("button", "danger", line.stopping ? "Stopping…" : "Stop");
    b.type = "button";
    b.disabled = line.stopping;
    b.title = "Stop this " + taskKind(t) + "; the session goes on";
    b.setAttribute("aria-label", "Stop " + (t.description || t.id));
    b.onclick = async () => {
      line.stopping = true;
      this.render();
      try {
        await this.o.stop(t.id);
      } catch (e) {
        line.stopping = false;
        this.render();
        // It ended meanwhile: the list says so with its next change.
        if (e.code !== "no_task") li.appendChild(el("span", "err", e.message));
      }
    };
    li.appendChild(b);
  }
}
