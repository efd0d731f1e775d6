// sessions.js: the sessions list panel. It renders a SessionsStore into
// the sidebar's list, keyed by session: a line that changed is filled
// again in place, lines move only when the order changes, and a line
// that did not change is left alone, so the keyboard focus (a line, or
// anything else on the page) survives every update.

import { reorder } from "./dom.js";

/**
 * matches says whether a session matches a filter: each of the query's
 * words, ignoring case and accents, is found in one of the things its
 * line shows or is known by (title, prompts, folder, owner, state, model,
 * id). An empty query matches everything.
 * @param {any} s a session
 * @param {string} query
 * @param {string} [title] the title its line shows
 */
export function matches(s, query, title = "") {
  const words = fold(query).split(/\s+/).filter(Boolean);
  if (!words.length) return true;
  const hay = fold([title, s.title, s.first_prompt, s.last_prompt, s.cwd, s.person, s.person_name, s.ended ? "closed" : s.state, s.model, s.id].filter(Boolean).join("\n"));
  return words.every((w) => hay.includes(w));
}

const fold = (x) => x.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();

/**
 * SessionList renders the list.
 * @param {HTMLElement} ul the list element
 * @param {HTMLElement} empty shown when no session is listed: none at all,
 *   or none matching the filter (it then says so)
 * @param {import("./store.js").SessionsStore} store
 * @param {{groups:(list:any[])=>{key:string,title:string,items:any[]}[], key:(s:any)=>string, fill:(li:HTMLElement, s:any)=>void, title?:(s:any)=>string, filter?:HTMLInputElement}} o
 *   groups splits the sorted list into headed groups; key is what a
 *   line shows (a line is filled again only when it changes); fill
 *   fills a line's element; title is the title a line shows, which the
 *   filter searches too; filter is the filter's field, hidden while
 *   there is no session at all.
 */
export class SessionList {
  constructor(ul, empty, store, o) {
    this.ul = ul;
    this.empty = empty;
    this.emptyText = empty.textContent;
    this.store = store;
    this.o = o;
    this.query = "";
    this.lines = new Map(); // id -> {li, key}
    this.heads = new Map(); // group key -> li
    store.subscribe(() => this.render());
  }

  /** filter shows only the sessions that match query (matches). */
  filter(query) {
    if (query === this.query) return;
    this.query = query;
    this.render();
  }

  render() {
    const all = [...this.store.values()].sort((a, b) => (b.created || b.started || "").localeCompare(a.created || a.started || "") || a.id.localeCompare(b.id));
    const list = this.query.trim() ? all.filter((s) => matches(s, this.query, this.o.title?.(s))) : all;
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
    this.empty.textContent = all.length ? `No session matches “${this.query.trim()}”.` : this.emptyText;
    if (this.o.filter) this.o.filter.hidden = !all.length && !this.query;
  }
}
