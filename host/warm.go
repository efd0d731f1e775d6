package host

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/telemetry"
)

// Warm spares. Where the CLI can be prewarmed (claude.Prewarm, CLI
// 2.1.330 and newer), a Manager's spares are parked CLIs that a start
// claims with its own per-session options (working directory, model,
// permission mode, appended system prompt, agents: claude.ClaimOptions),
// so a start that differs from the template only in those still gets a
// warm CLI. Where it cannot (an older CLI), spares are what they were:
// sessions started with the template, handed out only to Start(ctx, nil).

// prewarm starts a host session whose CLI is parked, awaiting its claim.
func prewarm(ctx context.Context, opts *Options, mt *telemetry.Host) (*Session, error) {
	s := newSession(opts)
	s.metrics = mt
	o := s.base
	sp, err := claude.Prewarm(ctx, &o)
	mt.CLIStarted(err)
	if err != nil {
		s.mu.Lock()
		s.closed, s.gone, s.cause = true, true, err
		s.transition()
		s.end()
		s.mu.Unlock()
		return nil, err
	}
	s.mu.Lock()
	s.spare = sp
	s.mu.Unlock()
	return s, nil
}

// isSpare reports whether s was prewarmed and is not claimed yet.
func (s *Session) isSpare() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spare != nil
}

// parked reports whether s is a parked spare whose CLI is still alive.
func (s *Session) parked() bool {
	s.mu.Lock()
	sp := s.spare
	s.mu.Unlock()
	if sp == nil {
		return false
	}
	select {
	case <-sp.Done():
		return false
	default:
		return true
	}
}

// claim binds a parked session to c; opts are the host options asked for
// (their Commands, Restart, InterruptTimeout and OnWake replace the
// template's).
// On failure the session is closed.
func (s *Session) claim(ctx context.Context, c *claude.ClaimOptions, opts *Options) error {
	s.mu.Lock()
	sp := s.spare
	s.spare = nil
	s.mu.Unlock()
	if sp == nil {
		return claude.ErrSpareSpent
	}
	cs, err := sp.Claim(ctx, c)
	if err != nil {
		sp.Close()
		s.Close()
		return err
	}
	cwd := c.Cwd
	if abs, err := filepath.Abs(cmpOr(cwd, ".")); err == nil {
		cwd = abs
	}
	s.mu.Lock()
	// What a restart (a cold Connect) needs to start the same session.
	b := &s.base
	b.Cwd, b.AddDirs, b.Model, b.PermissionMode = cwd, c.AddDirs, c.Model, c.PermissionMode
	b.MaxThinkingTokens, b.AppendSystemPrompt, b.Title, b.Agents = c.MaxThinkingTokens, c.AppendSystemPrompt, c.Title, c.Agents
	for k, v := range c.Env {
		b.Env[k] = v
	}
	s.info = sessionInfo{cwd: cwd, model: c.Model, mode: string(c.PermissionMode)}
	if opts != nil {
		s.opts.Commands, s.opts.Restart, s.opts.InterruptTimeout = opts.Commands, opts.Restart, opts.InterruptTimeout
		s.opts.OnWake = opts.OnWake
		s.wt = opts.wt
	}
	s.mu.Unlock()
	s.changes.begin(cwd)
	if opts != nil {
		s.continueChanges(opts.Continues, opts.ChangesFrom)
	}
	return s.attach(cs)
}

// claimFor returns the claim that makes a spare started with tmpl into a
// session started with want, or a *claude.NotClaimableError. Besides the
// CLI's options (claude.ClaimFor), the host options fixed when the spare
// was made (Journal, MessageBuffer) must match; Commands, Restart and
// InterruptTimeout are taken at the claim.
func claimFor(tmpl, want *Options) (*claude.ClaimOptions, error) {
	var a, b Options
	if tmpl != nil {
		a = *tmpl
	}
	if want != nil {
		b = *want
	}
	var diff []string
	if !reflect.DeepEqual(a.Journal, b.Journal) {
		diff = append(diff, "Journal")
	}
	if a.MessageBuffer != b.MessageBuffer {
		diff = append(diff, "MessageBuffer")
	}
	c, err := claude.ClaimFor(a.CLI, b.CLI)
	var ne *claude.NotClaimableError
	if errors.As(err, &ne) {
		ne.Fields = append(diff, ne.Fields...)
		return nil, ne
	}
	if err != nil {
		return nil, err
	}
	if len(diff) > 0 {
		return nil, &claude.NotClaimableError{Fields: diff}
	}
	if c.Cwd == "" {
		c.Cwd, _ = os.Getwd()
	}
	return c, nil
}
