// Package serve is tether serve: Claude Code sessions in the browser (or
// any other front end), from one Go binary.
//
// A Server is an http.Handler serving the embedded web UI, a login
// endpoint, a few JSON endpoints and one WebSocket per client, speaking
// the protocol written down in docs/serve-protocol.md. It reaches
// sessions only through a Backend: NewLocalBackend runs them in this
// process on a host.Manager; a cluster can provide one that reaches
// sessions on other machines.
//
// # Guarantees
//
// Every event of a session carries its journal sequence number (see
// host.Session.Events); a client that subscribes with the last number it
// saw gets exactly the events after it, or a snapshot followed by the
// events after the snapshot when it is too far behind. Each client has a
// bounded queue (Options.ClientQueue) and one writer with a per-write
// timeout (Options.WriteTimeout): a slow client's subscriptions wait
// while the session's journal moves on, so it never slows a session or
// another client, and it catches up through a snapshot. Sessions run
// whether or not a client is connected.
//
// # Transcript items
//
// A client that subscribes with items gets, in place of the CLI's raw
// stdout lines, the Items a transcript shows (prompts, text and thinking
// as they grow, tool calls with their input completed from the partial
// JSON typed so far, tool results, notices, turn ends), derived here by
// an Itemizer per subscription from whichever Backend's events, under
// the sequence numbers of the events they come from. The embedded UI
// renders from them; clients that do not ask get the frames of before.
//
// # Security
//
// On by default and not optional: a login token from crypto/rand,
// exchanged (POST /auth) for an HttpOnly, SameSite=Strict cookie, or
// sent as a bearer token by programs, and never accepted in a query
// string; the Host header checked against Options.AllowedHosts (DNS
// rebinding); the Origin header, when present, checked to be the
// server's own on every request, and required with a cookie on upgrades
// and state-changing requests (cross-site WebSocket hijacking); no CORS;
// failed logins rate-limited per address and in all; no token, cookie or
// prompt in the log; approvals stay on (bypassPermissions only with
// LocalOptions.AllowBypassPermissions). Binding and TLS are the
// listener's business: `tether serve` binds loopback by default and
// refuses another address without TLS.
package serve
