// conn.js: the page's one WebSocket to the server, reconnecting.
//
// It reconnects with capped, jittered backoff and says so through
// onStatus, honestly: "connecting", "live", "retry" (with the time of the
// next attempt) or "down" (the server refused us: log in again). Requests
// carry an id and resolve with the server's reply of the same id; those
// still waiting when the socket drops fail at once (the caller decides
// whether to retry — commands are not replayed blindly, since an
// approval answered twice is not the same as once).

/** queuedWaitMs is how long a request told it is queued waits for its
 * reply, from its latest "queued" frame: the server withdraws it first
 * (1 minute by default), or the socket ends. */
const queuedWaitMs = 180000;

export class Conn {
  /**
   * @param {string} url ws:// or wss:// URL
   * @param {{onMessage:(m:any)=>void, onStatus:(s:string, info?:any)=>void, onOpen:()=>void}} h
   */
  constructor(url, h) {
    this.url = url;
    this.h = h;
    this.ws = null;
    this.next = 1;
    this.pending = new Map();
    this.backoff = 0;
    this.timer = 0;
    this.closed = false;
    this.status = "";
  }

  setStatus(s, info) {
    this.status = s;
    this.h.onStatus(s, info);
  }

  open() {
    if (this.closed) return;
    clearTimeout(this.timer);
    this.setStatus("connecting");
    let ws;
    try {
      ws = new WebSocket(this.url);
    } catch (e) {
      this.retry();
      return;
    }
    this.ws = ws;
    let opened = false;
    ws.onopen = () => {
      opened = true;
      this.backoff = 0;
      this.setStatus("live");
      this.h.onOpen();
    };
    ws.onmessage = (e) => {
      let m;
      try {
        m = JSON.parse(e.data);
      } catch {
        console.warn("tether: bad frame from server");
        return;
      }
      if (m && m.type === "queued" && m.id != null && this.pending.has(m.id)) {
        // A start, or a command waking a session, waiting for room in a
        // cluster: the server has it and ends it by its own bound, so
        // ours waits longer; tell whoever asked.
        const p = this.pending.get(m.id);
        p.rearm(queuedWaitMs);
        if (p.onQueued) p.onQueued(m.position);
        return;
      }
      if (m && m.id != null && this.pending.has(m.id) && isReply(m)) {
        const p = this.pending.get(m.id);
        this.pending.delete(m.id);
        if (m.error) p.reject(new ServerError(m.error));
        else p.resolve(m.result ?? m.data ?? m);
        return;
      }
      this.h.onMessage(m);
    };
    ws.onclose = (e) => {
      if (this.ws !== ws) return;
      this.ws = null;
      for (const p of this.pending.values()) p.reject(new Error("connection lost"));
      this.pending.clear();
      if (this.closed) return;
      if (signedOut(e)) {
        // The server ended our sign-in (signed out here or in another
        // tab, or revoked): reconnecting cannot help.
        this.closed = true;
        this.setStatus("down", { reason: "signed out", closed: true });
        return;
      }
      if (!opened && this.h.onRefused) {
        // Never opened: the server may be gone, or may refuse us (a 401
        // on the upgrade is invisible to a page); the app finds out.
        this.h.onRefused().then((signedOut) => {
          if (signedOut) this.setStatus("down", { reason: "signed out" });
          else this.retry();
        });
        return;
      }
      this.retry();
    };
  }

  retry() {
    if (this.closed) return;
    this.backoff = Math.min(this.backoff ? this.backoff * 2 : 500, 15000);
    const wait = this.backoff / 2 + Math.random() * (this.backoff / 2);
    this.setStatus("retry", { at: Date.now() + wait });
    this.timer = setTimeout(() => this.open(), wait);
  }

  /** retryNow skips the backoff (the user asked, or the page came back). */
  retryNow() {
    if (!this.ws && !this.closed) this.open();
  }

  get live() {
    return !!this.ws && this.ws.readyState === WebSocket.OPEN;
  }

  /** send writes a frame without waiting for a reply. */
  send(m) {
    if (!this.live) return false;
    this.ws.send(JSON.stringify(m));
    return true;
  }

  /** request sends m with a fresh id and resolves with the reply;
   * onQueued(position) hears its "queued" frames (a start, or a command
   * waking a session, waiting for room). */
  request(m, timeoutMs = 30000, onQueued) {
    if (!this.live) return Promise.reject(new Error("not connected"));
    const id = this.next++;
    return new Promise((resolve, reject) => {
      const expire = () => {
        this.pending.delete(id);
        reject(new Error("no reply from the server"));
      };
      let t = setTimeout(expire, timeoutMs);
      this.pending.set(id, {
        onQueued,
        rearm: (ms) => {
          clearTimeout(t);
          t = setTimeout(expire, ms);
        },
        resolve: (v) => {
          clearTimeout(t);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(t);
          reject(e);
        },
      });
      this.ws.send(JSON.stringify({ ...m, id }));
    });
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    if (this.ws) this.ws.close();
  }
}

/** signedOut reports whether a close event says our sign-in ended: code
 * 4401 (docs/serve-protocol.md), or 1008 "signed out" from older servers. */
export function signedOut(e) {
  return e.code === 4401 || (e.code === 1008 && e.reason === "signed out");
}

function isReply(m) {
  return m.type === "reply" || m.type === "result" || m.type === "error" || m.type === "ok" || "result" in m || "error" in m;
}

/** ServerError is an error reply: code and message from the protocol. */
export class ServerError extends Error {
  constructor(e) {
    super(typeof e === "string" ? e : e.message || e.code || "error");
    this.code = typeof e === "object" ? e.code : undefined;
  }
}
