// Package cluster runs Claude Code sessions on many machines over NATS
// JetStream: start a session wherever there is room, watch it and answer
// its approvals from anywhere, replay what a browser missed, know within a
// few heartbeats when a machine died, and resume its sessions elsewhere
// with their conversations.
//
// # Agents
//
// An Agent runs on every machine that runs CLIs. It wraps a host.Manager,
// dials out to NATS only, and
//
//   - takes "start session" requests from a JetStream work queue, one at a
//     time and only while it has room (AgentOptions.Capacity);
//   - publishes every event of each session's host journal, with the
//     journal's sequence numbers, to the session's subject of one stream,
//     each publish fenced on the session's last message there (so no
//     number is ever used twice, even after a client marked the session
//     disconnected while the agent was frozen) and deduplicated by message
//     id (so retries after a NATS restart store nothing twice);
//   - serves commands (send, interrupt, answer an approval, cancel a queued
//     prompt, set model or mode, close, snapshot) by request/reply on the
//     session's subject;
//   - keeps the registry current: its own entry in a key-value bucket whose
//     TTL is three heartbeats, and an entry per session (owner, state, last
//     event, cost);
//   - mirrors each CLI's session file into a stream, so that another agent
//     can restore it before --resume when this one dies.
//
// # Clients
//
// A Client uses the cluster from anywhere: Sessions and Agents list it,
// Start asks for a session, Events follows one from any sequence number
// with the host journal's resync contract (skipping, and counting in
// Skipped, messages it cannot decode or that the session's agents did not
// publish), Snapshot, Command, and Resume
// fails a session of a dead agent over. NewBackend makes a Client the
// serve.Backend of `tether serve --nats`.
//
// # The wire
//
// Subjects, streams and buckets are versioned (tether.v1.…, TETHER_V1_…,
// tether_v1_…). Every message and record carries the wire revision of the
// release that wrote it (the Tether-Wire header; none: revision 1), and a
// release speaks to each process in that process's revision, so that two
// releases run side by side during an upgrade (docs/cluster.md,
// "Compatibility"). Every message read from the bus is size-checked and
// decoded before it has any effect: fields it does not know are ignored;
// a refused one gets a *MessageError or *CommandError matching
// ErrMalformed or ErrTooLarge, or an *UnsupportedError (ErrUnsupported)
// when it names an operation this release does not know or lacks what it
// needs. NATS auth and TLS
// are nats.Options, passed through (AgentOptions.NATS, ClientOptions.NATS).
// Logs carry ids, states and sizes, never prompts or payloads.
//
// docs/cluster.md describes deployments, limits and what failover does and
// does not recover.
package cluster
