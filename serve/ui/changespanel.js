// changespanel.js: the Changes panel of one session: every file the
// session created, changed or deleted since it started, each with its
// diff (coloured as the approval cards' are), and reverting one file or
// all of them after a confirmation that says what will be lost.
//
// It follows the session's store: a snapshot, or a files_changed event
// (a tool's result, a revert by anyone), makes it ask the server again
// (the "changes" command, docs/serve-protocol.md); the count on its
// button stays current while the panel is closed. Its DOM (the button in
// the session's controls, the dialog) is built once and shared by the
// panels of the sessions opened one after another, as the approvals box
// is: a panel renders only while its session is the one shown.

import { el } from "./dom.js";
import { diffView } from "./transcript.js";

const $ = (id) => document.getElementById(id);

let ui = null; // the shared DOM: {btn, dlg, list, err, note, all, confirm}
let active = null; // the panel shown

function build() {
  document.head.appendChild(Object.assign(document.createElement("link"), { rel: "stylesheet", href: "changes.css" }));
  const btn = el("button", "changes-btn", "Changes");
  btn.type = "button";
  btn.id = "changes-btn";
  btn.title = "Files this session changed, with their diffs";
  const controls = document.querySelector("#session .controls");
  controls.insertBefore(btn, $("fork-btn") || null);

  const dlg = el("dialog", "dlg wide changes-dlg");
  dlg.id = "changes-dlg";
  const head = el("div", "changes-head");
  const h = el("h2", null, "Changes");
  const sum = el("span", "changes-sum muted");
  const all = el("button", "danger", "Revert all…");
  all.type = "button";
  all.id = "changes-revert-all";
  const close = el("button", null, "Close");
  close.type = "button";
  close.onclick = () => dlg.close();
  head.append(h, sum, el("span", "spacer"), all, close);
  const note = el("p", "muted small changes-note");
  const err = el("p", "err");
  err.setAttribute("role", "alert");
  const list = el("div", "changes-list");

  // The confirmation: which files, and what of them is lost.
  const confirm = el("dialog", "dlg changes-confirm");
  confirm.id = "changes-confirm";
  const ch = el("h2", null, "Revert?");
  const cwhat = el("p", "small");
  const clist = el("ul", "changes-lost");
  const cacts = el("div", "dlg-actions");
  const cno = el("button", null, "Cancel");
  cno.type = "button";
  const cyes = el("button", "danger", "Revert");
  cyes.type = "button";
  cyes.id = "changes-confirm-yes";
  cacts.append(cno, cyes);
  confirm.append(ch, cwhat, clist, cacts);

  dlg.append(head, note, err, list);
  document.body.append(dlg, confirm);
  ui = { btn, dlg, list, err, note, sum, all, confirm, cwhat, clist, cno, cyes };
  btn.onclick = () => active?.open();
  all.onclick = () => active?.ask(null);
}

/** lost says, for people, what reverting a change throws away. */
function lost(c) {
  const name = c.rel || c.path;
  switch (c.kind) {
    case "created":
      return `${name}: created by the session; it will be deleted`;
    case "deleted":
      return `${name}: deleted by the session; it will be restored`;
    default:
      if (c.binary || c.too_large) return `${name}: the session's changes will be lost`;
      return `${name}: the session's changes will be lost (+${c.added} −${c.removed} lines)`;
  }
}

/**
 * ChangesPanel shows one session's changes.
 * @param {{store: import("./store.js").SessionStore,
 *   fetch: () => Promise<any>, revert: (paths: string[]|null) => Promise<any>,
 *   canAct: () => boolean, shown: () => boolean}} o
 *   fetch asks for the changes (the command's result); revert reverts
 *   paths (null: all); canAct says whether this person may revert;
 *   shown whether this session is the one on the page.
 */
export class ChangesPanel {
  constructor(o) {
    if (!ui) build();
    this.o = o;
    this.changes = [];
    this.asOf = null; // when the changes shown were recorded, if not read now
    this.folded = new Map(); // path -> whether the person folded (true) or opened (false) it
    this.loaded = false;
    this.timer = 0;
    this.pending = false; // a fetch is under way
    this.again = false; // and another was asked for meanwhile
    active = this;
    ui.dlg.close?.();
    this.renderButton();
    o.store.subscribe((changed) => {
      if (changed.has("snapshot") || changed.has("files")) this.refresh();
    });
  }

  /** refresh asks for the changes again, soon (edits come in bursts). */
  refresh() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.load(), 150);
  }

  async load() {
    if (this.pending) {
      this.again = true;
      return;
    }
    this.pending = true;
    // Busy while a read is under way, for assistive technology (and for
    // tests, which wait for the answer rather than for time).
    if (active === this) ui.dlg.setAttribute("aria-busy", "true");
    try {
      const r = await this.o.fetch();
      this.changes = r.changes || [];
      // Set when they come from what a cluster recorded as the session
      // stopped, not from the files now.
      this.asOf = r.changes_as_of ? new Date(r.changes_as_of) : null;
      this.loaded = true;
      this.error = "";
    } catch (e) {
      this.error = "Could not read the changes: " + e.message;
    } finally {
      this.pending = false;
    }
    if (this.again) {
      this.again = false;
      this.load();
    } else if (active === this) ui.dlg.removeAttribute("aria-busy");
    if (active === this && this.o.shown()) this.render();
  }

  open() {
    active = this;
    this.render();
    if (!ui.dlg.open) ui.dlg.showModal();
    this.load();
  }

  renderButton() {
    const n = this.changes.length;
    ui.btn.textContent = n ? `Changes (${n})` : "Changes";
    ui.btn.classList.toggle("has", n > 0);
  }

  render() {
    this.renderButton();
    // A cluster session that ended has no process holding its files: it
    // cannot revert until it is resumed (one asleep wakes to revert).
    const frozen = this.asOf && this.o.store.ended;
    const act = this.o.canAct() && !frozen;
    const n = this.changes.length;
    const add = this.changes.reduce((a, c) => a + (c.added || 0), 0);
    const del = this.changes.reduce((a, c) => a + (c.removed || 0), 0);
    ui.sum.textContent = n ? `${n} file${n === 1 ? "" : "s"} · +${add} −${del}` : "";
    ui.all.hidden = !act || n === 0;
    ui.err.textContent = this.error || "";
    ui.err.hidden = !this.error;
    const asOf = this.asOf
      ? ` As they were at ${this.asOf.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })}, when the session ${this.o.store.ended ? "ended" : "fell asleep"}.`
      : "";
    ui.note.textContent = !this.loaded
      ? "Reading…"
      : n === 0
        ? "No files changed since the session started." + asOf
        : act
          ? "Each file against its state when the session started. Revert puts it back." + asOf
          : frozen
            ? "Each file against its state when the session started." + asOf + " Resume it to revert."
            : "Each file against its state when the session started. Only the owner and collaborators can revert." + asOf;
    const rows = [];
    for (const c of this.changes) {
      // A row: a header with a fold button and the Revert button side by
      // side, then the diff. Not details/summary: a button inside a
      // summary is a control inside a control, which screen readers and
      // keyboards cannot tell apart.
      const d = el("div", "change " + c.kind);
      d.dataset.path = c.path;
      // Open unless there are many, or as the person last left it: a
      // render for a new edit keeps what they folded.
      const open = this.folded.has(c.path) ? !this.folded.get(c.path) : n <= 8;
      const fold = el("button", "fold");
      fold.type = "button";
      fold.setAttribute("aria-expanded", String(open));
      fold.append(el("span", "kind " + c.kind, c.kind), el("span", "path", c.rel || c.path));
      if (!c.binary && !c.too_large) {
        const counts = el("span", "counts");
        counts.append(el("span", "plus", "+" + c.added), el("span", "minus", " −" + c.removed));
        fold.append(counts);
      }
      if ((c.tools || []).length) fold.append(el("span", "tools muted small", c.tools.join(", ")));
      else fold.append(el("span", "tools muted small", "seen by git"));
      const head = el("div", "change-head");
      head.append(fold);
      if (act) {
        const b = el("button", "revert small", "Revert…");
        b.type = "button";
        b.onclick = () => this.ask([c.path]);
        head.append(b);
      }
      const body = el("div", "change-body");
      body.hidden = !open;
      fold.onclick = () => {
        body.hidden = !body.hidden;
        fold.setAttribute("aria-expanded", String(!body.hidden));
        this.folded.set(c.path, body.hidden);
      };
      if (c.binary) body.append(el("p", "muted small", "Binary file: no diff shown."));
      else if (c.too_large) body.append(el("p", "muted small", "Too large to show here."));
      else body.append(diffView(c.old || "", c.new || "", c.path));
      d.append(head, body);
      rows.push(d);
    }
    ui.list.replaceChildren(...rows);
  }

  /** ask confirms a revert of paths (null: all), naming what is lost. */
  ask(paths) {
    const which = paths ? this.changes.filter((c) => paths.includes(c.path)) : this.changes;
    if (!which.length) return;
    ui.cwhat.textContent =
      (paths ? "Put this file back as it was when the session started?" : `Put all ${which.length} files back as they were when the session started?`) +
      " This cannot be undone from here.";
    ui.clist.replaceChildren(...which.map((c) => el("li", c.kind, lost(c))));
    ui.cno.onclick = () => ui.confirm.close();
    ui.cyes.disabled = false;
    ui.cyes.onclick = async () => {
      ui.cyes.disabled = true;
      try {
        await this.o.revert(paths);
        this.error = "";
      } catch (e) {
        this.error = "Revert failed: " + e.message;
      }
      ui.confirm.close();
      await this.load();
    };
    ui.confirm.showModal();
    ui.cno.focus();
  }
}
