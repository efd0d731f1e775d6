// worktreepanel.js: the worktree of a session started "in a worktree":
// its branch and base, and what the owner may do with the work: merge it
// into the base branch, keep the branch, or discard both (after a
// confirmation that says what is lost). It also answers a close refused
// for unmerged work (worktree_unmerged) with a dialog that asks what to
// do with it: nothing is deleted without a word.
//
// It renders from the sessions store (SessionInfo.worktree, kept current
// by the server's session frames and by each command's result), and
// sends its commands through the one command layer ("do").

import { el } from "./dom.js";

const labels = {
  active: "not merged yet",
  merged: "merged",
  kept: "branch kept",
  discarded: "discarded",
  removed: "removed (merged)",
};

/**
 * WorktreePanel shows the worktree of the session on the page in box.
 * @param {HTMLElement} box
 * @param {{sessions: import("./store.js").SessionsStore, current: () => string,
 *   canOwn: (s: any) => boolean, live: () => boolean,
 *   command: (id: string, cmd: any) => Promise<any>}} o
 *   current is the id of the session on the page; canOwn whether this
 *   person may merge or discard (the owner); command sends a command.
 */
export class WorktreePanel {
  constructor(box, o) {
    this.box = box;
    this.o = o;
    this.busy = false;
    this.note = null; // {text, warn}: the last command's outcome
    this.noteFor = "";
    this.key = "";
    this.dlg = discardDialog();
    document.body.appendChild(this.dlg);
    o.sessions.subscribe((ids) => {
      if (ids === null || ids.includes(o.current())) this.render();
    });
  }

  /** render draws the panel for the session on the page (hidden without a worktree). */
  render() {
    const id = this.o.current();
    const s = id ? this.o.sessions.get(id) : null;
    const w = s?.worktree;
    if (!w || !w.path) {
      this.box.hidden = true;
      this.box.replaceChildren();
      this.key = "";
      return;
    }
    if (this.noteFor !== id) this.note = null;
    const own = this.o.canOwn(s);
    const gone = w.state === "discarded" || w.state === "removed";
    const key = JSON.stringify([id, w, own, this.busy, this.note, this.o.live(), !!s.ended]);
    if (key === this.key) return; // unchanged: the focus stays
    this.key = key;
    this.box.hidden = false;
    const head = el("div", "wt-head");
    head.appendChild(el("span", "wt-label", "Worktree"));
    const what = el("span", "wt-what");
    what.appendChild(el("code", "wt-branch", w.branch));
    what.appendChild(document.createTextNode(" from "));
    what.appendChild(el("code", "wt-base", w.base));
    head.appendChild(what);
    head.appendChild(el("span", "wt-state badge " + w.state, labels[w.state] || w.state));
    head.title = "This session works in its own git worktree (" + w.path + "): other sessions on " + w.repo + " never see its files until you merge.";
    const parts = [head];
    if (own && !gone) {
      const acts = el("div", "wt-acts");
      const off = this.busy || !this.o.live();
      // Once merged, merging again is for work done since: not the first choice.
      const merge = el("button", (w.state === "merged" ? "" : "primary ") + "wt-merge", "Merge into " + w.base);
      merge.title = "Commit what the session changed onto " + w.branch + " and merge it into " + w.base + ": all or nothing; refused on a conflict.";
      merge.disabled = off;
      merge.onclick = () => this.run(id, { type: "worktree_merge" }, (r) => (r.worktree?.up_to_date ? "Nothing to merge: " + w.base + " has all of it." : "Merged into " + w.base + " (" + short(r.worktree?.commit) + ")."));
      const keep = el("button", "wt-keep", "Keep branch");
      keep.title = "Commit what the session changed onto " + w.branch + " and keep it; closing the session then leaves the worktree and branch.";
      keep.disabled = off || w.state === "kept";
      keep.onclick = () => this.run(id, { type: "worktree_keep" }, (r) => "Kept: " + w.branch + " is at " + short(r.worktree?.commit) + ".");
      const discard = el("button", "danger wt-discard", "Discard…");
      discard.title = "Delete the worktree and its branch, with every change in them";
      discard.disabled = off;
      discard.onclick = () => this.discard(id, w);
      acts.append(merge, keep, discard);
      parts.push(acts);
    }
    if (this.note) parts.push(el("p", "wt-note small" + (this.note.warn ? " err" : ""), this.note.text));
    this.box.replaceChildren(...parts);
  }

  /** run sends a worktree command and shows its outcome. */
  async run(id, cmd, ok) {
    this.busy = true;
    this.render();
    try {
      const r = (await this.o.command(id, cmd)) || {};
      this.say(id, ok(r), false);
      // (A discarded session leaves the list: never bring its line back.)
      if (r.worktree && this.o.sessions.has(id)) this.o.sessions.update({ id, worktree: r.worktree });
    } catch (e) {
      this.say(id, failure(e), true);
    } finally {
      this.busy = false;
      this.render();
    }
  }

  say(id, text, warn) {
    this.noteFor = id;
    this.note = { text, warn };
  }

  /** discard asks, then discards: the worktree, its branch and the session. */
  discard(id, w) {
    this.ask(w, "discard", async () => {
      await this.run(id, { type: "worktree_discard", confirm: true }, () => "Discarded.");
    });
  }

  /**
   * closeRefused answers a close refused for unmerged work: it asks
   * whether to keep the branch or discard it, and closes again saying so.
   * It returns false for another refusal (the caller shows it).
   */
  closeRefused(id, err, close) {
    if (err?.code !== "worktree_unmerged") return false;
    const w = this.o.sessions.get(id)?.worktree || {};
    this.ask(w, "close", async (choice) => {
      try {
        await close(choice === "discard" ? { worktree: "discard", confirm: true } : { worktree: "keep" });
      } catch (e) {
        this.say(id, failure(e), true);
        this.render();
      }
    }, err.message);
    return true;
  }

  /** ask opens the dialog: mode "discard" (discard or cancel) or "close" (keep, discard or cancel). */
  ask(w, mode, then, why) {
    const d = this.dlg;
    d.querySelector(".wt-dlg-title").textContent = mode === "close" ? "Close: this session's work is not merged" : "Discard this worktree?";
    const lost = d.querySelector(".wt-dlg-lost");
    lost.replaceChildren(
      el("li", null, "the folder " + (w.path || "") + ", with every file the session created or changed in it"),
      el("li", null, "the branch " + (w.branch || "") + " and its commits (" + (w.base || "the base") + " keeps only what was merged before)"),
      el("li", null, "the session: it ends"),
    );
    // The server's words name the protocol's fields; say what it found.
    const found = /has (.*) not merged into/.exec(why || "");
    d.querySelector(".wt-dlg-why").textContent = found ? "Its branch " + (w.branch || "") + " has " + found[1] + " that " + (w.base || "the base branch") + " does not have." : "";
    d.querySelector(".wt-dlg-keep").hidden = mode !== "close";
    d.querySelector(".wt-dlg-intro").textContent =
      mode === "close" ? "Keep the branch to come back to it (merge it later with git), or discard it. Discarding deletes:" : "Discarding deletes, and this cannot be undone:";
    d.onclose = () => {
      const v = d.returnValue;
      d.returnValue = "";
      if (v === "discard" || v === "keep") then(v);
    };
    d.returnValue = "";
    d.showModal();
    d.querySelector(".wt-dlg-cancel").focus();
  }
}

function short(c) {
  return (c || "").slice(0, 8);
}

function failure(e) {
  const m = String(e?.message ?? e);
  switch (e?.code) {
    case "worktree_conflict":
      return "Not merged: " + m.replace(/^host: /, "") + ". Resolve it in the worktree (ask the session), then merge again.";
    case "worktree_base_dirty":
      return "Not merged: the checkout of the base branch has local changes the merge would overwrite. Commit or stash them there, then merge again.";
    case "busy":
      return "Not now: " + m;
  }
  return m;
}

function discardDialog() {
  const d = el("dialog", "dlg wt-dlg");
  d.id = "wt-dlg";
  const f = el("form");
  f.method = "dialog";
  const acts = el("div", "dlg-actions");
  const cancel = el("button", "wt-dlg-cancel", "Cancel");
  cancel.value = "cancel";
  const keep = el("button", "wt-dlg-keep", "Keep branch");
  keep.value = "keep";
  const discard = el("button", "danger wt-dlg-discard", "Discard");
  discard.value = "discard";
  acts.append(cancel, keep, discard);
  f.append(el("h2", "wt-dlg-title"), el("p", "wt-dlg-why muted small"), el("p", "wt-dlg-intro"), el("ul", "wt-dlg-lost"), acts);
  d.appendChild(f);
  return d;
}
