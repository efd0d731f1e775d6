// transcript.js: renders the CLI's stream-json messages as a transcript.
//
// Messages arrive as the CLI wrote them (one JSON object per stdout line).
// Assistant text grows token by token from stream_event deltas and is
// rendered as Markdown; each complete assistant line (one per content
// block, same message id) then replaces its block with the final one, so
// a transcript built from deltas and one built from complete lines end
// up the same. Tool calls are cards keyed by tool_use id: their input
// shows as it is typed, their result when the tool_result arrives, and a
// subagent's messages (parent_tool_use_id) nest inside its Agent/Task
// card. Nothing here uses innerHTML.

import { render as markdown } from "./md.js";
import { diffLines } from "./diff.js";
import { highlightLines, languageOfPath } from "./highlight.js";
import { el } from "./dom.js";

const interruptRe = /^\[Request interrupted by user( for tool use)?\]$/;

export class Transcript {
  /** @param {HTMLElement} root */
  constructor(root) {
    this.root = root;
    this.reset();
  }

  reset() {
    this.root.replaceChildren();
    this.msgs = new Map(); // message id -> {el, blocks, finals}
    this.tools = new Map(); // tool_use id -> card
    this.users = new Set(); // uuids of user lines shown
    this.anchor = null; // the current turn's first element
    this.firstPrompt = "";
    this.echoes = []; // prompt texts echoed since the last result
    this.streaming = null; // id of the main thread's streaming message
    this.dirty = new Set();
    this.timer = 0;
    this.model = "";
    this.lastCostUSD = 0;
    this.lastUsage = null; // usage of the last main-thread API message
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

  /** container returns where a message of the given thread goes. */
  container(parent) {
    if (parent) {
      const card = this.tools.get(parent);
      if (card) return card.children;
    }
    return this.root;
  }

  /** apply renders one CLI message. */
  apply(m) {
    if (!m || typeof m !== "object") return;
    switch (m.type) {
      case "stream_event":
        this.event(m);
        break;
      case "assistant":
        this.assistant(m);
        break;
      case "user":
        this.user(m);
        break;
      case "result":
        this.result(m);
        break;
      case "system":
        this.system(m);
        break;
    }
  }

  msg(id, parent, model) {
    let e = this.msgs.get(id);
    if (!e) {
      const div = el("div", "msg assistant");
      div.dataset.id = id || "";
      e = { el: div, blocks: [], finals: 0, parent };
      this.msgs.set(id, e);
      this.add(div, this.container(parent));
      if (model && model !== "<synthetic>") this.model = model;
    }
    return e;
  }

  event(m) {
    const ev = m.event || {};
    if (m.parent_tool_use_id) return; // the CLI streams nothing for subagents; be safe
    switch (ev.type) {
      case "message_start": {
        const id = ev.message?.id;
        this.streaming = id;
        this.msg(id, null, ev.message?.model);
        if (ev.message?.usage) this.lastUsage = ev.message.usage;
        break;
      }
      case "content_block_start": {
        const e = this.msgs.get(this.streaming);
        if (!e) return;
        if (e.blocks[ev.index]) return;
        e.blocks[ev.index] = this.block(e, ev.content_block || {}, true);
        break;
      }
      case "content_block_delta": {
        const e = this.msgs.get(this.streaming);
        const b = e?.blocks[ev.index];
        if (!b || b.final) return;
        const d = ev.delta || {};
        if (d.type === "text_delta") b.text += d.text || "";
        else if (d.type === "thinking_delta") b.text += d.thinking || "";
        else if (d.type === "input_json_delta") b.input += d.partial_json || "";
        else return;
        this.touch(b);
        break;
      }
      case "message_delta":
        if (ev.usage && this.lastUsage) this.lastUsage = { ...this.lastUsage, ...ev.usage };
        break;
    }
  }

  assistant(m) {
    const msg = m.message || {};
    const e = this.msg(msg.id, m.parent_tool_use_id || null, msg.model);
    if (!m.parent_tool_use_id && msg.usage) this.lastUsage = msg.usage;
    for (const c of msg.content || []) {
      let b = null;
      if (c.type === "tool_use" && this.tools.has(c.id)) b = this.tools.get(c.id).block;
      const idx = e.finals++;
      if (!b) b = e.blocks[idx];
      if (!b || b.type !== c.type) {
        b = this.block(e, c, false);
        if (!e.blocks[idx]) e.blocks[idx] = b;
      }
      b.final = true;
      if (c.type === "text") b.text = c.text || "";
      else if (c.type === "thinking") b.text = c.thinking || "";
      else if (c.type === "tool_use") b.inputValue = c.input;
      this.touch(b);
      this.flushBlock(b);
    }
    if (m.error) e.el.classList.add("error");
    if (msg.model === "<synthetic>") e.el.classList.add("synthetic");
  }

  // block creates the DOM of one content block.
  block(e, c, streaming) {
    const b = { type: c.type, text: "", input: "", inputValue: undefined, final: !streaming, el: null };
    switch (c.type) {
      case "text":
        b.el = el("div", "text md");
        b.text = c.text || "";
        break;
      case "thinking": {
        b.el = el("details", "thinking");
        b.el.appendChild(el("summary", null, "Thinking"));
        b.body = el("div", "thinking-body");
        b.el.appendChild(b.body);
        b.text = c.thinking || "";
        break;
      }
      case "redacted_thinking":
        b.el = el("div", "thinking redacted", "Thinking (redacted)");
        break;
      case "tool_use":
      case "server_tool_use":
      case "mcp_tool_use":
        this.toolCard(b, c, e.parent);
        break;
      default:
        b.el = el("div", "note", "[" + c.type + "]");
    }
    e.el.appendChild(b.el);
    if (streaming) b.el.classList.add("streaming");
    this.touch(b);
    return b;
  }

  toolCard(b, c, parent) {
    const card = el("details", "tool");
    card.open = true;
    card.dataset.tool = c.name || "";
    card.dataset.id = c.id || "";
    card.dataset.status = "running";
    const sum = el("summary");
    sum.appendChild(el("span", "tool-name", toolLabel(c.name)));
    b.summary = el("span", "tool-summary");
    sum.appendChild(b.summary);
    b.status = el("span", "tool-status", "running");
    sum.appendChild(b.status);
    card.appendChild(sum);
    b.inputEl = el("div", "tool-input");
    card.appendChild(b.inputEl);
    b.children = el("div", "tool-children");
    if (isAgent(c.name)) card.appendChild(b.children);
    b.resultEl = el("div", "tool-result");
    card.appendChild(b.resultEl);
    b.el = card;
    b.name = c.name || "";
    b.id = c.id;
    b.parent = parent;
    b.block = b;
    if (c.input && Object.keys(c.input).length) b.inputValue = c.input;
    this.tools.set(c.id, b);
  }

  // touch marks a block for re-rendering; renders are batched so a burst
  // of deltas costs one Markdown pass.
  touch(b) {
    this.dirty.add(b);
    if (!this.timer) this.timer = setTimeout(() => this.flush(), 30);
  }

  flush() {
    this.timer = 0;
    for (const b of this.dirty) this.flushBlock(b);
    this.dirty.clear();
  }

  flushBlock(b) {
    this.dirty.delete(b);
    if (b.final) b.el.classList.remove("streaming");
    switch (b.type) {
      case "text":
        b.el.replaceChildren(markdown(b.text));
        break;
      case "thinking":
        b.body.textContent = b.text;
        break;
      case "tool_use":
      case "server_tool_use":
      case "mcp_tool_use": {
        let v = b.inputValue;
        if (v === undefined && b.input) v = partialJSON(b.input);
        b.summary.textContent = toolSummary(b.name, v || {});
        b.inputEl.replaceChildren(toolInput(b.name, v, b.input, b.final));
        break;
      }
    }
  }

  user(m) {
    let pending = null;
    if (m.uuid && this.users.has(m.uuid)) {
      // The echo of a prompt shown when sent: it now has its images too.
      pending = this.root.querySelector(`.msg.user.pending[data-uuid="${CSS.escape(m.uuid)}"]`);
      if (!pending) return;
    }
    if (m.uuid) this.users.add(m.uuid);
    const msg = m.message || {};
    const content = typeof msg.content === "string" ? [{ type: "text", text: msg.content }] : msg.content || [];
    const parent = m.parent_tool_use_id || null;
    const bubble = el("div", "msg user");
    for (const c of content) {
      if (c.type === "tool_result") {
        this.toolResult(c, m.tool_use_result);
        continue;
      }
      if (c.type === "text") {
        const t = c.text || "";
        const local = /^<local-command-stdout>([\s\S]*)<\/local-command-stdout>$/.exec(t.trim());
        if (local) {
          this.container(parent).appendChild(el("div", "note", local[1]));
          continue;
        }
        if (interruptRe.test(t.trim())) {
          this.container(parent).appendChild(el("div", "note interrupted", "Interrupted"));
          continue;
        }
        // A subagent's prompt is its Agent call's input, shown there.
        if (parent && this.tools.get(parent)?.inputValue?.prompt === t) continue;
        if (m.isSynthetic || parent) {
          const n = el("div", parent ? "note subprompt" : "note", t);
          this.container(parent).appendChild(n);
          continue;
        }
        // The CLI echoes the first prompt queued during a turn alone,
        // then all of them merged: show each once.
        // (2.1.197 sends them as blocks, 2.1.330 as one text joined by
        // blank lines.)
        let shown = t;
        if (m.isReplay) {
          for (let i = 0; i < this.echoes.length; i++) {
            const e = this.echoes[i];
            if (shown === e || (shown.startsWith(e) && /^\s*\n/.test(shown.slice(e.length)))) {
              shown = shown.slice(e.length).trim();
              this.echoes.splice(i--, 1);
            }
          }
          if (!shown) continue;
          this.echoes.push(shown);
        }
        bubble.appendChild(el("div", "user-text", shown));
        if (!this.firstPrompt && !parent) this.firstPrompt = shown;
      } else if (c.type === "image") {
        const img = image(c);
        if (img) bubble.appendChild(img);
      }
    }
    if (pending) {
      pending.classList.remove("pending");
      if (bubble.childNodes.length) pending.replaceChildren(...bubble.childNodes);
      return;
    }
    if (bubble.childNodes.length) {
      if (m.uuid) bubble.dataset.uuid = m.uuid;
      // An echoed prompt goes before the output of the turn it started.
      if (m.isReplay && !parent && this.anchor && this.anchor.parentNode === this.root) this.root.insertBefore(bubble, this.anchor);
      else this.container(parent).appendChild(bubble);
    }
  }

  toolResult(c, structured) {
    const b = this.tools.get(c.tool_use_id);
    if (!b) return;
    const status = c.is_error ? (b.denied || /denied|rejected|doesn't want/i.test(text(c.content)) ? "denied" : "error") : "done";
    b.el.dataset.status = status;
    b.status.textContent = status;
    b.resultEl.replaceChildren(toolResultView(b.name, c, structured, b.inputValue));
    if (isAgent(b.name) && !c.is_error) b.el.open = false;
  }

  /** awaiting marks a tool call that waits for a person's approval. */
  awaiting(toolUseID, waiting, question = false) {
    const b = this.tools.get(toolUseID);
    if (!b || b.el.dataset.status !== (waiting ? "running" : "approval")) return;
    b.el.dataset.status = waiting ? "approval" : "running";
    b.status.textContent = waiting ? (question ? "waits for your answer" : "needs approval") : "running";
  }

  /** answeredBy notes on a tool call's card who allowed or denied it (team servers). */
  answeredBy(toolUseID, outcome, name) {
    const b = this.tools.get(toolUseID);
    if (!b || !name) return;
    let n = b.el.querySelector(":scope > summary .tool-by");
    if (!n) {
      n = el("span", "tool-by");
      b.status.before(n);
    }
    n.textContent = (outcome === "denied" ? "denied by " : outcome === "answered" ? "answered by " : "allowed by ") + name;
  }

  /** denied marks a tool call a person refused, so its card says so. */
  denied(toolUseID) {
    const b = this.tools.get(toolUseID);
    if (b) b.denied = true;
  }

  result(m) {
    const sum = el("div", "turn-end" + (m.is_error ? " error" : ""));
    const parts = [];
    if (m.is_error) {
      const why = m.terminal_reason === "aborted_streaming" || m.terminal_reason === "aborted_tools" ? "stopped" : m.result || (m.errors || []).join("; ") || m.subtype;
      parts.push(why);
    }
    if (m.duration_ms != null) parts.push((m.duration_ms / 1000).toFixed(1) + " s");
    const u = m.usage || {};
    // A stopped turn's result counts nothing (0 in, 0 out, $0): the CLI
    // dropped the figures, the tokens were spent all the same. Say nothing
    // rather than zero.
    const dropped = m.is_error && !u.input_tokens && !u.output_tokens && !u.cache_read_input_tokens && !u.cache_creation_input_tokens;
    if (u.input_tokens != null && !dropped) {
      parts.push(fmtTokens((u.input_tokens || 0) + (u.cache_read_input_tokens || 0) + (u.cache_creation_input_tokens || 0)) + " in · " + fmtTokens(u.output_tokens || 0) + " out");
    }
    let turnCost = null;
    // An interrupted turn's result reports 0 in all: that is no cost
    // known, not the session's total falling to nothing.
    if (typeof m.total_cost_usd === "number" && !(m.total_cost_usd === 0 && m.is_error)) {
      // The total is the CLI process's; a restarted CLI counts anew.
      turnCost = m.total_cost_usd >= this.lastCostUSD ? m.total_cost_usd - this.lastCostUSD : m.total_cost_usd;
      this.lastCostUSD = m.total_cost_usd;
      parts.push(fmtUSD(turnCost));
    }
    let ctx = null;
    const mu = m.modelUsage || {};
    const window = Object.values(mu).reduce((a, v) => Math.max(a, v.contextWindow || 0), 0);
    if (window && this.lastUsage) {
      const used = (this.lastUsage.input_tokens || 0) + (this.lastUsage.cache_read_input_tokens || 0) + (this.lastUsage.cache_creation_input_tokens || 0) + (this.lastUsage.output_tokens || 0);
      ctx = { used, window };
      parts.push("context " + Math.round((100 * used) / window) + "%");
    }
    sum.textContent = parts.join(" · ");
    this.root.appendChild(sum);
    this.anchor = null;
    this.echoes = [];
    for (const e of this.msgs.values()) for (const b of e.blocks) if (b) b.el.classList.remove("streaming");
    this.streaming = null;
    if (this.onTurn) this.onTurn({ cost: turnCost, total: m.total_cost_usd, ctx, error: m.is_error });
  }

  system(m) {
    switch (m.subtype) {
      case "init":
        this.anchor = null; // a turn begins
        if (m.model && m.model !== this.model) {
          this.model = m.model;
        }
        break;
      case "api_retry":
        this.root.appendChild(el("div", "note warn", `API retry ${m.attempt}/${m.max_retries}: ${m.error || m.error_status || ""}`));
        break;
      case "compact_boundary":
        this.root.appendChild(el("div", "note", "Conversation compacted"));
        break;
      case "notification":
        if (m.text) this.root.appendChild(el("div", "note", m.text));
        break;
    }
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
          frag.appendChild(el("pre", "cmd", "$ " + v.command));
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
    frag.appendChild(el("pre", "json", JSON.stringify(v, null, 2)));
    return frag;
  }
  if (raw) frag.appendChild(el("pre", "json", raw));
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
  const pre = el("pre", "diff");
  const lang = languageOfPath(path || "");
  const split = (s) => (s === "" ? "" : s.replace(/\n$/, ""));
  const old = lang ? highlightLines(split(a), lang) : null;
  const neu = lang ? highlightLines(split(b), lang) : null;
  if (old && neu) pre.classList.add("hljs");
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
    pre.appendChild(span);
  }
  return pre;
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
    if (structured.stdout) frag.appendChild(el("pre", "out", structured.stdout));
    if (structured.stderr) frag.appendChild(el("pre", "out stderr", structured.stderr));
    if (!structured.stdout && !structured.stderr) frag.appendChild(el("div", "muted", "(no output)"));
    if (structured.interrupted) frag.appendChild(el("div", "note interrupted", "interrupted"));
    return frag;
  }
  const parts = Array.isArray(c.content) ? c.content : [{ type: "text", text: typeof c.content === "string" ? c.content : JSON.stringify(c.content ?? "") }];
  for (const p of parts) {
    if (p.type === "text") {
      const t = p.text || "";
      if (t) frag.appendChild(el("pre", "out" + (c.is_error ? " stderr" : ""), t.length > 20000 ? t.slice(0, 20000) + "\n… (" + (t.length - 20000) + " more characters)" : t));
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

/** partialJSON parses JSON typed so far, closing what is still open. */
export function partialJSON(s) {
  try {
    return JSON.parse(s);
  } catch {
    // complete it below
  }
  const stack = [];
  let inStr = false;
  let esc = false;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if (inStr) {
      if (esc) esc = false;
      else if (ch === "\\") esc = true;
      else if (ch === '"') inStr = false;
      continue;
    }
    if (ch === '"') inStr = true;
    else if (ch === "{" || ch === "[") stack.push(ch === "{" ? "}" : "]");
    else if (ch === "}" || ch === "]") stack.pop();
  }
  let t = s;
  if (inStr) {
    if (esc) t = t.slice(0, -1);
    t += '"';
  }
  // Drop a dangling key, colon or comma.
  for (let tries = 0; tries < 4; tries++) {
    try {
      return JSON.parse(t + stack.slice().reverse().join(""));
    } catch {
      t = t.replace(/(,\s*"(?:[^"\\]|\\.)*"\s*:?\s*|,\s*|:\s*|"(?:[^"\\]|\\.)*"\s*:\s*[^,{}\[\]]*)$/, "");
    }
  }
  return undefined;
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
