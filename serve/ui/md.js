// md.js: a small, safe Markdown renderer.
//
// It builds DOM nodes with createElement and textContent only: text from
// the model never reaches innerHTML, so no markup in a reply can run.
// Links keep only http(s) and mailto targets and open in a new tab
// without a referrer; images in Markdown are shown as links, never
// loaded (the UI makes no external requests).
//
// It covers what replies use: headings, paragraphs, fenced and indented
// code, block quotes, ordered and unordered lists (nested by indent),
// tables, rules, and inline code, bold, italic, strike and links. It is
// called again with the whole text as more tokens arrive, so an open
// code fence renders as code until it closes.
//
// A fenced block whose info word names a known language is coloured by
// highlight.js (see highlight.js here: its output is rebuilt from text
// and hljs-* spans only, never inserted as HTML).

import { highlightCode } from "./highlight.js";
import { copyButton, el, pre } from "./dom.js";

/**
 * render returns a DocumentFragment for the Markdown text. Its headings
 * start at level top (3: under the session's h2; 4 under a card's h3).
 * @param {string} text
 * @param {number} [top]
 * @returns {DocumentFragment}
 */
export function render(text, top = 3) {
  const frag = document.createDocumentFragment();
  blocks(text.replace(/\r\n?/g, "\n").split("\n"), frag);
  outline(frag, top);
  return frag;
}

/**
 * outline renumbers the headings blocks wrote (h1-h6 as the Markdown's #
 * count) so that they hang under the page's heading at top-1 and never
 * skip a level, which is how screen readers walk a page: the levels the
 * text uses, in order, become top, top+1, … (at most h6), and none is
 * more than one below the heading before it ("### a" first is h3, not h5).
 */
function outline(frag, top) {
  const hs = [...frag.querySelectorAll("h1, h2, h3, h4, h5, h6")];
  const levels = [...new Set(hs.map((h) => +h.tagName[1]))].sort((a, b) => a - b);
  let prev = top - 1;
  for (const h of hs) {
    const n = Math.min(top + levels.indexOf(+h.tagName[1]), prev + 1, 6);
    prev = n;
    if (n === +h.tagName[1]) continue;
    const r = el("h" + n);
    r.append(...h.childNodes);
    h.replaceWith(r);
  }
}

const fenceRe = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/;
const headRe = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const ruleRe = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const listRe = /^( *)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const quoteRe = /^ {0,3}>\s?(.*)$/;
const tableSepRe = /^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$/;

function blocks(lines, parent) {
  let i = 0;
  let para = [];
  const flush = () => {
    if (para.length) {
      const p = el("p");
      inline(para.join("\n"), p);
      parent.appendChild(p);
      para = [];
    }
  };
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if ((m = fenceRe.exec(line))) {
      flush();
      const fence = m[1];
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(fence)) body.push(lines[i++]);
      i++; // closing fence (or past the end while it streams)
      const box = pre();
      const code = el("code");
      const text = body.join("\n");
      highlightCode(code, text, m[2]);
      if (m[2]) code.dataset.lang = m[2];
      box.appendChild(code);
      parent.appendChild(codeBlock(box, text));
      continue;
    }
    if (line.trim() === "") {
      flush();
      i++;
      continue;
    }
    if ((m = headRe.exec(line))) {
      flush();
      const h = el("h" + m[1].length); // renumbered by outline
      inline(m[2], h);
      parent.appendChild(h);
      i++;
      continue;
    }
    if (ruleRe.test(line)) {
      flush();
      parent.appendChild(el("hr"));
      i++;
      continue;
    }
    if (quoteRe.test(line)) {
      flush();
      const inner = [];
      while (i < lines.length && (m = quoteRe.exec(lines[i]))) {
        inner.push(m[1]);
        i++;
      }
      const q = el("blockquote");
      blocks(inner, q);
      parent.appendChild(q);
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && tableSepRe.test(lines[i + 1]) && lines[i + 1].includes("-")) {
      flush();
      const rows = [line];
      i += 2;
      while (i < lines.length && lines[i].includes("|") && lines[i].trim() !== "") rows.push(lines[i++]);
      parent.appendChild(table(rows));
      continue;
    }
    if ((m = listRe.exec(line)) && (para.length === 0 || m[1].length === 0)) {
      flush();
      i = list(lines, i, parent);
      continue;
    }
    if (/^ {4,}\S/.test(line) && para.length === 0) {
      const body = [];
      while (i < lines.length && (/^ {4,}/.test(lines[i]) || lines[i].trim() === "")) body.push(lines[i++].slice(4));
      while (body.length && body[body.length - 1].trim() === "") body.pop();
      const box = pre();
      const text = body.join("\n");
      box.appendChild(el("code", null, text));
      parent.appendChild(codeBlock(box, text));
      continue;
    }
    para.push(line);
    i++;
  }
  flush();
}

// codeBlock puts a code block beside its Copy button, which copies the
// code as written (not as highlighted).
function codeBlock(box, text) {
  const d = el("div", "code-block");
  d.append(box, copyButton("code", () => text));
  return d;
}

function cells(row) {
  let r = row.trim();
  if (r.startsWith("|")) r = r.slice(1);
  if (r.endsWith("|") && !r.endsWith("\\|")) r = r.slice(0, -1);
  return r.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
}

function table(rows) {
  const wrap = el("div", "md-table");
  const t = el("table");
  const thead = el("thead");
  const tr = el("tr");
  for (const c of cells(rows[0])) {
    const th = el("th");
    inline(c, th);
    tr.appendChild(th);
  }
  thead.appendChild(tr);
  t.appendChild(thead);
  const tbody = el("tbody");
  for (const row of rows.slice(1)) {
    const r = el("tr");
    for (const c of cells(row)) {
      const td = el("td");
      inline(c, td);
      r.appendChild(td);
    }
    tbody.appendChild(r);
  }
  t.appendChild(tbody);
  wrap.appendChild(t);
  return wrap;
}

// list renders the list starting at lines[i] and returns the index after it.
function list(lines, i, parent) {
  const first = listRe.exec(lines[i]);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const l = el(ordered ? "ol" : "ul");
  if (ordered) {
    const start = parseInt(first[2], 10);
    if (start !== 1) l.start = start;
  }
  let item = null;
  let body = [];
  const close = () => {
    if (!item) return;
    // An item that opens with a block (a heading, a fence, a quote) is
    // blocks throughout.
    if (fenceRe.test(body[0]) || headRe.test(body[0]) || quoteRe.test(body[0])) {
      blocks(body, item);
      l.appendChild(item);
      return;
    }
    // A one-paragraph item renders inline, a longer one as blocks.
    const sub = body.slice(1);
    inline(body[0], item);
    if (sub.length) {
      const rest = document.createDocumentFragment();
      blocks(sub, rest);
      item.appendChild(rest);
    }
    l.appendChild(item);
  };
  while (i < lines.length) {
    const line = lines[i];
    const m = listRe.exec(line);
    if (m && m[1].length === indent && /\d/.test(m[2]) === ordered) {
      close();
      item = el("li");
      body = [m[3]];
      i++;
      continue;
    }
    if (line.trim() === "") {
      // A blank line ends the list unless the next line is indented.
      if (i + 1 < lines.length && /^\s+\S/.test(lines[i + 1]) && leading(lines[i + 1]) > indent) {
        body.push("");
        i++;
        continue;
      }
      break;
    }
    if (leading(line) > indent) {
      body.push(line.slice(Math.min(leading(line), indent + 2)));
      i++;
      continue;
    }
    if (m) break; // a sibling list of the other kind, or an outer item
    // Lazy continuation of the item's paragraph.
    body[body.length - 1] += "\n" + line.trim();
    i++;
  }
  close();
  parent.appendChild(l);
  return i;
}

function leading(s) {
  return s.length - s.trimStart().length;
}

// Inline syntax, earliest match first.
const inlineRe = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([\s\S]+?)\*\*|__([\s\S]+?)__|~~([\s\S]+?)~~|\*([^*\s][\s\S]*?)\*|(?<![\w])_([^_\s][\s\S]*?)_(?![\w])|!?\[([^\]]*)\]\(([^)\s]*)(?:\s+"[^"]*")?\)|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])|\\([\\`*_{}\[\]()#+\-.!|~>])|( {2,}|\\)\n/;

/**
 * inline renders inline Markdown into parent.
 * @param {string} text
 * @param {Node} parent
 */
export function inline(text, parent) {
  while (text.length) {
    const m = inlineRe.exec(text);
    if (!m) {
      parent.appendChild(document.createTextNode(text));
      return;
    }
    if (m.index > 0) parent.appendChild(document.createTextNode(text.slice(0, m.index)));
    if (m[1] !== undefined) {
      let c = m[2];
      if (c.startsWith(" ") && c.endsWith(" ") && c.trim()) c = c.slice(1, -1);
      parent.appendChild(el("code", null, c));
    } else if (m[3] !== undefined || m[4] !== undefined) {
      const s = el("strong");
      inline(m[3] ?? m[4], s);
      parent.appendChild(s);
    } else if (m[5] !== undefined) {
      const s = el("del");
      inline(m[5], s);
      parent.appendChild(s);
    } else if (m[6] !== undefined || m[7] !== undefined) {
      const s = el("em");
      inline(m[6] ?? m[7], s);
      parent.appendChild(s);
    } else if (m[8] !== undefined) {
      parent.appendChild(link(m[9], m[8] || m[9], m[0].startsWith("!")));
    } else if (m[10] !== undefined) {
      parent.appendChild(link(m[10], m[10], false));
    } else if (m[11] !== undefined) {
      parent.appendChild(document.createTextNode(m[11]));
    } else {
      parent.appendChild(el("br"));
    }
    text = text.slice(m.index + m[0].length);
  }
}

/** safeURL returns the URL if its scheme is http, https or mailto, else "". */
export function safeURL(href) {
  try {
    const u = new URL(href, "https://invalid.invalid/");
    if (u.origin === "https://invalid.invalid") return ""; // relative: points at this server
    if (u.protocol === "http:" || u.protocol === "https:" || u.protocol === "mailto:") return u.href;
  } catch {
    // not a URL
  }
  return "";
}

function link(href, label, image) {
  const url = safeURL(href);
  if (!url) return document.createTextNode(image ? "[image: " + label + "]" : label);
  const a = el("a");
  a.href = url;
  a.target = "_blank";
  a.rel = "noopener noreferrer nofollow";
  a.referrerPolicy = "no-referrer";
  if (image) a.textContent = "[image: " + (label || url) + "]";
  else inline(label, a);
  return a;
}
