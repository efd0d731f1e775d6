// highlight.js: syntax colouring for code blocks and diffs, with the
// vendored highlight.js (vendor/highlight.js, built by
// scripts/vendor-highlight.sh: a common-languages build, served from the
// UI itself).
//
// highlight.js returns HTML with the code's text escaped. That HTML only
// ever goes into an inert <template>; what reaches the page is rebuilt
// from it with createElement and textContent, keeping text and <span>s
// whose classes are highlight.js's own (hljs-*), and nothing else. So no
// markup in the model's code can run, whatever the highlighter does.

import hljs from "./vendor/highlight.js";

// maxChars bounds the code highlighted at once: longer code is shown
// plain, so a huge file written by a tool cannot stall the page (the
// transcript re-renders a block as its tokens arrive).
const maxChars = 64_000;

// cache keeps recent results by language and text, because a streaming
// reply renders its finished code blocks again with every delta. It is
// bounded: the oldest entry goes when it is full.
const cache = new Map();
const cacheMax = 64;

const classRe = /^hljs-[a-z_-]+$/;

/** Names (file basenames) that say their language without an extension. */
const byName = {
  makefile: "makefile", gnumakefile: "makefile", dockerfile: "dockerfile",
  "go.mod": "go", "go.sum": "plaintext", ".bashrc": "bash", ".zshrc": "bash",
};

/**
 * language returns the highlight.js language for a fence's info word
 * ("go", "ts", "sh") or "" when there is none known.
 * @param {string} name
 * @returns {string}
 */
export function language(name) {
  if (!name) return "";
  const l = hljs.getLanguage(name.toLowerCase());
  if (!l) return "";
  return name.toLowerCase();
}

/**
 * languageOfPath returns the language for a file path, by its name or
 * extension ("main.go" → "go", "Makefile" → "makefile"), or "".
 * @param {string} path
 * @returns {string}
 */
export function languageOfPath(path) {
  if (!path) return "";
  const base = path.split(/[\\/]/).pop().toLowerCase();
  if (byName[base]) return byName[base];
  const dot = base.lastIndexOf(".");
  if (dot < 0) return "";
  return language(base.slice(dot + 1));
}

function highlighted(text, lang) {
  const key = lang + "\0" + text;
  let html = cache.get(key);
  if (html === undefined) {
    html = hljs.highlight(text, { language: lang, ignoreIllegals: true }).value;
    if (cache.size >= cacheMax) cache.delete(cache.keys().next().value);
  } else {
    cache.delete(key);
  }
  cache.set(key, html);
  const t = document.createElement("template");
  t.innerHTML = html; // inert: a template's content is never rendered or run
  return t.content;
}

// copy rebuilds src's text and hljs spans under dst.
function copy(src, dst) {
  for (const n of src.childNodes) {
    if (n.nodeType === Node.TEXT_NODE) {
      dst.appendChild(document.createTextNode(n.data));
    } else if (n.nodeType === Node.ELEMENT_NODE) {
      const classes = [...n.classList].filter((c) => classRe.test(c));
      if (n.tagName === "SPAN" && classes.length) {
        const s = document.createElement("span");
        s.className = classes.join(" ");
        copy(n, s);
        dst.appendChild(s);
      } else {
        copy(n, dst); // keep the text, drop the element
      }
    }
  }
}

/**
 * highlightCode fills el (a <code>) with text, coloured as lang when it is
 * a known language; else with the text alone. It returns whether it
 * coloured it.
 * @param {HTMLElement} el
 * @param {string} text
 * @param {string} lang
 * @returns {boolean}
 */
export function highlightCode(el, text, lang) {
  lang = language(lang);
  if (!lang || text.length > maxChars) {
    el.textContent = text;
    return false;
  }
  let src;
  try {
    src = highlighted(text, lang);
  } catch {
    el.textContent = text;
    return false;
  }
  el.replaceChildren();
  copy(src, el);
  el.classList.add("hljs");
  return true;
}

/**
 * highlightLines colours text as lang and returns one DocumentFragment
 * per line (text.split("\n")), spans that cross a line break reopened on
 * the next line, so a diff can show any line alone with its colours. It
 * returns null when the language is unknown or the text too long.
 * @param {string} text
 * @param {string} lang
 * @returns {DocumentFragment[]|null}
 */
export function highlightLines(text, lang) {
  lang = language(lang);
  if (!lang || text.length > maxChars) return null;
  let src;
  try {
    src = highlighted(text, lang);
  } catch {
    return null;
  }
  const root = document.createDocumentFragment();
  copy(src, root);
  const lines = [document.createDocumentFragment()];
  // walk copies node's children into the current line; open is the chain
  // of span classes around them, reopened after each line break.
  const walk = (node, open) => {
    for (const n of node.childNodes) {
      if (n.nodeType === Node.TEXT_NODE) {
        const parts = n.data.split("\n");
        parts.forEach((p, i) => {
          if (i > 0) lines.push(document.createDocumentFragment());
          if (p === "") return;
          let parent = lines[lines.length - 1];
          for (const cls of open) {
            const s = document.createElement("span");
            s.className = cls;
            parent.appendChild(s);
            parent = s;
          }
          parent.appendChild(document.createTextNode(p));
        });
      } else {
        walk(n, [...open, n.className]);
      }
    }
  };
  walk(root, []);
  return lines;
}
