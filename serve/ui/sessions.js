// sessions.js: the sessions list panel. It renders a SessionsStore into
// the sidebar's list, keyed by session: a line that changed is filled
// again in place, lines move only when the order changes, and a line
// that did not change is left alone, so the keyboard focus (a line, or
// anything else on the page) survives every update.

import { reorder } from "./dom.js";

/**
 * SessionList renders the list.
 * @param {HTMLElement} ul the list element
 * @param {HTMLElement} empty shown when there are no sessions
 * @param {import("./store.js").SessionsStore} store
 * @param {{groups:(list:any[])=>{key:string,title:string,items:any[]}[], key:(s:any)=>string, fill:(li:HTMLElement, s:any)=>void}} o
 *   groups splits the sorted list into headed groups; key is what a
 *   line shows (a line is filled again only when it changes); fill
 *   fills a line's element.
 */
export class SessionList {
  constructor(ul, empty, store, o) {
    this.ul = ul;
    this.empty = empty;
    this.store = store;
    this.o = o;
    this.lines = new Map(); // id -> {li, key}
    this.heads = new Map(); // group key -> li
    store.subscribe(() => this.render());
  }

  render() {
    const list = [...this.store.values()].sort((a, b) => (b.created || b.started || "").localeCompare(a.created || a.started || "") || a.id.localeCompare(b.id));
    const want = [];
    const heads = new Map();
    const lines = new Map();
    for (const g of this.o.groups(list)) {
      if (g.title) {
        const h = this.heads.get(g.key) || document.createElement("li");
        h.className = "group";
        h.dataset.group = g.key;
        const count = String(g.items.length);
        if (h.dataset.title !== g.title || h.dataset.count !== count) {
          h.dataset.title = g.title;
          h.dataset.count = count;
          const c = document.createElement("span");
          c.className = "count";
          c.textContent = count;
          h.replaceChildren(document.createTextNode(g.title), c);
        }
        heads.set(g.key, h);
        want.push(h);
      }
      for (const s of g.items) {
        let line = this.lines.get(s.id);
        const key = this.o.key(s);
        if (!line) line = { li: document.createElement("li"), key: null };
        if (line.key !== key) {
          line.key = key;
          this.o.fill(line.li, s);
        }
        lines.set(s.id, line);
        want.push(line.li);
      }
    }
    this.heads = heads;
    this.lines = lines;
    reorder(this.ul, want);
    this.empty.hidden = list.length > 0;
  }
}
