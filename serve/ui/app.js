// app.js: the Tether serve UI.
//
// One WebSocket (conn.js) carries everything. The page subscribes to the
// open session's journal with the last sequence number it applied, so a
// reconnect resumes exactly after it: no event lost, none applied twice
// (an event at or below lastSeq is ignored). When the server answers
// with a snapshot instead (we were too far behind, or the page is new),
// the view is rebuilt from it and continues from its seq.
//
// Where things are: what the page knows lives in stores (store.js: the
// sessions list, and one store per open session that applies its
// snapshot and events); panels subscribe to them: the list (sessions.js),
// the approvals (approvalpanel.js, cards from approvals.js), the queued
// prompts (deliverypanel.js), the head and cost line (here). The
// transcript (transcript.js) and the dialogs are still driven from here;
// proto.js speaks the protocol, team.js the team's pages, dom.js has the
// DOM helpers.

import { Conn } from "./conn.js";
import { Transcript, fmtTokens, fmtUSD, modelLabel } from "./transcript.js";
import { ApprovalPanel } from "./approvalpanel.js";
import * as proto from "./proto.js";
import * as tm from "./team.js";
import { SessionsStore, SessionStore } from "./store.js";
import { SessionList } from "./sessions.js";
import { SlashMenu } from "./slashmenu.js";
import { DeliveryPanel } from "./deliverypanel.js";
import { ChangesPanel } from "./changespanel.js";
import { TasksPanel } from "./taskspanel.js";
import { WorktreePanel } from "./worktreepanel.js";
import { el } from "./dom.js";
import * as notify from "./notify.js";

const $ = (id) => document.getElementById(id);

// ---- theme ----------------------------------------------------------------

function applyTheme(t) {
  if (t === "light" || t === "dark") document.documentElement.dataset.theme = t;
  else delete document.documentElement.dataset.theme;
}
applyTheme(localStorage.getItem("tether.theme"));
$("theme").onclick = () => {
  const dark = document.documentElement.dataset.theme ? document.documentElement.dataset.theme === "dark" : matchMedia("(prefers-color-scheme: dark)").matches;
  const t = dark ? "light" : "dark";
  localStorage.setItem("tether.theme", t);
  applyTheme(t);
};

// ---- state -----------------------------------------------------------------

const stateWords = {
  starting: "starting",
  ready: "ready",
  requesting: "requesting",
  thinking: "thinking",
  streaming: "writing",
  running_tool: "running",
  awaiting_approval: "needs approval",
  awaiting_answer: "question for you",
  interrupting: "stopping",
  idle: "idle",
  error: "error",
  disconnected: "disconnected",
  closed: "closed",
  asleep: "asleep",
  waking: "waking",
};
const busyStates = new Set(["requesting", "thinking", "streaming", "running_tool", "awaiting_approval", "awaiting_answer", "interrupting"]);

const app = {
  sessions: new SessionsStore(), // id -> SessionInfo (+ live fields)
  intros: new Map(), // id -> a note for the top of its transcript (resumed, forked)
  current: null, // id of the open session
  view: null, // the open session's view state
  defaultCwd: "", // where a session without a cwd starts (the hello frame)
  roomWaits: new Map(), // id -> its commands that may wait for room to wake it (roomWait)
};

function badge(state, tool) {
  const b = el("span", "badge");
  setBadge(b, state, tool);
  return b;
}

function setBadge(b, state, tool) {
  b.dataset.state = state || "";
  let w = stateWords[state] || state || "";
  if ((state === "running_tool" || state === "streaming" || state === "awaiting_approval") && tool) w += " · " + tool;
  b.textContent = w;
  b.title = state || "";
}

function ago(t) {
  if (!t) return "";
  const ms = Date.now() - new Date(t).getTime();
  if (!(ms >= 0)) return "just now";
  const s = Math.floor(ms / 1000);
  if (s < 5) return "just now";
  if (s < 60) return s + "s ago";
  const m = Math.floor(s / 60);
  if (m < 60) return m + "m ago";
  const h = Math.floor(m / 60);
  if (h < 48) return h + "h ago";
  return Math.floor(h / 24) + "d ago";
}

// ---- connection ----------------------------------------------------------------

const conn = new Conn(proto.socketURL(), {
  onStatus: showConn,
  onOpen: () => {
    notify.connected(conn);
    refreshList();
    if (app.current) subscribe(app.current);
  },
  onMessage: (m) => proto.dispatch(m, handlers),
  onRefused: async () => {
    // A team server says who it wants (api/me); the token mode asks
    // whether its cookie is still good.
    const d = await tm.detect();
    if (d !== "token") return d === "signed-out";
    return (await proto.signedIn()) === false;
  },
});

let connTimer = 0;
function showConn(s, info) {
  const c = $("conn");
  clearInterval(connTimer);
  c.className = "conn " + s;
  c.onclick = null;
  c.title = "";
  c.style.cursor = "";
  document.body.dataset.conn = s;
  if (s === "live") c.textContent = "live";
  else if (s === "connecting") c.textContent = "connecting…";
  else if (s === "down" && tm.team.on) {
    c.textContent = "signed out";
    if (document.body.dataset.auth !== "signin") tm.showSignIn(info?.closed ? "Your sign-in ended: you signed out in another tab, or it was revoked." : "Your sign-in has ended. Sign in again to continue.");
  } else if (s === "down") {
    c.textContent = "signed out — open the link tether serve printed";
    c.title = "The link carries the login token; the server prints it when it starts.";
    c.style.cursor = "pointer";
    c.onclick = () => conn.retryNow();
  } else if (s === "retry") {
    const tick = () => {
      const left = Math.max(0, Math.ceil((info.at - Date.now()) / 1000));
      c.textContent = "offline — retry in " + left + "s";
      c.title = "The connection is down; it is retried by itself. Click to retry now.";
    };
    tick();
    connTimer = setInterval(tick, 1000);
    c.style.cursor = "pointer";
    c.onclick = () => conn.retryNow();
  }
  // Starting or resuming needs the server: signed out, the buttons are
  // hidden (CSS, body[data-conn=down]) and the sign-in hint shown;
  // offline they wait, disabled.
  for (const id of ["new-btn", "resume-btn", "welcome-new", "welcome-resume"]) $(id).disabled = s !== "live";
  updateComposer();
}

const handlers = {
  hello(m) {
    app.defaultCwd = m.default_cwd || "";
    if (m.me) tm.setMe(m.me);
  },
  error(m) {
    // A team server ends a connection whose sign-in was revoked.
    if (tm.team.on && (m.error?.code === "unauthorized" || m.error?.code === "unauthenticated")) recheckSignIn();
  },
  sessions(list) {
    app.listed = (app.listed || 0) + 1; // lists received (tests wait on it)
    app.sessions.replace(list);
    if (app.current && !app.sessions.has(app.current) && app.view && !app.view.ended) {
      // Gone from the server (closed elsewhere).
      app.view.ended = true;
      renderHead();
    }
  },
  session(info) {
    if (!info || !info.id) return;
    const old = app.sessions.update(info);
    if (info.id === app.current) {
      renderHead();
      if (old.id) accessChanged(tm.access(old), tm.access(app.sessions.get(info.id)));
    }
  },
  removed(id) {
    app.sessions.remove(id);
    if (id === app.current && app.view && !app.view.ended && tm.team.on) {
      // No longer ours to see (unshared) or closed.
      app.view.ended = true;
      renderHead();
    } else if (id === app.current) renderHead(); // closed: nothing left to resume
  },
  snapshot(id, snap) {
    if (id !== app.current || !app.view) return;
    loadSnapshot(snap);
  },
  event(id, ev) {
    app.sessions.applyEvent(id, ev, ev.kind === "state" || ev.kind === "cost" || ev.kind === "tasks" ? proto.json(ev.data) : null);
    if (id !== app.current || !app.view) return;
    applyEvent(ev);
  },
  resync(id) {
    // The server could not resume us; ask for a snapshot.
    if (id === app.current) subscribe(id, true);
  },
};

// recheckSignIn asks the server whether we are still signed in; if not,
// the connection stops and the sign-in page shows.
async function recheckSignIn() {
  if ((await tm.detect()) === "signed-out") {
    conn.close();
    tm.showSignIn("Your sign-in has ended. Sign in again to continue.");
  }
}

async function refreshList() {
  try {
    handlers.sessions(await proto.list(conn));
  } catch (e) {
    console.warn("tether: list:", e.message);
  }
}

// ---- sessions list -------------------------------------------------------------------

function sessionTitle(s) {
  const first = app.view && app.view.id === s.id ? app.view.transcript.firstPrompt : "";
  return s.title || s.first_prompt || first || s.last_prompt || s.cwd?.split("/").filter(Boolean).pop() || s.id.slice(0, 8);
}

// The list panel (sessions.js) renders app.sessions as it changes;
// renderList renders it again for what the store does not hold: which
// session is open, its title from the transcript, who we are.
const sessionList = new SessionList($("sessions"), $("no-sessions"), app.sessions, {
  groups: tm.groups,
  key: (s) => JSON.stringify([s, s.id === app.current, sessionTitle(s), tm.team.on, tm.team.me?.sub || "", tm.access(s)]),
  fill: fillItem,
  title: sessionTitle,
  filter: $("session-filter"),
});

function renderList() {
  sessionList.render();
}

// The filter narrows the list as one types. Enter opens the first session
// left, the down arrow moves to it, Esc empties the filter (and then leaves
// it); none of these reach the page's own keys (Esc would stop a turn).
$("session-filter").addEventListener("input", (e) => sessionList.filter(e.target.value));
$("session-filter").addEventListener("keydown", (e) => {
  const f = e.target;
  const first = $("sessions").querySelector("li[data-id]");
  if (e.key === "Escape") {
    if (f.value) {
      f.value = "";
      sessionList.filter("");
    } else f.blur();
  } else if (e.key === "Enter" && first) openSession(first.dataset.id);
  else if (e.key === "ArrowDown" && first) first.focus();
  else return;
  e.preventDefault();
  e.stopPropagation();
});

// The worktree panel (worktreepanel.js): merge, keep or discard the work
// of a session started in a worktree.
const worktreePanel = new WorktreePanel($("worktree"), {
  sessions: app.sessions,
  current: () => app.current,
  canOwn: tm.canOwn,
  live: () => conn.live,
  command: (id, command) => conn.request({ type: "do", session: id, command }),
});

// fillItem fills a list line (its element stays: the focus with it).
function fillItem(li, s) {
  li.replaceChildren();
  li.dataset.id = s.id;
  li.tabIndex = 0;
  li.className = s.id === app.current ? "current" : "";
  const r1 = el("div", "row1");
  r1.appendChild(el("span", "name", sessionTitle(s)));
  li.title = (s.title || "") + (s.last_prompt ? "\nlast prompt: " + s.last_prompt : "");
  li.appendChild(r1);
  const r2 = el("div", "row2");
  r2.appendChild(badge(s.ended ? "closed" : s.state, s.tool));
  // Work that outlives its turn: "idle" alone would say nothing runs.
  if (s.tasks > 0 && !s.ended) {
    const bg = el("span", "bg", s.tasks + " in the background");
    bg.title = s.tasks === 1 ? "A background task runs: open the session to see or stop it" : "Background tasks run: open the session to see or stop them";
    r2.appendChild(bg);
  }
  r2.appendChild(el("span", "spacer"));
  const t = el("span", "ago", ago(s.last_event));
  t.dataset.t = s.last_event || "";
  r2.appendChild(t);
  const usd = s.cost?.usd ?? s.cost_usd;
  if (usd > 0) r1.appendChild(el("span", "usd", fmtUSD(usd))).title = "$" + usd;
  li.appendChild(r2);
  if (s.cwd) {
    // Long paths keep their end in view: the ellipsis eats the start.
    const w = el("div", "where");
    w.appendChild(el("bdi", null, s.cwd));
    li.appendChild(w);
  }
  if (tm.team.on && !tm.mine(s)) {
    // Someone else's: whose, and what we may do there.
    const by = el("div", "by");
    by.appendChild(el("span", "avatar small", tm.initials(s.person_name || s.person || "?")));
    by.appendChild(el("span", "owner", s.person_name || s.person || "someone"));
    const acc = tm.access(s);
    if (acc !== "owner") by.appendChild(el("span", "access " + acc, acc));
    li.appendChild(by);
  }
  li.onclick = () => openSession(s.id);
  li.onkeydown = (e) => {
    if (e.key === "Enter") openSession(s.id);
  };
}

// Times since the last event tick every second.
setInterval(() => {
  for (const t of document.querySelectorAll(".sessions .ago")) t.textContent = ago(t.dataset.t);
  if (app.view) renderSince();
}, 1000);

// ---- one session ----------------------------------------------------------------

function newView(id) {
  const store = new SessionStore(id);
  const v = {
    id,
    store,
    // The highest cumulative figures seen: a stopped turn's result counts
    // nothing, and the host's running total falls back by the turn's
    // tokens; what was spent stays spent.
    costSeen: { usd: 0, in: 0, out: 0 },
    turn: null,
    stopClicks: 0,
    transcript: new Transcript($("transcript")),
  };
  v.transcript.onTurn = (t) => {
    v.turn = t;
    renderCost();
  };
  // The approvals panel: the cards, and the records answered ones leave.
  v.panel = new ApprovalPanel($("approvals"), {
    store,
    transcript: v.transcript,
    answer: (approval, reply) => proto.answer(conn, id, approval, reply),
    canAct: () => tm.canAct(app.sessions.get(id)),
    busy: () => busyStates.has(store.state.state),
    typing: isTyping,
    prompt: $("prompt"),
    scroll: () => scrollDown(),
    asked: () => app.asked++,
    shown: () => app.view === v,
  });
  v.approvals = v.panel.pending; // id -> {info, el} (the keys; tests read it)
  // The queued prompts.
  v.prompts = new DeliveryPanel($("deliveries"), { cancel: (uuid) => proto.cancel(conn, id, uuid), shown: () => app.view === v });
  v.deliveries = v.prompts.items; // uuid -> DeliveryInfo
  // The background tasks, each with its Stop.
  v.tasks = new TasksPanel($("tasks"), {
    store,
    stop: (taskID) => proto.stopTask(conn, id, taskID),
    canAct: () => tm.canAct(app.sessions.get(id)),
    shown: () => app.view === v,
  });
  // The files it changed.
  v.changes = new ChangesPanel({
    store,
    fetch: () => proto.changes(conn, id),
    revert: (paths) => proto.revertChanges(conn, id, paths),
    canAct: () => tm.canAct(app.sessions.get(id)),
    shown: () => app.view === v,
  });
  // The session's facts are the store's; the view reads them through.
  for (const k of ["lastSeq", "lastEvent", "state", "model", "mode", "cwd", "cost", "ended"]) {
    Object.defineProperty(v, k, { get: () => store[k], set: (x) => (store[k] = x), enumerable: true });
  }
  // The head (title, state, controls) and the cost line follow the store.
  store.subscribe((changed) => {
    if (app.view !== v) return;
    if (changed.has("cost") || changed.has("state")) renderCost();
    if (changed.has("state") || changed.has("model") || changed.has("mode") || changed.has("cwd") || changed.has("ended")) renderHead();
    if (changed.has("suggestion") || changed.has("state") || changed.has("ended")) renderSuggestion();
    if (changed.has("tasks") || changed.has("snapshot")) v.transcript.background(new Map(store.tasks.filter((t) => t.tool_use_id).map((t) => [t.tool_use_id, !!t.ambient])));
  });
  return v;
}

function openSession(id, push = true) {
  if (app.current === id && app.view) return;
  if (app.current && conn.live) proto.unsubscribe(conn, app.current);
  app.current = id;
  app.view = newView(id);
  $("welcome").hidden = true;
  $("audit").hidden = true;
  $("session").hidden = false;
  $("approvals").replaceChildren();
  $("deliveries").replaceChildren();
  $("tasks").replaceChildren();
  $("tasks").hidden = true;
  document.body.classList.remove("nav-open");
  if (push && location.hash !== "#s=" + id) history.replaceState(null, "", "#s=" + id);
  renderList();
  renderHead();
  renderSuggestion();
  if (conn.live) subscribe(id);
  $("prompt").focus();
}

function subscribe(id, fresh = false) {
  const v = app.view;
  if (!v || v.id !== id) return;
  // A page with nothing yet asks for a snapshot: cheaper than replaying
  // the whole journal, and the same view.
  proto.subscribe(conn, id, fresh ? 0 : v.lastSeq, fresh || v.lastSeq === 0).catch((e) => {
    v.transcript.root.appendChild(el("div", "note warn", "Could not follow this session: " + e.message));
  });
}

function loadSnapshot(snap) {
  const v = app.view;
  app.snapshots = (app.snapshots || 0) + 1;
  v.transcript.reset();
  v.transcript.onTurn = (t) => {
    v.turn = t;
    renderCost();
  };
  v.store.load(snap);
  const intro = app.intros.get(v.id);
  if (intro) v.transcript.root.appendChild(el("div", "note intro", intro));
  // A session resumed or forked from disk: its earlier conversation,
  // read from the CLI's session file, rendered like live messages.
  const hist = snap.history;
  if (hist && (hist.items || []).length) {
    if (hist.dropped) v.transcript.root.appendChild(el("div", "note", hist.dropped + " older messages are not shown"));
    for (const it of hist.items || []) v.transcript.apply(it);
    v.transcript.flush();
    v.transcript.root.appendChild(el("div", "note history-end", "Earlier conversation above, from the CLI's session file; this session continues below."));
  }
  if (snap.dropped) v.transcript.root.appendChild(el("div", "note", snap.dropped + " earlier messages are no longer kept"));
  for (const it of snap.items || []) v.transcript.apply(it);
  v.transcript.flush();
  v.panel.reset();
  // Approvals answered before we looked (also in the conversation a
  // resumed session continues): who answered, on their calls.
  v.panel.answered([...(hist?.resolved || []), ...(snap.resolved || [])]);
  for (const a of snap.approvals || []) v.panel.add(a);
  v.prompts.clear();
  // A running turn whose prompt the CLI has not echoed yet (it does so
  // only before the turn's first assistant line) was started by the
  // oldest queued prompt: show it as the turn's, not as waiting.
  const open = (snap.deliveries || []).filter((d) => !v.transcript.users.has(d.uuid));
  if (busyStates.has(v.state.state) && !open.some((d) => d.status === "accepted")) {
    const first = open.find((d) => d.status === "queued");
    if (first) v.transcript.prompt(first.uuid, first.text || "", true);
  }
  for (const d of open) if (!v.transcript.users.has(d.uuid)) v.deliveries.set(d.uuid, d);
  if (snap.ended) v.transcript.root.appendChild(el("div", "note", "Session closed" + (snap.error ? ": " + snap.error : "")));
  v.prompts.render();
  showRoomWait();
  renderHead();
  renderCost();
  scrollDown(true);
}

function applyEvent(ev) {
  const v = app.view;
  const stick = nearBottom();
  const d = v.store.apply(ev, ev.kind === "items" ? ev.items : proto.json(ev.data));
  if (d === "dup") return; // already applied
  if (d === "gap") {
    // A gap: never render past it; start over from a snapshot.
    console.warn("tether: gap", v.lastSeq, ev.seq);
    subscribe(v.id, true);
    return;
  }
  switch (ev.kind) {
    case "state":
      // A new CLI, or the end of a turn (one that ran /reload-skills
      // changed them): its commands may differ. Asked for again when the
      // menu next opens.
      if (d.state === "ready" || d.state === "idle") slashMenu.forget(v.id);
      if (busyStates.has(d.state)) v.turnPending = false;
      if (!busyStates.has(d.state)) {
        v.stopClicks = 0;
        updateComposer();
      }
      break;
    case "items":
      for (const it of d) v.transcript.apply(it);
      break;
    case "message":
      // A server older than this page (one of a cluster being upgraded)
      // sends the CLI's lines, which this page no longer reads: its own
      // page does.
      if (!v.oldServer) {
        v.oldServer = true;
        v.transcript.root.appendChild(el("div", "note warn", "This server is older than this page: reload the page to see the conversation."));
      }
      break;
    case "approval":
      v.panel.add(d);
      break;
    case "approval_resolved":
      v.panel.resolve(d);
      break;
    case "delivery":
      // A prompt sent while the session waits starts the next turn: it
      // belongs in the transcript at once. One sent during a turn waits
      // in the queue below until the CLI takes it.
      if (d.status === "queued" && !v.deliveries.has(d.uuid) && !busyStates.has(v.state.state) && !v.turnPending) {
        v.transcript.prompt(d.uuid, d.text || "");
        v.turnPending = true;
        renderHead();
        renderList();
        break;
      }
      if (v.transcript.users.has(d.uuid) && !v.deliveries.has(d.uuid)) break; // the turn's own prompt
      if (v.deliveries.get(d.uuid)?.merged) d.merged = true;
      v.deliveries.set(d.uuid, d);
      v.prompts.render();
      break;
    case "cost":
      break; // the store has it; the cost line follows
    case "error":
      v.transcript.root.appendChild(el("div", "note warn", d.error || "error"));
      break;
    case "closed":
      v.transcript.root.appendChild(el("div", "note", "Session closed" + (d && d.error ? ": " + d.error : "")));
      break;
  }
  if (stick) scrollDown();
}

function nearBottom() {
  const t = $("transcript");
  return t.scrollHeight - t.scrollTop - t.clientHeight < 80;
}
let scrollPending = false;
function scrollDown(now) {
  const t = $("transcript");
  if (now) {
    t.scrollTop = t.scrollHeight;
    return;
  }
  if (scrollPending) return;
  scrollPending = true;
  setTimeout(() => {
    scrollPending = false;
    t.scrollTop = t.scrollHeight;
  }, 40);
}

function renderHead() {
  const v = app.view;
  worktreePanel.render();
  if (!v) return;
  const s = app.sessions.get(v.id) || {};
  $("s-title").textContent = sessionTitle({ ...s, id: v.id });
  setBadge($("s-state"), v.state.state || s.state, v.state.tool);
  $("s-cwd").textContent = v.cwd || s.cwd || "";
  $("s-cwd").title = v.cwd || s.cwd || "";
  const model = v.model || s.model || "";
  const ms = $("s-model");
  if (model && ![...ms.options].some((o) => o.value === model)) {
    const o = ms.appendChild(el("option", null, modelLabel(model)));
    o.value = o.title = model;
  }
  ms.value = model;
  ms.title = model ? "Model: " + model : "The CLI's default model";
  const mode = v.mode || s.permission_mode || "default";
  const sel = $("s-mode");
  if (![...sel.options].some((o) => o.value === mode)) sel.appendChild(el("option", null, mode)).value = mode;
  sel.value = mode;
  const owner = $("s-owner");
  owner.hidden = !tm.team.on || tm.mine(s);
  if (!owner.hidden) {
    const acc = tm.access(s);
    owner.textContent = (s.person_name || s.person || "someone") + "’s" + (acc === "owner" ? "" : " · you are a " + acc);
    owner.dataset.access = acc;
  }
  renderSince();
  updateComposer();
  // A tab in the background shows in its title when a person is needed.
  const st = v.state.state || s.state;
  const waiting = st === "awaiting_approval" || st === "awaiting_answer";
  document.title = (waiting ? "(!) " : "") + $("s-title").textContent + " — Tether";
}

function renderSince() {
  const v = app.view;
  const t = v.lastEvent || v.state.since;
  $("s-since").textContent = t ? ago(t) : "";
}

function renderCost() {
  const v = app.view;
  if (!v) return;
  const parts = [];
  const c = v.cost;
  if (c) {
    const tk = c.tokens || {};
    const seen = v.costSeen;
    seen.usd = Math.max(seen.usd, c.usd || 0);
    seen.in = Math.max(seen.in, (tk.input || 0) + (tk.cache_read || 0) + (tk.cache_creation || 0));
    seen.out = Math.max(seen.out, tk.output || 0);
    parts.push("session " + fmtUSD(seen.usd), fmtTokens(seen.in) + " in · " + fmtTokens(seen.out) + " out");
    const run = c.turn;
    if (run && run.messages && busyStates.has(v.state.state)) {
      const t = run.tokens || {};
      parts.push("this turn " + fmtTokens((t.input || 0) + (t.cache_read || 0) + (t.cache_creation || 0)) + " in · " + fmtTokens(t.output || 0) + " out");
    } else if (c.last_turn && c.turns && c.last_turn.usd > 0) {
      parts.push("last turn " + fmtUSD(c.last_turn.usd));
    }
  }
  if (v.turn && v.turn.ctx) parts.push("context " + Math.round((100 * v.turn.ctx.used) / v.turn.ctx.window) + "% of " + fmtTokens(v.turn.ctx.window));
  // Each phrase keeps together; the line breaks only between them.
  const box = $("s-cost");
  box.replaceChildren();
  parts.forEach((p, i) => {
    if (i) box.appendChild(document.createTextNode(" · "));
    box.appendChild(el("span", "part", p));
  });
}

function updateComposer() {
  const v = app.view;
  const busy = v && busyStates.has(v.state.state);
  const stop = $("stop-btn");
  stop.disabled = !v || !busy || v.ended || !conn.live;
  if (v && v.stopClicks > 0 && busy) {
    stop.textContent = "Force stop";
    stop.classList.add("strong");
  } else {
    stop.textContent = "Stop";
    stop.classList.remove("strong");
  }
  $("send-btn").disabled = !v || v.ended || !conn.live;
  $("send-btn").textContent = busy ? "Queue" : "Send";
  $("fork-btn").disabled = $("close-btn").disabled = !v || v.ended || !conn.live;
  // A session whose CLI (or agent) is gone can be brought back: one
  // disconnected (a cluster's agent died), or ended on its own and
  // still listed (a closed one leaves the list).
  const gone = !!v && (v.state.state === "disconnected" || v.state.state === "closed" || v.ended) && !!(app.sessions.get(v.id) || {}).session_id;
  $("revive-btn").hidden = !gone;
  $("revive-btn").disabled = !gone || !conn.live;
  $("s-model").disabled = $("s-mode").disabled = !v || v.ended || !conn.live;
  // What a person may not do is not offered at all: a viewer watches,
  // only the owner shares and closes.
  const s = v ? app.sessions.get(v.id) : null;
  const act = !v || tm.canAct(s);
  const own = !v || tm.canOwn(s);
  $("prompt-form").hidden = !act;
  $("watch-note").hidden = act;
  for (const id of ["s-model", "s-mode"]) $(id).closest("label").hidden = !act;
  $("fork-btn").hidden = !act || tm.isViewerRole();
  if (!act) $("revive-btn").hidden = true;
  $("close-btn").hidden = !own;
  $("share-btn").hidden = !tm.team.on || !own || !v || v.ended;
  $("share-btn").disabled = !conn.live;
}

// accessChanged: our access to the open session changed (shared, or
// taken back): rebuild the view so its controls and cards match.
function accessChanged(before, after) {
  if (before !== after && app.view && conn.live) subscribe(app.view.id, true);
}

// ---- prompt box ---------------------------------------------------------------------

const attachments = [];

function renderAttachments() {
  const box = $("attachments");
  box.replaceChildren();
  attachments.forEach((a, i) => {
    const d = el("div", "att");
    const img = el("img");
    img.src = "data:" + a.media_type + ";base64," + a.data;
    img.alt = "pasted image";
    d.appendChild(img);
    const x = el("button", null, "×");
    x.type = "button";
    x.title = "Remove";
    x.onclick = () => {
      attachments.splice(i, 1);
      renderAttachments();
    };
    d.appendChild(x);
    box.appendChild(d);
  });
}

$("prompt").addEventListener("paste", (e) => {
  for (const item of e.clipboardData?.items || []) {
    if (item.kind === "file" && /^image\/(png|jpeg|gif|webp)$/.test(item.type)) {
      e.preventDefault();
      const f = item.getAsFile();
      if (f.size > 5 * 1024 * 1024) {
        alert("Images up to 5 MB, please.");
        continue;
      }
      const r = new FileReader();
      r.onload = () => {
        const data = String(r.result).split(",")[1];
        attachments.push({ media_type: f.type, data });
        renderAttachments();
      };
      r.readAsDataURL(f);
    }
  }
});

// The slash-command menu (slashmenu.js) takes its keys before the
// prompt's own Enter below.
const slashMenu = new SlashMenu($("prompt"), $("slash-menu"), {
  session: () => app.view?.id || null,
  load: (id) => proto.slashCommands(conn, id),
  submit: () => $("prompt-form").requestSubmit(),
});

// A command that wakes a session (a prompt, the wake typing sends, a
// resume) waits for an agent with room when the cluster is full: the
// session's transcript says so, with its place in line, until every such
// command of the session has ended, also when the session is left and
// opened again meanwhile, with the prompts that wait (the box was
// emptied: they must show somewhere).
function roomWait(id, text, resuming) {
  const w = app.roomWaits.get(id) || { n: 0, pos: 0, texts: [] };
  app.roomWaits.set(id, w);
  w.resuming = !!resuming; // a resume of a session whose agent is gone, not a wake
  w.n++;
  const mine = text ? { text } : null;
  if (mine) {
    w.texts.push(mine);
    showRoomWait();
  }
  let done = false;
  return {
    onQueued: (pos) => {
      if (done) return;
      w.pos = pos;
      showRoomWait();
    },
    end: () => {
      if (done) return;
      done = true;
      if (mine) w.texts.splice(w.texts.indexOf(mine), 1);
      if (--w.n === 0) app.roomWaits.delete(id);
      showRoomWait();
    },
  };
}

// showRoomWait renders the open session's wait for room, or takes it away.
function showRoomWait() {
  const v = app.view;
  if (!v) return;
  const w = app.roomWaits.get(v.id);
  let note = v.transcript.root.querySelector(":scope > .room-wait");
  if (!w?.pos) {
    note?.remove();
    return;
  }
  if (!note) note = v.transcript.root.appendChild(el("div", "note room-wait", ""));
  const waiting = w.texts.map((t) => "“" + (t.text.length > 80 ? t.text.slice(0, 79) + "…" : t.text) + "”");
  note.textContent =
    "Every agent is busy: this session " +
    (w.resuming ? "resumes" : "wakes") +
    " when one has room (" +
    (w.pos === 1 ? "next in line" : "position " + w.pos) +
    ")." +
    (waiting.length ? " Then it takes " + (waiting.length > 1 ? "your prompts " : "your prompt ") + waiting.join(", ") + "." : "");
  scrollDown();
}

// Typing into the prompt of a session asleep wakes it, once per sleep:
// its CLI starts (a second or more) while the person still types, and the
// prompt finds it awake. A lone "/" (the slash menu, read from what the
// session recorded as it fell asleep) and an empty box wake nothing. A
// server or agent of an earlier release refuses the command; the prompt
// then wakes the session, as before.
$("prompt").addEventListener("input", () => {
  const v = app.view;
  const text = $("prompt").value.trim();
  if (!v || v.state.state !== "asleep" || v.wakeFor === v.state || !text || text === "/") return;
  if (!conn.live || !tm.canAct(app.sessions.get(v.id))) return;
  v.wakeFor = v.state;
  const w = roomWait(v.id);
  proto
    .wake(conn, v.id, w.onQueued)
    .catch((err) => {
      // No agent had room in time: say so; the prompt, when sent, asks
      // again.
      if (err?.code === "busy") v.transcript.root.appendChild(el("div", "note warn", "Not woken: " + tm.message(err)));
    })
    .finally(w.end);
});

// The CLI's guess at the next prompt (tether serve --prompt-suggestions),
// offered while the session waits for one and the box is empty: a click
// puts it in the box, to send as it is or edit first. A prompt, a new
// turn or typing puts it away (emptying the box brings it back).
function renderSuggestion() {
  const v = app.view;
  const text = (v && v.store.suggestion) || "";
  const b = $("suggestion");
  b.hidden = !text || v.ended || busyStates.has(v.state.state) || v.turnPending || $("prompt").value !== "";
  $("suggestion-text").textContent = text;
  b.title = text ? "Put this suggestion in the prompt box, to send or edit: " + text : "";
}
$("suggestion").onclick = () => {
  const v = app.view;
  if (!v || !v.store.suggestion) return;
  const ta = $("prompt");
  ta.value = v.store.suggestion;
  v.store.set({ suggestion: "" });
  ta.focus();
  ta.setSelectionRange(ta.value.length, ta.value.length);
};
$("prompt").addEventListener("input", renderSuggestion);

$("prompt").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    $("prompt-form").requestSubmit();
  }
});

$("prompt-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const v = app.view;
  const ta = $("prompt");
  const text = ta.value.trim();
  if (!v || (!text && !attachments.length)) return;
  const imgs = attachments.splice(0);
  ta.value = "";
  v.store.set({ suggestion: "" });
  renderAttachments();
  const w = roomWait(v.id, text || "(images)");
  try {
    await proto.send(conn, v.id, text, imgs, w.onQueued);
  } catch (err) {
    // Give the text back: nothing typed is lost.
    if (!ta.value.trim()) ta.value = text;
    attachments.push(...imgs);
    renderAttachments();
    const why = err?.code === "waiting_for_agent" ? "waiting for an agent to take this session (" + tm.message(err) + ")" : tm.message(err);
    v.transcript.root.appendChild(el("div", "note warn refused", "Not sent: " + why));
    scrollDown();
  } finally {
    w.end();
  }
});

async function stop() {
  const v = app.view;
  if (!v || !busyStates.has(v.state.state) || !tm.canAct(app.sessions.get(v.id))) return;
  const force = v.stopClicks > 0;
  v.stopClicks++;
  updateComposer();
  try {
    const r = await proto.interrupt(conn, v.id, force);
    if (force && r && r.step && r.step !== "none") v.transcript.root.appendChild(el("div", "note warn", r.step === "kill" ? "The CLI did not stop; it was killed." : r.step === "sigint" ? "Stopped with SIGINT." : "Stop requested."));
  } catch (e) {
    v.transcript.root.appendChild(el("div", "note warn", "Stop: " + e.message));
  }
}
$("stop-btn").onclick = stop;

// A choice shows at once: the store takes it before the answer comes, so
// a re-render meanwhile (another answer, an event) keeps showing it, and
// gets back what it was if the switch fails. The CLI's own report of its
// mode (system/status) then confirms or corrects it.
async function switchFact(key, value, send, what) {
  const v = app.view;
  const before = v.store[key];
  v.store.set({ [key]: value });
  try {
    await send(conn, v.id, value);
  } catch (err) {
    if (v.store[key] === value) v.store.set({ [key]: before });
    renderHead();
    alert("Could not switch the " + what + ": " + err.message);
  }
}
$("s-model").onchange = (e) => switchFact("model", e.target.value, proto.setModel, "model");
$("s-mode").onchange = (e) => switchFact("mode", e.target.value, proto.setMode, "mode");
/**
 * closeQuestion is what Close asks: the work the CLI does in the
 * background ends with it (a watcher is no work).
 */
function closeQuestion(tasks) {
  const work = tasks.filter((t) => !t.ambient).map((t) => "“" + (t.description || t.id) + "”");
  let ends = "";
  if (work.length === 1) ends = ", and with it " + work[0] + ", which runs in the background";
  else if (work.length > 1) ends = ", and with it " + work.length + " tasks in the background (" + work.slice(0, 3).join(", ") + (work.length > 3 ? ", …" : "") + ")";
  return "Close this session? Its CLI stops" + ends + "; you can resume it from disk later.";
}
$("close-btn").onclick = async () => {
  const v = app.view;
  if (!v || !confirm(closeQuestion(v.store.tasks || []))) return;
  try {
    await proto.close(conn, v.id);
  } catch (err) {
    // Unmerged work in its worktree: the panel asks what to do with it.
    if (worktreePanel.closeRefused(v.id, err, (how) => conn.request({ type: "do", session: v.id, command: { type: "close", ...how } }))) return;
    alert("Close: " + err.message);
  }
};
$("revive-btn").onclick = async () => {
  const v = app.view;
  if (!v) return;
  $("revive-btn").disabled = true;
  const w = roomWait(v.id, "", true);
  try {
    const info = await proto.resume(conn, v.id, w.onQueued);
    handlers.session(info);
    if (info.id !== v.id) {
      // A new session continues the conversation (the local backend).
      app.intros.set(info.id, "Resumed “" + sessionTitle(info) + "” after its CLI stopped.");
      openSession(info.id);
    } else {
      // The same session on another agent: its events go on.
      v.ended = false;
      subscribe(v.id);
    }
  } catch (err) {
    alert("Resume: " + err.message);
    renderHead();
  } finally {
    w.end();
  }
};
$("fork-btn").onclick = async () => {
  const v = app.view;
  const s = app.sessions.get(v.id) || {};
  const sid = s.session_id;
  if (!sid) {
    alert("This session has no conversation to fork yet.");
    return;
  }
  try {
    const info = await proto.start(conn, { cwd: v.cwd || s.cwd, resume: sid, fork: true });
    app.intros.set(info.id, "Forked from “" + sessionTitle({ ...s, id: v.id }) + "”.");
    handlers.session(info);
    openSession(info.id);
  } catch (err) {
    alert("Fork: " + err.message);
  }
};

// ---- dialogs ---------------------------------------------------------------------------

for (const b of document.querySelectorAll("[data-close]")) b.onclick = () => b.closest("dialog").close();

function lastCwd() {
  const v = app.view;
  if (v && v.cwd) return v.cwd;
  return localStorage.getItem("tether.cwd") || "";
}

// recentCwds are the directories to offer for a new session: the open
// session's, the listed sessions' (newest first), the ones started here
// before, the server's default.
function recentCwds() {
  const out = [];
  const add = (c) => {
    if (c && !out.includes(c)) out.push(c);
  };
  add(app.view?.cwd);
  const list = [...app.sessions.values()].sort((a, b) => (b.last_event || b.created || "").localeCompare(a.last_event || a.created || ""));
  for (const s of list) add(s.cwd);
  for (const c of storedCwds()) add(c);
  add(app.defaultCwd);
  return out.slice(0, 20);
}

function storedCwds() {
  try {
    const l = JSON.parse(localStorage.getItem("tether.cwds") || "[]");
    return Array.isArray(l) ? l.filter((c) => typeof c === "string") : [];
  } catch {
    return [];
  }
}

function rememberCwd(cwd) {
  localStorage.setItem("tether.cwd", cwd);
  localStorage.setItem("tether.cwds", JSON.stringify([cwd, ...storedCwds().filter((c) => c !== cwd)].slice(0, 10)));
}

function openNew() {
  if (!conn.live || tm.isViewerRole()) return;
  const d = $("new-dlg");
  $("new-err").textContent = "";
  // The server's default unless this dialog was given another; the
  // recent ones are a keystroke away (the datalist).
  const cwd = $("new-cwd");
  cwd.value = app.defaultCwd || lastCwd();
  $("cwds").replaceChildren(...recentCwds().map((c) => Object.assign(el("option"), { value: c })));
  d.showModal();
  // Focus on Start, not in the field: Enter starts the session (whose
  // prompt box then has the focus), and text typed at once is not
  // taken for a directory.
  $("new-submit").focus();
}
$("new-btn").onclick = openNew;
$("welcome-new").onclick = openNew;
$("new-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const f = new FormData(e.target);
  const req = { cwd: f.get("cwd").trim() || undefined, model: f.get("model").trim() || undefined, permission_mode: f.get("permission_mode") || undefined, append_system_prompt: f.get("append_system_prompt").trim() || undefined, worktree: f.get("worktree") === "on" || undefined };
  $("new-submit").disabled = true;
  $("new-err").textContent = "";
  try {
    const info = await proto.start(conn, req, (pos) => {
      $("new-err").textContent = `Every agent is busy: waiting for room (${pos === 1 ? "next in line" : "position " + pos}).`;
    });
    if (req.cwd) rememberCwd(req.cwd);
    $("new-dlg").close();
    handlers.session(info);
    openSession(info.id);
    $("prompt").focus();
  } catch (err) {
    $("new-err").textContent = tm.message(err);
  } finally {
    $("new-submit").disabled = false;
  }
});

function openResume() {
  if (!conn.live || tm.isViewerRole()) return;
  $("resume-err").textContent = "";
  if (!$("resume-cwd").value) $("resume-cwd").value = lastCwd() || app.defaultCwd;
  $("cwds").replaceChildren(...recentCwds().map((c) => Object.assign(el("option"), { value: c })));
  $("resume-dlg").showModal();
  $("resume-cwd").focus();
  if ($("resume-cwd").value) listDisk();
}
$("resume-btn").onclick = openResume;
$("welcome-resume").onclick = openResume;
$("resume-form").addEventListener("submit", (e) => {
  e.preventDefault();
  listDisk();
});

async function listDisk() {
  const cwd = $("resume-cwd").value.trim();
  const ul = $("disk-list");
  $("resume-err").textContent = "";
  ul.replaceChildren(el("li", "muted", "Loading…"));
  try {
    const list = await proto.disk(conn, cwd);
    ul.replaceChildren();
    if (!list.length) ul.appendChild(el("li", "muted", "No sessions on disk for this directory."));
    for (const d of list) {
      const li = el("li");
      li.dataset.sessionId = d.session_id;
      const info = el("div", "dinfo");
      info.appendChild(el("div", "dtitle", d.title || d.summary || d.first_prompt || d.session_id));
      const last = el("div", "dlast", (d.last_prompt ? "“" + d.last_prompt + "” · " : "") + ago(d.modified || d.time));
      info.appendChild(last);
      li.appendChild(info);
      for (const [label, fork] of [["Resume", false], ["Fork", true]]) {
        const b = el("button", fork ? "" : "primary", label);
        b.type = "button";
        b.onclick = async () => {
          b.disabled = true;
          try {
            const s = await proto.start(conn, { cwd, resume: d.session_id, fork });
            app.intros.set(s.id, (fork ? "Forked from" : "Resumed") + " “" + (d.title || d.first_prompt || d.session_id) + "” (last active " + ago(d.modified) + ").");
            rememberCwd(cwd);
            $("resume-dlg").close();
            handlers.session(s);
            openSession(s.id);
          } catch (err) {
            $("resume-err").textContent = err.message;
            b.disabled = false;
          }
        };
        li.appendChild(b);
      }
      ul.appendChild(li);
    }
  } catch (err) {
    ul.replaceChildren();
    $("resume-err").textContent = err.message;
  }
}

$("help-btn").onclick = () => $("help-dlg").showModal();
$("nav-toggle").onclick = () => document.body.classList.toggle("nav-open");

// ---- keyboard ---------------------------------------------------------------------------

function isTyping() {
  const a = document.activeElement;
  return a && (a.tagName === "TEXTAREA" || (a.tagName === "INPUT" && a.type !== "checkbox" && a.type !== "radio") || a.tagName === "SELECT" || a.isContentEditable);
}

document.addEventListener("keydown", (e) => {
  if (document.querySelector("dialog[open]")) return;
  const v = app.view;
  // A pending approval takes Enter / Escape / a (and digits for
  // questions) unless the user is typing somewhere else.
  const first = v && [...v.approvals.values()][0];
  if (first && !e.ctrlKey && !e.metaKey && !e.altKey && !e.shiftKey) {
    const inCard = first.el.contains(document.activeElement);
    const typing = isTyping();
    const edge = e.key === "Enter" || e.key === "Escape";
    // Inside the card, text fields keep their letters and buttons their
    // Enter; from an empty prompt box only Enter and Escape reach the
    // card, so typing a new prompt is never eaten.
    const emptyPrompt = document.activeElement === $("prompt") && !$("prompt").value.trim() && !attachments.length;
    let route = inCard ? (!typing || edge) && e.key !== " " && !(e.key === "Enter" && document.activeElement.tagName === "BUTTON") : !typing || (emptyPrompt && edge);
    if (route && first.el.keys && first.el.keys(e)) {
      e.preventDefault();
      return;
    }
  }
  const ae = document.activeElement;
  const selected = !!window.getSelection()?.toString() || (ae && "selectionStart" in ae && ae.selectionStart !== ae.selectionEnd);
  if (e.ctrlKey && e.key === "c" && v && busyStates.has(v.state.state) && !selected) {
    e.preventDefault();
    stop();
    return;
  }
  if (e.key === "Escape" && v && busyStates.has(v.state.state) && !first) {
    e.preventDefault();
    stop();
    return;
  }
  if (isTyping() || e.ctrlKey || e.metaKey || e.altKey) return;
  switch (e.key) {
    case "/":
      e.preventDefault();
      $("prompt").focus();
      break;
    case "n":
      e.preventDefault();
      openNew();
      break;
    case "r":
      e.preventDefault();
      openResume();
      break;
    case "?":
      $("help-dlg").showModal();
      break;
    case "f":
      if ($("session-filter").hidden) break;
      e.preventDefault();
      document.body.classList.add("nav-open"); // on a phone, the list slides in
      $("session-filter").focus();
      break;
    case "j":
    case "k": {
      const ids = [...document.querySelectorAll("#sessions li[data-id]")].map((li) => li.dataset.id);
      if (!ids.length) break;
      let i = ids.indexOf(app.current);
      i = e.key === "j" ? Math.min(ids.length - 1, i + 1) : Math.max(0, i - 1);
      openSession(ids[i]);
      break;
    }
  }
});

window.addEventListener("online", () => conn.retryNow());
// The login link opened in a tab already on this page changes only the
// fragment: log in with it and connect.
window.addEventListener("hashchange", async () => {
  if (!/(?:^#|&)token=/.test(location.hash)) return;
  await proto.login();
  conn.retryNow();
});
document.addEventListener("visibilitychange", () => {
  if (!document.hidden) conn.retryNow();
});

// ---- start ---------------------------------------------------------------------------------

// ---- team: account menu, share, spend, audit ------------------------------------------------

$("signout-btn").onclick = () => tm.signOut(() => conn.close());
$("spend-btn").onclick = () => tm.openSpend();
$("share-btn").onclick = () => {
  const v = app.view;
  if (!v) return;
  const s = app.sessions.get(v.id) || { id: v.id };
  const people = [...app.sessions.values()].filter((x) => x.person).map((x) => [x.person, x.person_name || ""]);
  tm.openShare(s, sessionTitle({ ...s, id: v.id }), people);
};
document.addEventListener("click", (e) => {
  if ($("me").open && !$("me").contains(e.target)) $("me").open = false;
});

function showAudit(session) {
  $("me").open = false;
  if (!tm.isAdmin()) return;
  if (app.current && conn.live) proto.unsubscribe(conn, app.current);
  app.current = null;
  app.view = null;
  $("welcome").hidden = true;
  $("session").hidden = true;
  $("audit").hidden = false;
  document.body.classList.remove("nav-open");
  if (session != null) $("audit-form").elements.session.value = session;
  if (location.hash !== "#audit") history.replaceState(null, "", "#audit");
  renderList();
  tm.loadAudit((id) => showAudit(id));
}
$("audit-btn").onclick = () => showAudit();
$("audit-form").addEventListener("submit", (e) => {
  e.preventDefault();
  tm.loadAudit((id) => showAudit(id));
});
$("audit-close").onclick = () => {
  $("audit").hidden = true;
  $("welcome").hidden = false;
  history.replaceState(null, "", location.pathname);
};

async function main() {
  if (/(?:^#|&)token=/.test(location.hash)) {
    await proto.login(); // trade a token in the URL fragment for a cookie
  } else if ((await tm.detect()) === "signed-out") {
    // A team server and nobody signed in: the sign-in page, no socket.
    tm.showSignIn("");
    return;
  }
  tm.restoreHash();
  if (location.hash === "#audit" && tm.isAdmin()) showAudit();
  const m = /^#s=([\w.-]+)/.exec(location.hash);
  if (m) openSession(m[1], false);
  conn.open();
}
app.conn = conn;
app.asked = 0; // approvals shown since the page loaded
window.tether = app; // for tests and curious people
main();
