// dom.js: the DOM helpers every panel uses.

/** el makes an element with a class and text (never HTML). */
export function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}

/**
 * pre makes a preformatted block (code, a diff, a tool's output). Such a
 * block scrolls when its lines are long or many, and a block that scrolls
 * must take the keyboard's focus (tabindex 0), or someone without a
 * mouse cannot read past its edge.
 */
export function pre(cls, text) {
  const e = el("pre", cls, text);
  e.tabIndex = 0;
  return e;
}

/**
 * reorder makes parent's children exactly want, in order, moving only
 * the nodes out of place: a node that stays where it is keeps the focus
 * and its state (a keyed list's render).
 */
export function reorder(parent, want) {
  let cur = parent.firstChild;
  for (const n of want) {
    if (n === cur) {
      cur = cur.nextSibling;
      continue;
    }
    parent.insertBefore(n, cur);
  }
  while (cur) {
    const next = cur.nextSibling;
    cur.remove();
    cur = next;
  }
}
