// notify.js: being called back (docs/serve-protocol.md, section 8).
//
// It registers the service worker (sw.js: notifications, the offline
// page), tells the server over the socket whether this tab is visible
// (the server pushes only while none of the person's tabs is), and owns
// the Notifications dialog: this device's push subscription, which
// events, a webhook and an ntfy topic. The dialog is built here, so the
// page's HTML only carries the manifest link.

const EVENTS = {
  approval: "An approval waits",
  question: "A question waits",
  turn_done: "A turn finished",
  turn_failed: "A turn failed",
  budget: "My daily budget is spent",
};

let conn = null;

/** connected is called on every (re)connection: it reports visibility. */
export function connected(c) {
  conn = c;
  report();
}

function report() {
  if (conn && conn.live !== false) {
    try {
      conn.send({ type: "visibility", visible: document.visibilityState === "visible" });
    } catch {
      // not open: reported again on the next connection
    }
  }
}
document.addEventListener("visibilitychange", report);
window.addEventListener("pagehide", () => {
  if (conn) {
    try {
      conn.send({ type: "visibility", visible: false });
    } catch {}
  }
});

let swReg = null;
if ("serviceWorker" in navigator) {
  navigator.serviceWorker
    .register("sw.js", { scope: "./" })
    .then((r) => (swReg = r))
    .catch(() => {});
}

async function api(path, method = "GET", body) {
  const r = await fetch(path, {
    method,
    credentials: "same-origin",
    headers: body ? { "Content-Type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  if (r.status === 204) return null;
  const j = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(j.error?.message || r.statusText);
  return j;
}

function b64urlToBytes(s) {
  const b = atob(s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4));
  return Uint8Array.from(b, (c) => c.charCodeAt(0));
}

function el(tag, props = {}, ...kids) {
  const e = document.createElement(tag);
  Object.assign(e, props);
  for (const k of kids) e.append(k);
  return e;
}

/** subscribeDevice asks permission and subscribes this browser. */
export async function subscribeDevice(vapidKey) {
  if (!("serviceWorker" in navigator) || !("PushManager" in window)) throw new Error("this browser has no Web Push");
  if ((await Notification.requestPermission()) !== "granted") throw new Error("notifications are blocked for this site");
  const reg = swReg || (await navigator.serviceWorker.ready);
  let sub = await reg.pushManager.getSubscription();
  if (!sub) sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: b64urlToBytes(vapidKey) });
  await api("api/notify/subscribe", "POST", sub.toJSON());
  return sub;
}

async function unsubscribeDevice() {
  const reg = swReg || (await navigator.serviceWorker?.getRegistration());
  const sub = await reg?.pushManager.getSubscription();
  if (!sub) return;
  await api("api/notify/unsubscribe", "POST", { endpoint: sub.endpoint });
  await sub.unsubscribe();
}

let dlg = null;

function build() {
  const css = el("link", { rel: "stylesheet", href: "notify.css" });
  document.head.append(css);
  const state = el("span", { className: "notify-state muted" });
  const on = el("button", { type: "button", className: "primary", textContent: "Notify this device" });
  const off = el("button", { type: "button", textContent: "Stop on this device" });
  const all = el("input", { type: "checkbox", name: "off" });
  const events = el("fieldset", {}, el("legend", { textContent: "Tell me when" }));
  for (const [k, v] of Object.entries(EVENTS)) {
    events.append(el("label", { className: "notify-check" }, el("input", { type: "checkbox", name: "ev", value: k }), v));
  }
  const hookURL = el("input", { name: "webhook", type: "url", placeholder: "https://… (optional)", autocomplete: "off" });
  const hookSecret = el("input", { name: "secret", type: "password", placeholder: "HMAC secret (kept if empty)", autocomplete: "new-password" });
  const topic = el("input", { name: "ntfy", placeholder: "a topic only you know (optional)", autocomplete: "off", spellcheck: false });
  const ntfyLabel = el("label", {}, "ntfy topic", topic);
  const err = el("p", { className: "err", role: "alert" });
  const save = el("button", { type: "submit", className: "primary", textContent: "Save" });
  const close = el("button", { type: "button", textContent: "Close" });
  const form = el(
    "form",
    { method: "dialog" },
    el("h2", { textContent: "Notifications" }),
    el("p", { className: "muted", textContent: "Sent only while none of your Tether tabs is on screen." }),
    el("div", { className: "notify-device" }, on, off, state),
    el("label", { className: "notify-check" }, all, "Pause all notifications"),
    events,
    el("fieldset", {}, el("legend", { textContent: "Without a browser" }), el("label", {}, "Webhook URL (signed JSON)", hookURL), el("label", {}, "Webhook secret", hookSecret), ntfyLabel),
    err,
    el("div", { className: "dlg-actions" }, close, save),
  );
  dlg = el("dialog", { id: "notify-dlg", className: "dlg notify-dlg" }, form);
  document.body.append(dlg);
  close.onclick = () => dlg.close();

  let view = null;
  const refresh = async () => {
    err.textContent = "";
    view = await api("api/notify");
    const s = view.settings || {};
    all.checked = !!s.off;
    for (const c of events.querySelectorAll("input")) c.checked = !s.events || s.events.includes(c.value);
    hookURL.value = s.webhook?.url || "";
    hookSecret.value = "";
    topic.value = s.ntfy_topic || "";
    ntfyLabel.hidden = !view.ntfy;
    const reg = swReg || (await navigator.serviceWorker?.getRegistration());
    const sub = await reg?.pushManager?.getSubscription();
    const perm = window.Notification ? Notification.permission : "unsupported";
    state.textContent = sub ? "This device is notified." : perm === "denied" ? "Blocked in this browser's site settings." : "This device is not notified.";
    on.hidden = !!sub;
    off.hidden = !sub;
  };
  on.onclick = async () => {
    try {
      await subscribeDevice(view.vapid_public_key);
    } catch (e) {
      err.textContent = e.message;
    }
    await refresh().catch((e) => (err.textContent = e.message));
  };
  off.onclick = async () => {
    try {
      await unsubscribeDevice();
    } catch (e) {
      err.textContent = e.message;
    }
    await refresh().catch((e) => (err.textContent = e.message));
  };
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const s = {
      off: all.checked,
      events: [...events.querySelectorAll("input:checked")].map((c) => c.value),
      ntfy_topic: topic.value.trim() || undefined,
    };
    const url = hookURL.value.trim();
    if (url) s.webhook = { url, secret: hookSecret.value }; // "": the server keeps the secret it has for this URL
    try {
      await api("api/notify", "PUT", s);
      dlg.close();
    } catch (e2) {
      err.textContent = e2.message;
    }
  });
  dlg.refresh = refresh;
}

/** open shows the Notifications dialog. */
export async function open() {
  if (!dlg) build();
  dlg.showModal();
  try {
    await dlg.refresh();
  } catch (e) {
    dlg.querySelector(".err").textContent = e.message;
  }
}

// The header's bell: added here, before the theme button.
const theme = document.getElementById("theme");
if (theme) {
  const bell = el("button", { id: "notify-btn", className: "icon", type: "button", title: "Notifications" });
  // A drawn bell: an emoji needs a font a phone or a server may lack.
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("width", "16");
  svg.setAttribute("height", "16");
  svg.setAttribute("aria-hidden", "true");
  const path = document.createElementNS(ns, "path");
  path.setAttribute("d", "M12 3a6 6 0 0 0-6 6v4l-2 3h16l-2-3V9a6 6 0 0 0-6-6zm-2 15a2 2 0 0 0 4 0");
  path.setAttribute("fill", "none");
  path.setAttribute("stroke", "currentColor");
  path.setAttribute("stroke-width", "2");
  path.setAttribute("stroke-linejoin", "round");
  svg.append(path);
  bell.append(svg);
  bell.setAttribute("aria-label", "Notifications");
  bell.onclick = open;
  theme.before(bell);
}
