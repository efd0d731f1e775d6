// team.js: the parts of the UI that exist only when the server runs for
// a team (tether serve --team): who is signed in, the sign-in page,
// sharing, spend and the audit log.
//
// The page learns the mode from GET api/me: 200 is a signed-in person,
// 401 is a team server that wants a sign-in, and anything else (404: the
// endpoint does not exist) is the single-user token mode, where nothing
// here shows and the page behaves exactly as it always did.
//
// The server decides every permission; what is hidden here (a viewer's
// composer, approve and stop buttons) is hidden so that nobody is offered
// what the server would refuse, not to protect anything.

import { el } from "./dom.js";

const $ = (id) => document.getElementById(id);

/** The team state: on (teams enabled), me (the signed-in person or null). */
export const team = { on: false, me: null };

/**
 * detect asks the server who we are. It resolves to "token" (no teams),
 * "signed-in", "signed-out" or "offline" (the server cannot be reached,
 * or answers neither: the connection's retries take over; a page that
 * never reached it behaves as the token mode does).
 */
export async function detect() {
  let r;
  try {
    r = await fetch("api/me", { credentials: "same-origin", headers: { Accept: "application/json" } });
  } catch {
    return "offline";
  }
  if (r.status === 401) {
    team.on = true;
    team.me = null;
    return "signed-out";
  }
  if (r.status === 404) return team.on ? "offline" : "token";
  if (!r.ok) return "offline";
  let me;
  try {
    me = await r.json();
  } catch {
    return "token";
  }
  if (!me || typeof me !== "object" || !me.sub) return "token";
  team.on = true;
  setMe(me);
  return "signed-in";
}

/** setMe records the signed-in person (from api/me or the hello frame) and shows them. */
export function setMe(me) {
  if (!me || !me.sub) return;
  team.on = true;
  team.me = me;
  document.body.dataset.team = "on";
  document.body.dataset.role = me.role || "";
  const name = me.name || me.email || me.sub;
  $("me-initials").textContent = me.initials || initials(name);
  $("me-name").textContent = name;
  $("me-full").textContent = name;
  $("me-email").textContent = me.email && me.email !== name ? me.email : "";
  $("me-role").textContent = me.role || "";
  $("me").hidden = false;
  $("audit-btn").hidden = me.role !== "admin";
  hideSignIn();
}

/** initials is the server's rule, for when it sent none. */
export function initials(name) {
  const n = String(name || "").split("@")[0];
  const w = n.split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  if (!w.length) return "?";
  const f = (s) => [...s][0].toUpperCase();
  return w.length === 1 ? f(w[0]) : f(w[0]) + f(w[w.length - 1]);
}

export const isAdmin = () => team.on && team.me?.role === "admin";
export const isViewerRole = () => team.on && team.me?.role === "viewer";

/**
 * access is what we may do on a session: "owner", "collaborator" or
 * "viewer"; always "owner" in token mode.
 */
export function access(s) {
  if (!team.on || !s) return "owner";
  if (s.access) return s.access;
  if (s.person && team.me && s.person === team.me.sub) return "owner";
  return isAdmin() ? "owner" : "viewer";
}

/** canAct: send, answer, interrupt, change mode or model. */
export const canAct = (s) => access(s) !== "viewer";
/** canOwn: share and close. */
export const canOwn = (s) => access(s) === "owner";

/** mine reports whether s was started by the signed-in person. */
export function mine(s) {
  if (!team.on) return true;
  if (s.person) return s.person === team.me?.sub;
  return s.access === "owner" && !isAdmin();
}

/**
 * groups splits a sorted list into the sidebar's groups: Mine, Shared
 * with me, and (admins) All — everyone else's sessions. Empty groups are
 * left out; in token mode there is one group without a heading.
 */
export function groups(list) {
  if (!team.on) return [{ key: "", title: "", items: list }];
  const g = { mine: [], shared: [], all: [] };
  for (const s of list) {
    if (mine(s)) g.mine.push(s);
    else if (isAdmin() && (s.access === "owner" || !s.access)) g.all.push(s);
    else g.shared.push(s);
  }
  return [
    { key: "mine", title: "Mine", items: g.mine },
    { key: "shared", title: "Shared with me", items: g.shared },
    { key: "all", title: "All", items: g.all },
  ].filter((x) => x.items.length);
}

// ---- sign-in ------------------------------------------------------------------

const resumeKey = "tether.after-signin";

/** showSignIn replaces the page with the sign-in card; why says what happened. */
export function showSignIn(why) {
  team.on = true;
  team.me = null;
  document.body.dataset.team = "on";
  document.body.dataset.auth = "signin";
  $("me").hidden = true;
  $("signin").hidden = false;
  $("signin-why").textContent = why || "";
  // After a sign-in ended the way back says so.
  $("signin-btn").textContent = why ? "Sign in again" : "Sign in";
  $("signin-btn").focus();
}

function hideSignIn() {
  delete document.body.dataset.auth;
  $("signin").hidden = true;
}

$("signin-btn").onclick = () => {
  // The provider brings us back to next; the fragment (the open session)
  // never reaches a server, so it waits here.
  if (location.hash) sessionStorage.setItem(resumeKey, location.hash);
  location.assign("auth/login?next=" + encodeURIComponent(location.pathname + location.search));
};

/** restoreHash puts back the fragment the page had before signing in. */
export function restoreHash() {
  const h = sessionStorage.getItem(resumeKey);
  sessionStorage.removeItem(resumeKey);
  if (h && !location.hash) history.replaceState(null, "", location.pathname + location.search + h);
}

/** signOut ends the sign-in on the server, then shows the sign-in page. */
export async function signOut(onDone) {
  $("me").open = false;
  try {
    await fetch("auth/logout", { method: "POST", credentials: "same-origin" });
  } catch (e) {
    console.warn("tether: sign out:", e.message);
  }
  onDone?.();
  showSignIn("You signed out.");
}

// ---- errors -------------------------------------------------------------------

/** message is an error's text for a person, without the package prefix. */
export function message(e) {
  return String(e?.message ?? e).replace(/^team: /, "");
}

async function apiJSON(path, init) {
  const r = await fetch(path, { credentials: "same-origin", headers: { Accept: "application/json", ...(init?.body ? { "Content-Type": "application/json" } : {}) }, ...init });
  const text = await r.text();
  let body = null;
  if (text.trim()) {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  if (!r.ok) {
    const err = new Error(message(body?.error?.message || body?.error || r.statusText || "HTTP " + r.status));
    err.status = r.status;
    err.code = body?.error?.code;
    throw err;
  }
  return body;
}

// ---- sharing -------------------------------------------------------------------

let share = null; // {id, grants}

// The team's people by address: their names (GET api/people, the team
// file's names, and the owners seen in the sessions list).
const names = new Map();
let peopleRead = null;

/** readPeople asks the server for the team's people once per page. */
function readPeople() {
  peopleRead ??= apiJSON("api/people")
    .then((r) => {
      for (const p of r?.people || []) if (p.email) names.set(p.email.toLowerCase(), p.name || p.email);
    })
    .catch((e) => {
      peopleRead = null; // try again next time
      console.warn("tether: people:", e.message);
    });
  return peopleRead;
}

/** nameOf is a person's display name, or "" when we know none. */
export function nameOf(email) {
  const n = names.get(String(email || "").toLowerCase());
  return n && n.toLowerCase() !== String(email).toLowerCase() ? n : "";
}

// emailOf finds the address of a name typed into the dialog (exact, any
// case), or returns what was typed.
function emailOf(typed) {
  const t = typed.trim().toLowerCase();
  for (const [email, name] of names) if (name.toLowerCase() === t) return email;
  return typed;
}

// offerPeople fills the dialog's suggestions: each person by address,
// labelled with their name.
function offerPeople(extra) {
  const all = new Map(names);
  for (const [email, name] of extra) if (!all.has(email.toLowerCase())) all.set(email.toLowerCase(), name || email);
  all.delete(String(team.me?.sub || "").toLowerCase());
  all.delete(String(team.me?.email || "").toLowerCase());
  const opts = [...all].sort((a, b) => a[1].localeCompare(b[1])).map(([email, name]) => {
    const o = el("option", null, name !== email ? name : "");
    o.value = email;
    if (name !== email) o.label = name + " — " + email;
    return o;
  });
  $("people").replaceChildren(...opts);
}

/**
 * openShare shows the share dialog of session s (its owner only); people
 * are [email, name] pairs seen elsewhere (the sessions' owners).
 */
export async function openShare(s, title, people) {
  const d = $("share-dlg");
  share = { id: s.id, grants: [] };
  $("share-title").textContent = title ? "“" + title + "”" : "";
  $("share-err").textContent = "";
  $("share-who").value = "";
  const seen = (people || []).map((p) => (Array.isArray(p) ? p : [p, ""]));
  for (const [email, name] of seen) if (email && name && !names.has(email.toLowerCase())) names.set(email.toLowerCase(), name);
  offerPeople(seen);
  readPeople().then(() => {
    offerPeople(seen);
    if (share) renderGrants();
  });
  // Nothing is added or saved before the current shares are read: a
  // save replaces them all, and the answer must not replace what was
  // typed meanwhile.
  const cur = share;
  setLoaded(false);
  renderGrants();
  d.showModal();
  $("share-who").focus();
  try {
    const r = await apiJSON("api/sessions/" + encodeURIComponent(s.id) + "/share");
    if (share === cur) {
      share.grants = (Array.isArray(r) ? r : r?.grants || []).map((g) => ({ ...g }));
      setLoaded(true);
      renderGrants();
    }
  } catch (e) {
    if (share === cur) $("share-err").textContent = "Could not read the current shares: " + e.message;
  }
}

function setLoaded(ok) {
  $("share-dlg").dataset.loaded = ok ? "yes" : "";
  $("share-add").disabled = $("share-save").disabled = !ok;
  $("share-none").textContent = ok ? "Not shared with anyone yet." : "Reading the current shares…";
}

function renderGrants() {
  const ul = $("share-list");
  ul.replaceChildren();
  for (const [i, g] of share.grants.entries()) {
    const li = el("li");
    li.dataset.who = g.person || g.group;
    const who = el("span", "who");
    const name = g.person ? nameOf(g.person) : "";
    who.appendChild(el("span", "avatar small", g.group ? "#" : initials(name || g.person)));
    // People by name, their address beside it; groups by name.
    const label = el("span", "label");
    label.appendChild(el("span", "name", name || g.person || g.group));
    if (name) label.appendChild(el("span", "email muted small", g.person));
    if (g.group) label.appendChild(el("span", "muted small", "group"));
    who.appendChild(label);
    li.appendChild(who);
    const lvl = el("select");
    lvl.setAttribute("aria-label", "Level for " + (g.person || g.group));
    for (const v of ["viewer", "collaborator"]) lvl.appendChild(Object.assign(el("option", null, v), { value: v }));
    lvl.value = g.level || "viewer";
    lvl.onchange = () => (g.level = lvl.value);
    li.appendChild(lvl);
    const rm = el("button", "danger", "Remove");
    rm.type = "button";
    rm.onclick = () => {
      share.grants.splice(i, 1);
      renderGrants();
    };
    li.appendChild(rm);
    ul.appendChild(li);
  }
  $("share-none").hidden = share.grants.length > 0;
}

$("share-kind").onchange = () => {
  $("share-who").placeholder = $("share-kind").value === "group" ? "group name" : "name or e-mail address";
  $("share-who").setAttribute("list", $("share-kind").value === "group" ? "" : "people");
};

function addGrant() {
  const kind = $("share-kind").value;
  const typed = $("share-who").value.trim();
  const who = kind === "group" ? typed : emailOf(typed);
  if (!who || !share || $("share-dlg").dataset.loaded !== "yes") return false;
  const level = $("share-level").value;
  const key = kind === "group" ? "group" : "person";
  const v = key === "person" ? who.toLowerCase() : who;
  if (key === "person" && v === team.me?.sub) {
    $("share-err").textContent = "It is your session already.";
    return false;
  }
  const old = share.grants.find((g) => g[key] === v);
  if (old) old.level = level;
  else share.grants.push({ [key]: v, level });
  $("share-who").value = "";
  $("share-err").textContent = "";
  renderGrants();
  return true;
}
$("share-add").onclick = addGrant;
$("share-who").addEventListener("keydown", (e) => {
  if (e.key === "Enter") {
    e.preventDefault();
    addGrant();
  }
});

$("share-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  if (!share || $("share-dlg").dataset.loaded !== "yes") return;
  addGrant(); // a name typed and not yet added counts
  $("share-save").disabled = true;
  $("share-err").textContent = "";
  try {
    await apiJSON("api/sessions/" + encodeURIComponent(share.id) + "/share", { method: "POST", body: JSON.stringify({ grants: share.grants }) });
    $("share-dlg").close();
  } catch (err) {
    $("share-err").textContent = err.message;
  } finally {
    $("share-save").disabled = false;
  }
});

// ---- spend ---------------------------------------------------------------------

export function fmtMoney(v) {
  if (typeof v !== "number" || !isFinite(v)) return "—";
  return "$" + v.toFixed(2);
}

/** openSpend shows today's spend per person (everyone for admins, oneself otherwise). */
export async function openSpend() {
  $("me").open = false;
  const tb = $("spend-table").tBodies[0];
  tb.replaceChildren();
  $("spend-err").textContent = "";
  $("spend-dlg").showModal();
  try {
    const r = await apiJSON("api/spend");
    const list = (Array.isArray(r) ? r : r?.spend || r?.people || []).slice().sort((a, b) => (b.usd || 0) - (a.usd || 0) || String(a.person).localeCompare(String(b.person)));
    if (!list.length) {
      const tr = tb.insertRow();
      const td = tr.insertCell();
      td.colSpan = 4;
      td.className = "muted";
      td.textContent = "Nothing spent today.";
    }
    for (const p of list) {
      const tr = tb.insertRow();
      tr.dataset.person = p.person;
      const who = el("div", "who");
      tr.insertCell().appendChild(who);
      who.appendChild(el("span", "avatar small", initials(p.name || p.person)));
      const n = el("span", "name", p.name || p.person);
      n.title = p.person;
      who.appendChild(n);
      tr.insertCell().textContent = fmtMoney(p.usd || 0);
      tr.cells[1].className = "num";
      const budget = p.budget_usd > 0 ? p.budget_usd : 0;
      tr.insertCell().textContent = budget ? fmtMoney(budget) : "none";
      tr.cells[2].className = "num" + (budget ? "" : " muted");
      const bar = tr.insertCell();
      bar.className = "bar-col";
      if (budget) {
        const m = el("meter");
        m.min = 0;
        m.max = budget;
        m.low = budget * 0.7;
        m.high = budget * 0.9;
        m.optimum = 0;
        m.value = Math.min(p.usd || 0, budget);
        m.title = Math.round((100 * (p.usd || 0)) / budget) + "% of the daily budget";
        bar.appendChild(m);
        if ((p.usd || 0) >= budget) tr.classList.add("over");
      }
    }
  } catch (e) {
    $("spend-err").textContent = "Could not read the spend: " + e.message;
  }
}

// ---- audit ----------------------------------------------------------------------

const durations = { "1h": 3600e3, "24h": 86400e3, "168h": 7 * 86400e3, "720h": 30 * 86400e3 };

/** auditQuery builds the audit request's query from the filter form. */
export function auditQuery(form) {
  const f = new FormData(form);
  const q = new URLSearchParams();
  const since = durations[f.get("since")] ?? durations["24h"];
  q.set("since", new Date(Date.now() - since).toISOString());
  for (const k of ["actor", "session", "action"]) {
    const v = String(f.get(k) || "").trim();
    if (v) q.set(k, v);
  }
  const limit = Number(f.get("limit"));
  if (limit > 0) q.set("limit", String(Math.min(10000, Math.floor(limit))));
  return q;
}

/** parseAudit reads the audit endpoint's answer: a JSON array, an object with events, or JSONL. */
export function parseAudit(text) {
  const t = text.trim();
  if (!t) return [];
  if (t.startsWith("[")) return JSON.parse(t);
  if (t.startsWith("{") && !t.includes("\n")) {
    const o = JSON.parse(t);
    if (Array.isArray(o.events)) return o.events;
    return [o];
  }
  return t
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
}

function fmtTime(t) {
  const d = new Date(t);
  if (isNaN(d)) return "";
  const pad = (n) => String(n).padStart(2, "0");
  return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " + pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
}

/** loadAudit fetches and shows the events the filters ask for. */
export async function loadAudit(onSession) {
  const tb = $("audit-table").tBodies[0];
  $("audit-err").textContent = "";
  $("audit-apply").disabled = true;
  try {
    const r = await fetch("api/audit?" + auditQuery($("audit-form")), { credentials: "same-origin", headers: { Accept: "application/json" } });
    const text = await r.text();
    if (!r.ok) {
      let m = r.statusText;
      try {
        m = JSON.parse(text).error?.message || m;
      } catch {}
      throw new Error(message(m));
    }
    const evs = parseAudit(text).sort((a, b) => String(b.time).localeCompare(String(a.time)) || (b.seq || 0) - (a.seq || 0));
    tb.replaceChildren();
    for (const ev of evs) {
      const tr = tb.insertRow();
      tr.dataset.action = ev.action || "";
      tr.dataset.outcome = ev.outcome || "";
      const time = tr.insertCell();
      time.className = "time";
      time.textContent = fmtTime(ev.time);
      time.title = ev.time + (ev.addr ? "\nfrom " + ev.addr : "");
      const who = tr.insertCell();
      who.className = "actor";
      who.textContent = ev.actor_name || ev.actor || "system";
      if (ev.actor) who.title = ev.actor + (ev.addr ? " from " + ev.addr : "");
      tr.insertCell().appendChild(el("code", "action", ev.action || ""));
      const out = tr.insertCell();
      out.appendChild(el("span", "outcome " + (ev.outcome || ""), ev.outcome || ""));
      const sess = tr.insertCell();
      sess.className = "sess";
      if (ev.session) {
        const a = el("button", "link", ev.session.slice(0, 8));
        a.type = "button";
        a.title = "Show this session's events (" + ev.session + ")";
        a.onclick = () => onSession(ev.session);
        sess.appendChild(a);
      }
      const det = tr.insertCell();
      det.className = "detail";
      const parts = [];
      if (ev.tool) parts.push(ev.tool);
      if (ev.rule) parts.push("rule " + ev.rule);
      if (ev.detail) parts.push(ev.detail);
      det.textContent = parts.join(" · ");
      if (ev.input_digest) {
        const d = el("span", "digest", " sha256:" + ev.input_digest.slice(0, 12));
        d.title = "SHA-256 of the tool's input: " + ev.input_digest;
        det.appendChild(d);
      }
    }
    $("audit-empty").hidden = evs.length > 0;
  } catch (e) {
    $("audit-err").textContent = "Could not read the audit log: " + e.message;
  } finally {
    $("audit-apply").disabled = false;
  }
}
