// sw.js: Tether's service worker. It shows what the server pushes
// (docs/serve-protocol.md, section 8) and answers an approval from the
// notification's Allow and Deny buttons; it serves an offline page when
// the server cannot be reached. It caches nothing else: the UI always
// comes from the server.

const OFFLINE = "offline.html";
const KEPT = [OFFLINE, "offline.css", "icon.svg"]; // the offline page and what it shows
// A new name when a kept file changes: the new worker caches them anew and
// drops the older caches, which caches.match would otherwise still find.
const CACHE = "tether-offline-v2";

self.addEventListener("install", (e) => {
  e.waitUntil(caches.open(CACHE).then((c) => c.addAll(KEPT)).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (e) => {
  const old = caches.keys().then((ks) => Promise.all(ks.filter((k) => k.startsWith("tether-offline-") && k !== CACHE).map((k) => caches.delete(k))));
  e.waitUntil(old.then(() => self.clients.claim()));
});

// Navigations go to the network; the offline page answers only when it
// fails. The offline page's own files likewise; nothing else is touched.
const kept = KEPT.map((f) => new URL(f, self.registration.scope).href);
self.addEventListener("fetch", (e) => {
  if (e.request.mode === "navigate") {
    e.respondWith(fetch(e.request).catch(() => caches.match(OFFLINE)));
  } else if (e.request.method === "GET" && kept.includes(e.request.url)) {
    e.respondWith(fetch(e.request).catch(() => caches.match(e.request).then((r) => r || Response.error())));
  }
});

// show turns a push message into a notification; "resolved" replaces the
// one with its tag (answered elsewhere), quietly.
async function show(m) {
  const reg = self.registration;
  if (m.type === "resolved") {
    const by = m.by ? " by " + m.by : "";
    const what = { allowed: "Allowed", denied: "Denied", declined: "Declined", answered: "Answered", withdrawn: "Withdrawn" }[m.outcome] || "Answered";
    return reg.showNotification(what + by, { tag: m.tag, body: "", silent: true, renotify: false, icon: "icon-192.png", data: m });
  }
  return reg.showNotification(m.title || "Tether", {
    tag: m.tag,
    body: m.body || "",
    icon: "icon-192.png",
    badge: "icon-192.png",
    renotify: true,
    requireInteraction: m.event === "approval" || m.event === "question",
    actions: (m.actions || []).map((a) => ({ action: a.action, title: a.title })),
    data: m,
  });
}

self.addEventListener("push", (e) => {
  let m;
  try {
    m = e.data ? e.data.json() : null;
  } catch {
    m = null;
  }
  if (!m) return;
  e.waitUntil(show(m));
});

// answer posts an approval's answer with the page's cookie: the server
// answers it through the same command as the page's buttons.
async function answer(m, action) {
  const r = await fetch("api/notify/action", {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ session: m.session, approval: m.approval, action }),
  });
  let msg = "";
  if (!r.ok) {
    try {
      msg = (await r.json()).error?.message || r.statusText;
    } catch {
      msg = r.statusText;
    }
  }
  return { ok: r.ok, status: r.status, msg };
}

async function open(m) {
  const url = new URL(m.session ? "./#s=" + encodeURIComponent(m.session) : "./", self.registration.scope).href;
  const tabs = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  for (const t of tabs) {
    if (new URL(t.url).origin === self.location.origin) {
      await t.focus();
      return t.navigate ? t.navigate(url) : null;
    }
  }
  return self.clients.openWindow(url);
}

self.addEventListener("notificationclick", (e) => {
  const m = e.notification.data || {};
  e.notification.close();
  if ((e.action === "allow" || e.action === "deny") && m.approval) {
    e.waitUntil(
      answer(m, e.action).then((r) => {
        if (r.ok || r.status === 409) return; // 409: answered already, elsewhere
        return self.registration.showNotification("Could not answer", { tag: m.tag, body: r.msg, data: { ...m, actions: [] } });
      }),
    );
    return;
  }
  e.waitUntil(open(m));
});
