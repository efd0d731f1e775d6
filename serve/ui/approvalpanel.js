// approvalpanel.js: the approvals panel of one session: the cards of the
// approvals that wait for a person (approvals.js builds each), and what
// an answered one leaves in the transcript: one line after its tool
// call, "Allowed by Alice · Bash ls". It follows the session's store:
// once the turn is over, answered cards fold at once.

import * as approvals from "./approvals.js";
import { el } from "./dom.js";

/**
 * ApprovalPanel shows one session's approvals in box.
 * @param {HTMLElement} box where the cards go
 * @param {{store: import("./store.js").SessionStore, transcript: any,
 *   answer: (id: string, reply: any) => Promise<any>, canAct: () => boolean,
 *   busy: () => boolean, typing: () => boolean, prompt: HTMLElement,
 *   scroll: () => void, asked: () => void, shown: () => boolean}} o
 *   answer sends an answer; canAct says whether this person may answer;
 *   busy whether a turn runs; typing whether the person types somewhere;
 *   shown whether this session is still the one on the page (its box and
 *   transcript element are shared with the next one).
 */
export class ApprovalPanel {
  constructor(box, o) {
    this.box = box;
    this.o = o;
    this.pending = new Map(); // id -> {info, el}: waiting, oldest first
    // Approvals this tab answered (or is answering): the resolved event
    // may come before the reply to our answer, and must still read as
    // answered here.
    this.mine = new Set();
    this.folding = []; // answered cards shown a moment before they fold
    o.store.subscribe((changed) => {
      if (changed.has("state") && !o.busy() && o.shown()) for (const f of [...this.folding]) this.fold(f);
    });
  }

  /** reset forgets every card (a snapshot follows). */
  reset() {
    this.pending.clear();
    this.folding = [];
    this.box.replaceChildren();
  }

  /** first is the oldest waiting approval ({info, el}), which takes the keys. */
  first() {
    return this.pending.values().next().value;
  }

  /** add shows an approval that waits (an approval event, a snapshot's). */
  add(a) {
    if (this.pending.has(a.id)) return;
    const o = this.o;
    o.asked();
    const c = approvals.card(
      a,
      (reply) => {
        this.mine.add(a.id);
        return o.answer(a.id, reply).catch((e) => {
          this.mine.delete(a.id);
          throw e;
        });
      },
      (toolUseID) => o.transcript.tools.get(toolUseID)?.inputValue,
    );
    if (!o.canAct()) {
      // Watching only: the card shows what is asked, with nothing to press.
      for (const x of c.querySelectorAll(".acts, button, input.reason, .err, .rule")) x.remove();
      for (const x of c.querySelectorAll("input, textarea, select")) x.disabled = true;
      c.keys = null;
      c.classList.add("watch-only");
      c.appendChild(el("p", "muted small", "Waiting for the owner or a collaborator to answer."));
    }
    this.pending.set(a.id, { info: a, el: c });
    if (a.tool_use_id) o.transcript.awaiting(a.tool_use_id, true, a.kind !== "tool");
    this.box.appendChild(c);
    // Cards answered a moment ago stay above it until they fold; the one
    // that waits now must not start out of view (on a phone the box is
    // half the screen).
    if (this.pending.size === 1) c.scrollIntoView({ block: "start" });
    o.scroll();
    // Keyboard-first: the new card takes the keys unless the user is typing.
    const ta = o.prompt;
    if (c.keys && this.pending.size === 1 && (!o.typing() || (document.activeElement === ta && !ta.value.trim()))) c.focus({ preventScroll: true });
  }

  /** resolve shows how an approval ended (an approval_resolved event). */
  resolve(r) {
    const a = this.pending.get(r.id);
    if (!a) return;
    const o = this.o;
    this.pending.delete(r.id);
    if (a.info.tool_use_id) {
      o.transcript.awaiting(a.info.tool_use_id, false);
      // A declined form is an answer the server's tool goes on with,
      // not a call denied.
      if (r.outcome === "denied" && a.info.kind !== "elicitation") o.transcript.denied(a.info.tool_use_id);
    }
    approvals.resolved(a.el, r, this.mine.has(r.id));
    if (r.answered_by && a.info.tool_use_id) o.transcript.answeredBy(a.info.tool_use_id, r.outcome, r.answered_by);
    // Keep the outcome in view a moment, then fold the card into one line
    // of the transcript; at once when the turn is over.
    const done = { a, r };
    this.folding.push(done);
    setTimeout(() => this.fold(done), 1500);
    if (!o.busy()) this.fold(done);
    const next = this.first();
    if (next && next.el.keys && (a.el.contains(document.activeElement) || !o.typing())) next.el.focus({ preventScroll: true });
    else if (!next && a.el.contains(document.activeElement)) o.prompt.focus({ preventScroll: true });
  }

  // fold replaces an answered card with its record.
  fold(done) {
    const i = this.folding.indexOf(done);
    if (i < 0) return;
    this.folding.splice(i, 1);
    const focused = done.a.el.contains(document.activeElement);
    done.a.el.remove();
    if (!this.o.shown()) return;
    this.record(done.r, done.a.info);
    if (focused) this.o.prompt.focus({ preventScroll: true });
  }

  /**
   * answered shows approvals answered before the page looked (a
   * snapshot's resolved, a resumed conversation's): who answered, on
   * their calls, and the record after each.
   */
  answered(list) {
    const tr = this.o.transcript;
    for (const r of list) {
      if (!r.tool_use_id || !tr.tools.has(r.tool_use_id)) continue;
      if (r.outcome === "denied" && r.kind !== "elicitation") tr.denied(r.tool_use_id);
      if (r.answered_by) tr.answeredBy(r.tool_use_id, r.outcome, r.answered_by);
      this.record(r, { ...r, message: r.server_message });
    }
  }

  /**
   * record puts the line of an approval a (its ApprovalInfo, or as much
   * of it as a resolved entry holds) answered with r after its tool
   * call's card, or at the end of the transcript when the card is not
   * shown. An MCP server's form is named by its server and what it
   * asked, not by its tool's input, and a form not answered was
   * declined (the server's tool goes on), not denied.
   */
  record(r, a) {
    const tr = this.o.transcript;
    const card = a.tool_use_id && tr.tools.get(a.tool_use_id);
    let rec;
    if (a.kind === "elicitation") {
      const outcome = r.outcome === "denied" ? "declined" : r.outcome;
      rec = approvals.record({ ...r, outcome }, (a.server || a.tool_name) + ": " + (a.message || "").slice(0, 120));
    } else {
      rec = approvals.record(r, a.tool_name, parseInput(a.input) ?? card?.inputValue);
    }
    if (card) card.el.after(rec);
    else tr.root.appendChild(rec);
  }
}

function parseInput(x) {
  if (typeof x !== "string") return x;
  try {
    return JSON.parse(x);
  } catch {
    return undefined;
  }
}
