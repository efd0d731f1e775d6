package cli

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/team"
)

// agentTeam is what `tether agent --team FILE` adds to an agent: the
// team's Authorizer on the cluster's JetStream (the ACLs every serve
// stores, the spend, the audit log), so that the agent checks each
// command, start and snapshot again where the session runs.
type agentTeam struct {
	authz *team.Authorizer
}

// loadAgentTeam reads the team file. A team that asks for isolation
// (isolation: on, or auto with more than one person) needs state_dir:
// the people's HOME and /tmp folders are kept there.
func loadAgentTeam(path string) (*team.Config, error) {
	cfg, err := team.LoadConfig(path)
	if err != nil {
		return nil, err
	}
	if cfg.MultiUser() && cfg.StateDir == "" {
		return nil, fmt.Errorf("%s asks for isolation (isolation: %s) and has no state_dir: each person's HOME and /tmp for their sessions are kept there; set state_dir, or isolation: off to run every session as the agent's OS user", path, cfg.Isolation)
	}
	return cfg, nil
}

// agentIsolation is the confinement of a team's sessions on this agent
// (nil when the team file does not ask for it), checked once: a machine
// where bubblewrap is missing or the kernel refuses its namespaces is
// refused at start-up, before the agent takes a session, rather than at
// each start. A team that asked for isolation never gets sessions
// sharing one OS user unconfined.
func agentIsolation(ctx context.Context, cfg *team.Config, bwrap string, log *slog.Logger) (*team.Isolation, error) {
	if !cfg.MultiUser() {
		return nil, nil
	}
	iso, err := team.NewIsolation(&team.IsolationOptions{Bwrap: bwrap, StateDir: cfg.StateDir, Logger: log})
	if err != nil {
		return nil, err
	}
	if err := iso.Check(ctx); err != nil {
		return nil, fmt.Errorf("the team file asks for isolation (isolation: %s) and this machine cannot give it: %w", cfg.Isolation, err)
	}
	return iso, nil
}

// openAgentTeam opens the team's store and audit log on nc's JetStream
// (created with replicas when missing).
func openAgentTeam(ctx context.Context, cfg *team.Config, nc *nats.Conn, replicas int, allowBypass bool, log *slog.Logger) (*agentTeam, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	st, err := team.OpenStore(ctx, js, &team.StoreOptions{Replicas: replicas, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("the team's store: %w", err)
	}
	audit, err := team.OpenAudit(ctx, js, &team.AuditOptions{Retention: cfg.Audit.Retention, MaxBytes: cfg.Audit.MaxBytes, Replicas: replicas, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("the team's audit log: %w", err)
	}
	authz := team.NewAuthorizer(cfg, st, &team.AuthorizerOptions{Recorder: audit, AllowBypass: allowBypass, Logger: log,
		SessionID: cluster.HostSessionID})
	return &agentTeam{authz: authz}, nil
}
