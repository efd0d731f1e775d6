package cli

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/natstest"
	"github.com/tetherhq/tether/team"
)

// A team file that cannot be read, is wrong, or asks for isolation
// without a state_dir for the people's HOME and /tmp is refused before
// anything starts.
func TestAgentTeamFileRefused(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct{ file, want string }{
		{filepath.Join(dir, "missing.yaml"), "missing.yaml"},
		{write("bad.yaml", "people: []\nfrobnicate: 1\n"), "frobnicate"},
		{write("iso.yaml", "people:\n  - {email: a@example.com, role: admin}\n  - {email: b@example.com, role: member}\n"), "no state_dir"},
	} {
		code, _, stderr := tether(t, "agent", "--nats", "nats://127.0.0.1:1", "--team", c.file)
		if code != 2 || !strings.Contains(stderr, "--team") || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, %q; want 2 and %q", c.file, code, stderr, c.want)
		}
	}
}

// A team file that asks for isolation on a machine that cannot give it
// (here: no bubblewrap where --bwrap says) stops the agent at start-up
// with bubblewrap's absence named, before it connects or takes a
// session: the team never gets unconfined sessions.
func TestAgentTeamIsolationUnavailable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "team.yaml")
	body := "people:\n  - {email: a@example.com, role: admin}\nisolation: \"on\"\nstate_dir: " + filepath.Join(dir, "state") + "\n"
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := tether(t, "agent", "--nats", "nats://127.0.0.1:1", "--team", file, "--bwrap", filepath.Join(dir, "no-bwrap"), "--http-addr", "off")
	if code != 1 || !strings.Contains(stderr, "cannot give it") || !strings.Contains(stderr, "bubblewrap not found") || stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 1 and bubblewrap not found", code, stdout, stderr)
	}
}

// `tether agent --team FILE` checks what comes over the bus: a start
// without an identity, or one outside the person's roots, is refused by
// the agent itself.
func TestAgentTeamFlag(t *testing.T) {
	ns := natstest.Start(t, nil)
	root := t.TempDir()
	file := filepath.Join(t.TempDir(), "team.yaml")
	os.WriteFile(file, []byte("people:\n  - {email: alice@example.com, role: member}\npolicies:\n  member: {cwd_roots: [\""+root+"\"]}\n"), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	actx, stop := context.WithCancel(ctx)
	done := make(chan int, 1)
	out, outW := io.Pipe()
	var stderr strings.Builder
	go func() {
		defer outW.Close()
		done <- Main(actx, []string{"agent", "--nats", ns.ClientURL(), "--id", "team-agent", "--cli", "/bin/true",
			"--cwd", root, "--heartbeat", "300ms", "--http-addr", "off", "--team", file}, strings.NewReader(""), outW, &stderr)
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.Contains(line, "tether agent team-agent") {
		stop()
		<-done
		t.Fatalf("agent said %q, %v; stderr %q", line, err, stderr.String())
	}
	go io.Copy(io.Discard, out)
	defer func() {
		stop()
		if code := <-done; code != 0 {
			t.Errorf("agent exit %d: %s", code, stderr.String())
		}
	}()
	c, err := cluster.NewClient(ctx, &cluster.ClientOptions{URL: ns.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	alice := team.NewContext(ctx, &team.Identity{Subject: "alice@example.com", Role: team.RoleMember})
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"anonymous", ctx, "no identity"},
		{"outside the roots", alice, "outside your roots"},
	} {
		_, err := c.Start(tc.ctx, &cluster.StartOptions{Cwd: t.TempDir()})
		if !errors.Is(err, host.ErrForbidden) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want forbidden: %s", tc.name, err, tc.want)
		}
	}
}
