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

// loadAgentTeam reads the team file. A configuration that asks for
// isolation (isolation: on, or auto with more than one person) is
// refused: this agent does not confine CLIs yet, and a team that wants
// isolation must not silently get sessions sharing one OS user.
func loadAgentTeam(path string) (*team.Config, error) {
	cfg, err := team.LoadConfig(path)
	if err != nil {
		return nil, err
	}
	if cfg.MultiUser() {
		return nil, fmt.Errorf("%s asks for isolation (isolation: %s, several people): this tether agent does not isolate sessions; set isolation: off to run every session as the agent's OS user", path, cfg.Isolation)
	}
	return cfg, nil
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
	audit, err := team.OpenAudit(ctx, js, &team.AuditOptions{Retention: cfg.Audit.Retention, Replicas: replicas, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("the team's audit log: %w", err)
	}
	authz := team.NewAuthorizer(cfg, st, &team.AuthorizerOptions{Recorder: audit, AllowBypass: allowBypass, Logger: log,
		SessionID: cluster.HostSessionID})
	return &agentTeam{authz: authz}, nil
}
