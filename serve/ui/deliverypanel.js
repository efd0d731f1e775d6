// deliverypanel.js: the queued prompts of one session, under its
// transcript: each prompt sent during a turn and its fate (queued, taken
// or merged into the running turn, answered, cancelled, lost), with
// Cancel while the CLI has not taken it. Keyed by prompt: a line is
// filled again only when it changes, so a Cancel button in focus stays.

import { el, reorder } from "./dom.js";

/**
 * DeliveryPanel shows one session's prompts in ul.
 * @param {HTMLElement} ul
 * @param {{cancel: (uuid: string) => Promise<any>, shown: () => boolean}} o
 *   cancel withdraws a queued prompt; shown says whether this session is
 *   still the one on the page (the next one reuses ul).
 */
export class DeliveryPanel {
  constructor(ul, o) {
    this.ul = ul;
    this.o = o;
    this.items = new Map(); // uuid -> DeliveryInfo, in send order
    this.lines = new Map(); // uuid -> {li, key}
  }

  /** clear forgets every prompt (a snapshot follows). */
  clear() {
    this.items.clear();
    this.lines.clear();
    this.ul.replaceChildren();
  }

  render() {
    if (!this.o.shown()) return;
    const all = [...this.items.values()];
    const accepted = all.filter((d) => d.status === "accepted").length;
    const want = [];
    const lines = new Map();
    for (const d of all) {
      // accepted: the CLI took it into the running turn; with others, the
      // CLI merged them into one turn.
      let label = d.status;
      if (d.status === "accepted" && accepted > 1) d.merged = true;
      if (d.status === "accepted") label = d.merged ? "merged" : "taken";
      if (d.status === "answered" && d.merged) label = "answered · merged";
      const key = JSON.stringify([d.status, label, d.text, d.error]);
      const line = this.lines.get(d.uuid) || { li: el("li"), key: null };
      if (line.key !== key) {
        line.key = key;
        this.fill(line.li, d, label);
      }
      lines.set(d.uuid, line);
      want.push(line.li);
      if (d.status !== "queued" && d.status !== "accepted" && !d.fading) {
        // Answered, cancelled or lost: shown a moment, then gone (the
        // transcript has the answer).
        d.fading = true;
        setTimeout(() => {
          const cur = this.items.get(d.uuid);
          if (cur && cur.status === d.status) {
            this.items.delete(d.uuid);
            this.render();
          }
        }, d.status === "answered" ? 2500 : 5000);
      }
    }
    this.lines = lines;
    reorder(this.ul, want);
  }

  fill(li, d, label) {
    li.replaceChildren();
    li.dataset.uuid = d.uuid;
    li.dataset.status = d.status;
    const st = el("span", "dstate", label);
    st.dataset.s = label === "merged" ? "merged" : d.status;
    li.appendChild(st);
    li.appendChild(el("span", "dtext", d.text || "(image)"));
    if (d.error) li.appendChild(el("span", "err", d.error));
    if (d.status === "queued") {
      const b = el("button", "danger", "Cancel");
      b.type = "button";
      b.title = "Take this prompt back before Claude reads it";
      b.onclick = async () => {
        b.disabled = true;
        try {
          await this.o.cancel(d.uuid);
        } catch (e) {
          li.appendChild(el("span", "err", e.message));
        }
      };
      li.appendChild(b);
    }
  }
}
