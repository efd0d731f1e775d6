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

/**
 * copyText puts text on the clipboard. The Clipboard API needs a secure
 * context (https, or localhost); a server reached by plain http on a LAN
 * has none, so there the text is selected in a hidden field and copied
 * the older way. It rejects when neither works.
 */
export async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
  const back = document.activeElement;
  const ta = el("textarea");
  ta.value = text;
  ta.setAttribute("readonly", "");
  ta.style.cssText = "position: fixed; top: 0; left: 0; opacity: 0";
  document.body.appendChild(ta);
  ta.select();
  const ok = document.execCommand("copy");
  ta.remove();
  back?.focus?.();
  if (!ok) throw new Error("the browser refused to copy");
}

/**
 * copyButton makes a button that copies text() and says so on itself for
 * a moment ("Copied", or "Not copied").
 * @param {string} what what it copies, read after its word by screen
 *   readers ("code": "Copy code", "Copied code")
 * @param {() => string} text
 */
export function copyButton(what, text) {
  const b = el("button", "copy");
  b.type = "button";
  const word = document.createTextNode("Copy");
  b.append(word, el("span", "sr-only", " " + what));
  b.onclick = async (e) => {
    e.stopPropagation(); // not a click on what it sits in (a folding card)
    try {
      await copyText(text());
      word.data = "Copied";
    } catch {
      word.data = "Not copied";
    }
    clearTimeout(b.reset);
    b.reset = setTimeout(() => (word.data = "Copy"), 1500);
  };
  return b;
}
