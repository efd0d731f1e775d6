// Package team makes one Tether host serve many people: who they are
// (OpenID Connect login or a trusted proxy's header), what they may touch
// (roles, sessions owned and shared, a policy per role or person), where
// their sessions run (each person's CLI confined to its working
// directory, in their own HOME: SessionPolicy) and
// a record of who did what (an append-only audit log in JetStream).
//
// The single-user token mode of tether serve does not use this package:
// nothing changes for one person on one machine.
//
// Authorization has one entry point, Authorizer, which plugs into the
// command layer (host.CommandPolicy.Authorize) where a session runs and
// is asked by the front end for every list, subscribe, snapshot and
// history read. The identity travels in a context.Context (NewContext,
// FromContext), across the cluster inside each command.
package team
