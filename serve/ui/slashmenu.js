// slashmenu.js: the prompt box's menu of slash commands. A prompt that
// begins with "/" lists the commands the session's CLI takes as a prompt
// (its own, a project's, skills: the slash_commands command,
// docs/serve-protocol.md), narrowed by what follows the slash. The arrows
// choose; Tab completes the name; Enter runs a command that takes no
// arguments and completes one that does; Esc closes the menu. The list is
// asked for when the menu opens, once per session until forget drops it (a
// new CLI starts, a turn ends); a server or agent that cannot answer
// leaves the menu shut and the prompt as it was.

import { el } from "./dom.js";

// The most options shown at once. The menu never scrolls (a region that
// scrolls would have to take the focus from the prompt): the arrows move
// this window over the rest, and typing narrows them.
const shown = 8;

/**
 * SlashMenu attaches the menu to a prompt box.
 * @param {HTMLTextAreaElement} ta the prompt box
 * @param {HTMLElement} ul the listbox
 * @param {{session:()=>string|null, load:(id:string)=>Promise<any>, submit:()=>void}} o
 *   session is the open session's id; load asks for its slash commands
 *   (the command's result); submit sends the prompt as it is.
 */
export class SlashMenu {
  constructor(ta, ul, o) {
    this.ta = ta;
    this.ul = ul;
    this.o = o;
    this.lists = new Map(); // session id -> [SlashCommand]
    this.loading = new Map(); // session id -> Promise
    this.items = [];
    this.sel = 0;
    this.start = 0; // the first option shown
    this.q = null;
    ta.setAttribute("aria-autocomplete", "list");
    ta.setAttribute("aria-controls", ul.id);
    ul.setAttribute("role", "listbox");
    ta.addEventListener("input", () => this.update());
    ta.addEventListener("keydown", (e) => this.key(e));
    ta.addEventListener("blur", () => this.close());
    // A click chooses without taking the focus from the prompt.
    ul.addEventListener("mousedown", (e) => e.preventDefault());
    ul.addEventListener("click", (e) => {
      const li = e.target.closest("li[data-i]");
      if (!li) return;
      this.sel = +li.dataset.i;
      this.complete();
    });
  }

  get open() {
    return !this.ul.hidden;
  }

  /** forget drops a session's list: its CLI changed (a start, a wake) or a turn may have changed it. */
  forget(id) {
    this.lists.delete(id);
  }

  /** update shows the menu for the prompt as it is, or closes it. */
  async update() {
    const m = /^\/(\S*)$/.exec(this.ta.value);
    const id = this.o.session();
    if (!m || !id) return this.close();
    const q = m[1].toLowerCase();
    let list = this.lists.get(id);
    if (!list) {
      if (!this.loading.has(id)) {
        const p = this.o
          .load(id)
          .then((r) => this.lists.set(id, r?.slash_commands || []))
          .catch(() => {}) // not offered here (an older server or agent, a session asleep): no menu
          .finally(() => this.loading.delete(id));
        this.loading.set(id, p);
      }
      await this.loading.get(id);
      list = this.lists.get(id);
      // The prompt may have changed while the list came.
      if (!list || this.o.session() !== id || !/^\/\S*$/.test(this.ta.value)) return;
      return this.update();
    }
    const names = (c) => [c.name, ...(c.aliases || [])];
    // Names that begin with "__" are the CLI's own plumbing, not for people.
    const items = list
      .filter((c) => !c.name.startsWith("__") && names(c).some((n) => n.toLowerCase().startsWith(q)))
      .sort((a, b) => a.name.localeCompare(b.name));
    if (q !== this.q) this.sel = this.start = 0;
    this.q = q;
    this.items = items;
    if (!this.items.length) return this.close();
    this.sel = Math.min(this.sel, this.items.length - 1);
    this.render();
  }

  render() {
    const n = this.items.length;
    this.start = Math.max(0, Math.min(this.start, this.sel, n - shown), this.sel - shown + 1);
    this.ul.replaceChildren(
      ...this.items.slice(this.start, this.start + shown).map((c, j) => {
        const i = this.start + j;
        const li = el("li");
        li.id = "slash-opt-" + i;
        li.dataset.i = i;
        li.setAttribute("role", "option");
        li.setAttribute("aria-selected", String(i === this.sel));
        li.setAttribute("aria-posinset", String(i + 1));
        li.setAttribute("aria-setsize", String(n));
        const line = el("div", "slash-line");
        line.appendChild(el("span", "slash-name", "/" + c.name));
        if (c.argumentHint) line.appendChild(el("span", "slash-hint", c.argumentHint));
        li.appendChild(line);
        if (c.description) {
          li.appendChild(el("div", "slash-desc", c.description));
          li.title = c.description;
        }
        return li;
      }),
    );
    const more = n - shown;
    if (more > 0) this.ul.dataset.more = `${this.sel + 1} of ${n}: the arrows move, typing narrows`;
    else delete this.ul.dataset.more;
    this.ul.hidden = false;
    this.ta.setAttribute("aria-activedescendant", "slash-opt-" + this.sel);
  }

  close() {
    this.ul.hidden = true;
    this.ul.replaceChildren();
    this.items = [];
    this.q = null;
    this.ta.removeAttribute("aria-activedescendant");
  }

  /** complete puts the chosen command's name in the prompt, to type its arguments after. */
  complete() {
    const c = this.items[this.sel];
    if (!c) return;
    this.ta.value = "/" + c.name + " ";
    this.close();
    this.ta.focus();
    this.ta.setSelectionRange(this.ta.value.length, this.ta.value.length);
  }

  // key handles the menu's keys before the prompt's own (it is attached
  // first): none of them reaches the page (Esc would stop a turn).
  key(e) {
    if (!this.open || e.isComposing) return;
    switch (e.key) {
      case "ArrowDown":
      case "ArrowUp":
        this.sel = (this.sel + (e.key === "ArrowDown" ? 1 : -1) + this.items.length) % this.items.length;
        this.render();
        break;
      case "Tab":
        if (e.shiftKey) return;
        this.complete();
        break;
      case "Enter": {
        if (e.shiftKey) return;
        const c = this.items[this.sel];
        if (c.argumentHint) {
          this.complete();
          break;
        }
        this.ta.value = "/" + c.name;
        this.close();
        this.o.submit();
        break;
      }
      case "Escape":
        this.close();
        break;
      default:
        return;
    }
    e.preventDefault();
    e.stopImmediatePropagation();
  }
}
