// proto.js: the serve wire protocol (docs/serve-protocol.md), in one
// place, so the rest of the UI speaks in its own terms.

/** socketURL is the WebSocket endpoint on this page's origin. */
export function socketURL() {
  const u = new URL("ws", location.href);
  u.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  u.hash = "";
  u.search = "";
  return u.href;
}

/** json decodes a payload that may arrive as text or already parsed. */
export function json(v) {
  if (typeof v === "string") {
    try {
      return JSON.parse(v);
    } catch {
      return {};
    }
  }
  return v || {};
}

/**
 * login trades a token in the URL fragment (#token=…) for the session
 * cookie, then removes it from the address bar and history.
 */
export async function login() {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (!m) return null;
  const rest = location.hash.replace(/(^#|&)token=[^&]+/, "$1").replace(/^#&/, "#");
  history.replaceState(null, "", location.pathname + (rest === "#" ? "" : rest));
  try {
    const r = await fetch("auth", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token: decodeURIComponent(m[1]) }), credentials: "same-origin" });
    return r.ok;
  } catch (e) {
    console.warn("tether: login:", e.message);
    return false;
  }
}

/**
 * signedIn asks the server whether our cookie is good: true, false (it
 * says 401), or null (it cannot be reached). A WebSocket upgrade refused
 * for want of credentials looks to a page like any failed connection;
 * this tells the two apart.
 */
export async function signedIn() {
  try {
    const r = await fetch("api/sessions", { credentials: "same-origin" });
    if (r.status === 401) return false;
    return r.ok ? true : null;
  } catch {
    return null;
  }
}

/** dispatch routes one server frame to the handlers. */
export function dispatch(m, h) {
  switch (m.type) {
    case "event":
      h.event(m.session, m.event);
      break;
    case "items":
      // The items of one message event, in its place (we subscribe with items).
      h.event(m.session, { seq: m.seq, time: m.time, kind: "items", items: m.items || [] });
      break;
    case "snapshot":
      h.snapshot(m.session, m.snapshot);
      break;
    case "resync":
      h.resync(m.session);
      break;
    case "sessions":
      h.sessions(m.sessions);
      break;
    case "session":
      h.session(m.session);
      break;
    case "removed":
      h.removed(m.session);
      break;
    case "error":
      console.warn("tether: server:", m.error?.code, m.error?.message);
      h.error?.(m);
      break;
    case "hello":
      if (m.protocol !== 1) console.warn("tether: server speaks protocol", m.protocol);
      h.hello?.(m);
      break;
  }
}

export const list = (c) => c.request({ type: "list" }).then((r) => r.sessions || r);
// The page renders transcript items the server derives (docs/serve-protocol.md, "Transcript items").
export const subscribe = (c, id, after, snapshot) => c.request({ type: "subscribe", v: 1, session: id, after, snapshot: !!snapshot, items: true });
export const unsubscribe = (c, id) => c.send({ type: "unsubscribe", session: id });
// A start may wait for room in a cluster (the server ends it in "busy"
// after its own bound), so it gets longer than other requests.
export const start = (c, req, onQueued) => c.request({ type: "start", ...req }, 180000, onQueued).then((r) => r.session || r);
export const disk = (c, cwd) => c.request({ type: "disk_sessions", cwd }).then((r) => r.sessions || r || []);
// onQueued(position) hears a command that wakes a session (send, wake,
// resume) wait for an agent with room in a full cluster.
const cmd = (c, id, command, onQueued) => c.request({ type: "do", session: id, command }, undefined, onQueued);
export const send = (c, id, text, images, onQueued) => cmd(c, id, { type: "send", text, images }, onQueued);
export const interrupt = (c, id, force) => cmd(c, id, { type: force ? "force_interrupt" : "interrupt" });
export const cancel = (c, id, uuid) => cmd(c, id, { type: "cancel", uuid });
export const setModel = (c, id, model) => cmd(c, id, { type: "set_model", model });
export const setMode = (c, id, mode) => cmd(c, id, { type: "set_mode", mode });
export const close = (c, id) => cmd(c, id, { type: "close" });
export const resume = (c, id, onQueued) => cmd(c, id, { type: "resume" }, onQueued).then((r) => r.session || r);
export const changes = (c, id) => cmd(c, id, { type: "changes" });
export const slashCommands = (c, id) => cmd(c, id, { type: "slash_commands" });
export const wake = (c, id, onQueued) => cmd(c, id, { type: "wake" }, onQueued);
export const revertChanges = (c, id, paths) => cmd(c, id, paths ? { type: "revert_changes", paths } : { type: "revert_changes" });
export const stopTask = (c, id, taskID) => cmd(c, id, { type: "stop_task", task_id: taskID });
export const answer = (c, id, approval, reply) => cmd(c, id, { type: "answer", approval, ...reply });
