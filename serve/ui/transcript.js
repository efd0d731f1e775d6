// transcript.js: renders a session's transcript items.
//
// The server derives the items from the CLI's messages (serve/items.go,
// docs/serve-protocol.md "Transcript items"): prompts, assistant text and
// thinking that grow while they are written (sent again whole, same id),
// tool calls whose input is always a complete JSON value, tool results,
// notices, turn ends. Here they become DOM: text as Markdown, tool calls
// as cards keyed by tool_use id with their result, a subagent's items
// (parent) nested inside its Agent/Task card. Nothing here uses innerHTML.

import { render as markdown } from "./md.js";
import { diffLines } from "./diff.js";
import { highlightLines, languageOfPath } from "./highlight.js";
import { copyButton, el, pre } from "./dom.js";

export class Transcript {
  /** @param {HTMLElement} root */
  constructor(root) {
    this.root = root;
    this.bgTools = new Map(); // tool_use id → a watcher, of the background tasks running (kept across a reset)
    this.reset();
  }

  reset() {
    this.root.replaceChildren();
    this.msgs = new Map(); // message id -> {el, blocks (by index), parent}
    this.tools = new Map(); // tool_use id -> card
    this.shown = new Map(); // item id -> element, for items other than blocks
    this.users = new Set(); // uuids of prompts shown
    this.anchor = null; // the current turn's first element
    this.errorBlock = null; // the current turn's API error, as shown
    this.firstPrompt = "";
    this.dirty = new Set();
    this.timer = 0;
    this.model = "";
    this.onTurn = null; // callback(turn summary) after each result
  }

  /**
   * add appends a top-level element; the first one of a turn is the
   * anchor the turn's prompt goes before (the CLI echoes prompts only
   * after the turn's first stream events).
   */
  add(node, parent = this.root) {
    parent.appendChild(node);
    if (parent === this.root && !this.anchor && !node.classList.contains("user")) this.anchor = node;
    return node;
  }

  /** prompt shows a prompt just sent, before the CLI echoes it. */
  prompt(uuid, text, running = false) {
    if (this.users.has(uuid)) return;
    this.users.add(uuid);
    if (!this.firstPrompt) this.firstPrompt = text;
    const b = el("div", "msg user pending");
    b.dataset.uuid = uuid;
    b.appendChild(el("div", "user-text", text));
    // The running turn's prompt (from a snapshot) goes before its output.
    if (running && this.anchor && this.anchor.parentNode === this.root) {
      this.root.insertBefore(b, this.anchor);
      return;
    }
    this.root.appendChild(b);
    this.anchor = null;
  }

  /** container returns where an item of the given thread goes. */
  container(parent) {
    if (parent) {
      const card = this.tools.get(parent);
      if (card) return card.children;
    }
    return this.root;
  }

  /** apply renders one item: a new one, or a new version of one shown. */
  apply(it) {
    if (!it || typeof it !== "object") return;
    switch (it.kind) {
      case "text":
      case "thinking":
      case "redacted_thinking":
      case "tool_use":
      case "block":
        this.blockItem(it);
        break;
      case "prompt":
        this.user(it);
        break;
      case "tool_result":
        this.toolResult(it);
        break;
      case "notice":
        this.notice(it);
        break;
      case "result":
        this.result(it);
        break;
      case "system":
        if (it.subtype === "init") {
          this.anchor = null; // a turn begins
          if (it.model) this.model = it.model;
        } else if (it.subtype === "task_notification") this.taskEnded(it.tool_use_id, it.task_status);
        break;
    }
  }

  /** place shows an element for an item, or puts it in place of the one shown for the same id. */
  place(it, node, parent) {
    const old = this.shown.get(it.id);
    this.shown.set(it.id, node);
    if (old && old.parentNode) old.replaceWith(node);
    else this.add(node, parent);
  }

  msg(id, parent, model) {
    let e = this.msgs.get(id);
    if (!e) {
      const div = el("div", "msg assistant");
      div.dataset.id = id || "";
      e = { el: div, blocks: [], parent };
      this.msgs.set(id, e);
      this.add(div, this.container(parent));
      if (model) this.model = model;
    }
    return e;
  }

  // blockItem shows a block of an assistant message, or its new version.
  blockItem(it) {
    const e = this.msg(it.message, it.parent || null, it.model);
    const idx = it.index || 0;
    let b = e.blocks[idx];
    if (it.kind === "tool_use" && this.tools.has(it.tool_use_id)) b = this.tools.get(it.tool_use_id).block;
    if (!b || b.kind !== it.kind) {
      if (b) {
        b.el.remove();
        b.copy?.remove();
      }
      b = this.block(e, it);
      e.blocks[idx] = b;
      // Blocks stand in their message's order, whatever order they came in.
      const next = e.blocks.slice(idx + 1).find((x) => x && x.el.parentNode === e.el);
      e.el.insertBefore(b.el, next ? next.el : null);
    }
    // A block that only grew comes as its growth (append); else whole.
    b.text = it.append ? b.text + (it.text || "") : it.text || "";
    b.status = it.status;
    if (it.kind === "tool_use") b.inputValue = it.input;
    if (it.error) {
      e.el.classList.add("error");
      this.errorBlock = b; // the turn's end need not say its text again
    }
    if (it.synthetic) e.el.classList.add("synthetic");
    if (it.status === "streaming") this.touch(b);
    else this.flushBlock(b);
  }

  // block creates the DOM of one content block.
  block(e, it) {
    const b = { kind: it.kind, text: "", inputValue: undefined, status: it.status, el: null };
    switch (it.kind) {
      case "text":
        b.el = el("div", "text md");
        break;
      case "thinking": {
        b.el = el("details", "thinking");
        b.el.appendChild(el("summary", null, "Thinking"));
        b.body = el("div", "thinking-body");
        b.el.appendChild(b.body);
        break;
      }
      case "redacted_thinking":
        b.el = el("div", "thinking redacted", "Thinking (redacted)");
        break;
      case "tool_use":
        this.toolCard(b, it, e.parent);
        break;
      default:
        b.el = el("div", "note", "[" + (it.block_type || "block") + "]");
    }
    return b;
  }

  toolCard(b, it, parent) {
    const card = el("details", "tool");
    card.open = true;
    card.dataset.tool = it.name || "";
    card.dataset.id = it.tool_use_id || "";
    card.dataset.status = "running";
    const sum = el("summary");
    sum.appendChild(el("span", "tool-name", toolLabel(it.name)));
    b.summary = el("span", "tool-summary");
    sum.appendChild(b.summary);
    b.statusEl = el("span", "tool-status", "running");
    sum.appendChild(b.statusEl);
    card.appendChild(sum);
    b.inputEl = el("div", "tool-input");
    card.appendChild(b.inputEl);
    b.children = el("div", "tool-children");
    if (isAgent(it.name)) card.appendChild(b.children);
    b.resultEl = el("div", "tool-result");
    card.appendChild(b.resultEl);
    b.el = card;
    b.name = it.name || "";
    b.id = it.tool_use_id;
    b.parent = parent;
    b.block = b;
    this.tools.set(it.tool_use_id, b);
  }

  // touch marks a block for re-rendering; renders are batched so a burst
  // of updates costs one Markdown pass.
  touch(b) {
    this.dirty.add(b);
    if (!this.timer) this.timer = setTimeout(() => this.flush(), 30);
  }

  flush() {
    clearTimeout(this.timer);
    this.timer = 0;
    for (const b of this.dirty) this.flushBlock(b);
    this.dirty.clear();
  }

  flushBlock(b) {
    this.dirty.delete(b);
    b.el.classList.toggle("streaming", b.status === "streaming");
    switch (b.kind) {
      case "text":
        b.el.replaceChildren(markdown(b.text));
        // Once it is whole, the text copies as the Markdown it came as
        // (a button after it, not in it: the text stays the text).
        if (b.status !== "streaming" && b.text.trim() && !b.copy && b.el.parentNode) {
          b.copy = copyButton("text as Markdown", () => b.text);
          b.copy.classList.add("copy-text");
          b.el.after(b.copy);
        }
        break;
      case "thinking":
        b.body.textContent = b.text;
        break;
      case "tool_use": {
        const v = b.inputValue;
        b.summary.textContent = toolSummary(b.name, v || {});
        b.inputEl.replaceChildren(toolInput(b.name, v, "", b.status !== "streaming"));
        break;
      }
    }
  }

  // user shows a prompt: its text blocks and images. A prompt shown when
  // sent is filled in by its echo; the server takes out of a merged echo
  // the prompts an earlier echo showed (serve/items.go, unshown).
  user(it) {
    let pending = null;
    if (it.id && this.users.has(it.id)) {
      // The echo of a prompt shown when sent: it now has its images too.
      pending = this.root.querySelector(`.msg.user.pending[data-uuid="${CSS.escape(it.id)}"]`);
      if (!pending) return;
    }
    if (it.id) this.users.add(it.id);
    const parent = it.parent || null;
    const bubble = el("div", "msg user");
    for (const t of it.texts || []) {
      // A subagent's prompt is its Agent call's input, shown there.
      if (parent && this.tools.get(parent)?.inputValue?.prompt === t) continue;
      if (it.synthetic || parent) {
        this.container(parent).appendChild(el("div", parent ? "note subprompt" : "note", t));
        continue;
      }
      const shown = commandPrompt(t);
      bubble.appendChild(el("div", "user-text", shown));
      if (!this.firstPrompt && !parent) this.firstPrompt = shown;
    }
    for (const c of it.images || []) {
      const img = image(c);
      if (img) bubble.appendChild(img);
    }
    if (pending) {
      pending.classList.remove("pending");
      if (bubble.childNodes.length) pending.replaceChildren(...bubble.childNodes);
      return;
    }
    if (bubble.childNodes.length) {
      if (it.id) bubble.dataset.uuid = it.id;
      // An echoed prompt goes before the output of the turn it started.
      if (it.replay && !parent && this.anchor && this.anchor.parentNode === this.root) this.root.insertBefore(bubble, this.anchor);
      else this.container(parent).appendChild(bubble);
    }
  }

  toolResult(it) {
    const b = this.tools.get(it.tool_use_id);
    if (!b) return;
    const c = { content: it.content, is_error: !!it.is_error };
    const status = c.is_error ? (b.denied || /denied|rejected|doesn't want/i.test(text(c.content)) ? "denied" : "error") : "done";
    b.el.dataset.status = status;
    b.statusEl.textContent = status;
    if (status === "done" && this.bgTools.has(it.tool_use_id)) this.markBackground(b, true, this.bgTools.get(it.tool_use_id));
    b.resultEl.replaceChildren(toolResultView(b.name, c, it.structured, b.inputValue));
    if (isAgent(b.name) && !c.is_error) b.el.open = false;
  }

  /**
   * background marks the calls that started the background tasks now
   * running (calls: their tool_use ids, each to whether the task is a
   * watcher, ambient): such a call returned at once, and its work goes on,
   * so its card says "in the background" (a watcher's "watching"), not
   * "done", until the task ends.
   */
  background(calls) {
    const was = this.bgTools;
    this.bgTools = calls;
    for (const id of new Set([...was.keys(), ...calls.keys()])) {
      const b = this.tools.get(id);
      if (b && b.el) this.markBackground(b, calls.has(id), calls.get(id));
    }
  }

  /** taskEnded says on a call's card how the background task it started ended. */
  taskEnded(toolUseID, status) {
    const b = this.tools.get(toolUseID);
    if (!b || !b.el) return;
    b.taskEnded = status === "completed" ? "done" : status === "stopped" ? "stopped" : "failed";
    b.el.dataset.status = b.taskEnded;
    b.statusEl.textContent = b.taskEnded;
  }

  markBackground(b, on, watch = false) {
    if (b.taskEnded) return; // it ended: the card says how
    const cur = b.el.dataset.status;
    if (on && (cur === "done" || cur === "background")) {
      b.el.dataset.status = "background";
      b.statusEl.textContent = watch ? "watching" : "in the background";
    } else if (!on && cur === "background") {
      b.el.dataset.status = "done";
      b.statusEl.textContent = "done";
    }
  }

  /** awaiting marks a tool call that waits for a person's approval. */
  awaiting(toolUseID, waiting, question = false) {
    const b = this.tools.get(toolUseID);
    if (!b || b.el.dataset.status !== (waiting ? "running" : "approval")) return;
    b.el.dataset.status = waiting ? "approval" : "running";
    b.statusEl.textContent = waiting ? (question ? "waits for your answer" : "needs approval") : "running";
  }

  /** answeredBy notes on a tool call's card who allowed or denied it (team servers). */
  answeredBy(toolUseID, outcome, name) {
    const b = this.tools.get(toolUseID);
    if (!b || !name) return;
    let n = b.el.querySelector(":scope > summary .tool-by");
    if (!n) {
      n = el("span", "tool-by");
      b.statusEl.before(n);
    }
    n.textContent = (outcome === "denied" ? "denied by " : outcome === "answered" ? "answered by " : "allowed by ") + name;
  }

  /** denied marks a tool call a person refused, so its card says so. */
  denied(toolUseID) {
    const b = this.tools.get(toolUseID);
    if (b) b.denied = true;
  }

  notice(it) {
    const cls = it.level === "warn" ? "note warn" : it.level === "interrupted" ? "note interrupted" : "note";
    this.place(it, el("div", cls, it.text || ""), this.container(it.parent || null));
  }

  result(it) {
    const t = it.turn || {};
    const sum = el("div", "turn-end" + (t.is_error ? " error" : ""));
    const parts = [];
    // A failed turn's reason, unless it is the error the transcript shows
    // just above (the CLI's message for an API error is the result too).
    const shown = (this.errorBlock?.text || "").trim();
    if (t.is_error) parts.push(t.reason && t.reason.trim() !== shown ? t.reason : "error");
    this.errorBlock = null;
    if (t.duration_ms != null) parts.push((t.duration_ms / 1000).toFixed(1) + " s");
    if (t.input_tokens != null) parts.push(fmtTokens(t.input_tokens) + " in · " + fmtTokens(t.output_tokens || 0) + " out");
    const turnCost = typeof t.cost_usd === "number" ? t.cost_usd : null;
    if (turnCost != null) parts.push(fmtUSD(turnCost));
    let ctx = null;
    if (t.context_window) {
      ctx = { used: t.context_used || 0, window: t.context_window };
      parts.push("context " + Math.round((100 * ctx.used) / ctx.window) + "%");
    }
    sum.textContent = parts.join(" · ");
    this.place(it, sum, this.root);
    this.anchor = null;
    this.flush();
    for (const e of this.msgs.values()) for (const b of e.blocks) if (b) b.el.classList.remove("streaming");
    if (this.onTurn) this.onTurn({ cost: turnCost, total: t.total_cost_usd, ctx, error: !!t.is_error });
  }
}

function text(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
  return "";
}

function isAgent(name) {
  return name === "Agent" || name === "Task";
}

function toolLabel(name) {
  const m = /^mcp__(.+?)__(.+)$/.exec(name || "");
  return m ? m[2] + " (" + m[1] + ")" : name || "tool";
}

/** toolSummary is the one-line gist of a tool call. */
export function toolSummary(name, v) {
  if (!v || typeof v !== "object") return "";
  switch (name) {
    case "Bash":
      return v.description || v.command || "";
    case "Read":
    case "Write":
    case "Edit":
    case "MultiEdit":
    case "NotebookEdit":
      return v.file_path || v.notebook_path || "";
    case "Grep":
    case "Glob":
      return v.pattern || "";
    case "WebFetch":
      return v.url || "";
    case "WebSearch":
      return v.query || "";
    case "Agent":
    case "Task":
      return (v.subagent_type ? v.subagent_type + ": " : "") + (v.description || "");
    case "TodoWrite":
      return (v.todos || []).length + " items";
    case "AskUserQuestion":
      return (v.questions || []).map((q) => q.header || q.question).join(", ");
    case "ExitPlanMode":
      return "plan";
  }
  const first = Object.values(v).find((x) => typeof x === "string");
  return first ? first.slice(0, 80) : "";
}

/** toolInput renders a tool call's input: diffs, commands, or JSON. */
export function toolInput(name, v, raw, final) {
  const frag = document.createDocumentFragment();
  if (v && typeof v === "object") {
    switch (name) {
      case "Bash":
        if (v.command != null) {
          frag.appendChild(pre("cmd", "$ " + v.command));
          return frag;
        }
        break;
      case "Edit":
        if (v.old_string != null || v.new_string != null) {
          frag.appendChild(diffView(v.old_string || "", v.new_string || "", v.file_path));
          return frag;
        }
        break;
      case "MultiEdit":
        for (const ed of v.edits || []) frag.appendChild(diffView(ed.old_string || "", ed.new_string || "", v.file_path));
        return frag;
      case "Write":
        if (v.content != null) {
          frag.appendChild(diffView("", v.content, v.file_path));
          return frag;
        }
        break;
      case "ExitPlanMode":
        if (v.plan != null) {
          const p = el("div", "plan md");
          p.appendChild(markdown(v.plan));
          frag.appendChild(p);
          return frag;
        }
        break;
      case "AskUserQuestion": {
        const ul = el("ul", "asked");
        for (const q of v.questions || []) {
          const li = el("li", null, q.question || "");
          const opts = (q.options || []).map((o) => o.label).filter(Boolean);
          if (opts.length) li.appendChild(el("span", "muted", " — " + opts.join(" / ") + (q.multiSelect ? " (any)" : "")));
          ul.appendChild(li);
        }
        frag.appendChild(ul);
        return frag;
      }
      case "Agent":
      case "Task":
        if (v.prompt != null) {
          frag.appendChild(el("div", "note subprompt", v.prompt));
          return frag;
        }
        break;
      case "TodoWrite": {
        const ul = el("ul", "todos");
        for (const t of v.todos || []) {
          const li = el("li", "todo " + (t.status || ""), (t.status === "completed" ? "✓ " : t.status === "in_progress" ? "▸ " : "○ ") + (t.content || ""));
          ul.appendChild(li);
        }
        frag.appendChild(ul);
        return frag;
      }
    }
    if (Object.keys(v).length === 0 && !raw) return frag;
    frag.appendChild(pre("json", JSON.stringify(v, null, 2)));
    return frag;
  }
  if (raw) frag.appendChild(pre("json", raw));
  return frag;
}

/**
 * diffView shows the line diff of a into b, each line coloured as the
 * language of path (by its extension) when it is known: the old and new
 * texts are highlighted whole, so a line inside a block comment or a
 * string keeps its colour, and each diff line takes its own line's
 * colours from the side it comes from.
 */
export function diffView(a, b, path) {
  const box = pre("diff");
  const lang = languageOfPath(path || "");
  const split = (s) => (s === "" ? "" : s.replace(/\n$/, ""));
  const old = lang ? highlightLines(split(a), lang) : null;
  const neu = lang ? highlightLines(split(b), lang) : null;
  if (old && neu) box.classList.add("hljs");
  let i = 0; // the next line of a
  let j = 0; // the next line of b
  for (const [op, line] of diffLines(a, b)) {
    const cls = op === "+" ? "add" : op === "-" ? "del" : "ctx";
    const span = el("span", cls, op + " ");
    const colored = op === "+" ? neu && neu[j] : old && old[i];
    if (colored && old && neu) span.appendChild(colored);
    else span.appendChild(document.createTextNode(line));
    span.appendChild(document.createTextNode("\n"));
    if (op !== "+") i++;
    if (op !== "-") j++;
    box.appendChild(span);
  }
  return box;
}

function toolResultView(name, c, structured, input) {
  const frag = document.createDocumentFragment();
  if (isAgent(name)) {
    // The CLI appends a note for the model (agentId, usage): not for people.
    const parts = Array.isArray(c.content) ? c.content.filter((p) => !(p.type === "text" && /^agentId: /.test(p.text || ""))) : c.content;
    const t = text(parts);
    if (t) {
      const d = el("div", "md agent-result");
      d.appendChild(markdown(t));
      frag.appendChild(d);
    }
    return frag;
  }
  if (name === "AskUserQuestion" && structured && typeof structured === "object" && structured.answers && !c.is_error) {
    const dl = el("dl", "answers");
    for (const [q, a] of Object.entries(structured.answers)) {
      dl.appendChild(el("dt", null, q));
      dl.appendChild(el("dd", null, String(a)));
    }
    frag.appendChild(dl);
    return frag;
  }
  if (name === "Bash" && structured && typeof structured === "object" && !c.is_error) {
    if (structured.stdout) frag.appendChild(pre("out", structured.stdout));
    if (structured.stderr) frag.appendChild(pre("out stderr", structured.stderr));
    if (!structured.stdout && !structured.stderr) frag.appendChild(el("div", "muted", "(no output)"));
    if (structured.interrupted) frag.appendChild(el("div", "note interrupted", "interrupted"));
    return frag;
  }
  const parts = Array.isArray(c.content) ? c.content : [{ type: "text", text: typeof c.content === "string" ? c.content : JSON.stringify(c.content ?? "") }];
  for (const p of parts) {
    if (p.type === "text") {
      const t = p.text || "";
      if (t) frag.appendChild(pre("out" + (c.is_error ? " stderr" : ""), t.length > 20000 ? t.slice(0, 20000) + "\n… (" + (t.length - 20000) + " more characters)" : t));
    } else if (p.type === "image") {
      const img = image(p);
      if (img) frag.appendChild(img);
    }
  }
  return frag;
}

const imageTypes = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

/** image renders a base64 image block; other sources are not fetched. */
export function image(c) {
  const s = c.source || {};
  if (s.type === "base64" && imageTypes.has(s.media_type) && typeof s.data === "string" && /^[A-Za-z0-9+/=\s]*$/.test(s.data)) {
    const img = el("img", "image");
    img.alt = "image";
    img.src = "data:" + s.media_type + ";base64," + s.data.replace(/\s/g, "");
    return img;
  }
  return el("div", "note", "[image]");
}

/**
 * fmtUSD shows a cost so that a small one is not rounded away: cents
 * from a cent up, four decimals under a cent, "<$0.0001" below that.
 */
export function fmtUSD(usd) {
  if (!(usd > 0)) return "$0";
  if (usd >= 0.01) return "$" + usd.toFixed(2);
  if (usd >= 0.0001) return "$" + usd.toFixed(4);
  return "<$0.0001";
}

/**
 * modelLabel is a model id as a person reads it: "claude-opus-4-8[1m]"
 * is "Opus 4.8 · 1M", "claude-3-5-haiku-20241022" "Haiku 3.5", an alias
 * "sonnet" "Sonnet". Anything else is shown as it is.
 */
export function modelLabel(id) {
  if (!id) return "default";
  let rest = String(id);
  let tag = "";
  const t = /\[([^\]]*)\]$/.exec(rest);
  if (t) {
    tag = t[1].toUpperCase();
    rest = rest.slice(0, t.index);
  }
  rest = rest.replace(/^claude-/, "").replace(/-\d{8}$/, "");
  const parts = rest.split("-");
  const family = parts.filter((p) => /^[a-z]+$/i.test(p));
  const nums = parts.filter((p) => /^\d{1,2}$/.test(p));
  if (family.length !== 1 || family.length + nums.length !== parts.length || !/^(opus|sonnet|haiku)$/i.test(family[0])) return String(id);
  let label = family[0][0].toUpperCase() + family[0].slice(1).toLowerCase();
  if (nums.length) label += " " + nums.join(".");
  if (tag) label += " · " + tag;
  return label;
}

export function fmtTokens(n) {
  if (n >= 1e6) return (n / 1e6).toFixed(1) + "M";
  if (n >= 1e4) return Math.round(n / 1e3) + "k";
  if (n >= 1e3) return (n / 1e3).toFixed(1) + "k";
  return String(n);
}

// commandPrompt shows a slash command's prompt as it was typed ("/greet
// Ada"): the CLI echoes it as <command-name> and <command-args> tags.
function commandPrompt(t) {
  const name = /<command-name>([^<]*)<\/command-name>/.exec(t);
  if (!name) return t;
  const args = /<command-args>([^<]*)<\/command-args>/.exec(t)?.[1].trim();
  return args ? name[1] + " " + args : name[1];
}
