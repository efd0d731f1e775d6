package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/internal/natstest"
	"github.com/tetherhq/tether/team"
)

// auditServer is a one-machine team's JetStream as tether serve --team
// leaves it: an embedded server with token auth, described in a state
// folder's nats.json, holding an audit log.
type auditServer struct {
	url, token, state string
	js                jetstream.JetStream
	audit             *team.Audit
	mid               time.Time // between the first two events and the rest
}

func newAuditServer(t *testing.T, record bool) *auditServer {
	t.Helper()
	const token = "audit-test-token"
	ns := natstest.Start(t, &natstest.Options{Token: token})
	s := &auditServer{url: ns.ClientURL(), token: token, state: filepath.Join(t.TempDir(), "team")}
	if err := team.WriteLocalNATS(s.state, &team.LocalNATS{URL: s.url, Token: token}); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(s.url, nats.Token(token))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if s.js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	if !record {
		return s
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if s.audit, err = team.OpenAudit(ctx, s.js, nil); err != nil {
		t.Fatal(err)
	}
	rec := func(ev team.AuditEvent) {
		t.Helper()
		if err := s.audit.Record(ctx, &ev); err != nil {
			t.Fatal(err)
		}
	}
	rec(team.AuditEvent{Actor: "alice@example.com", ActorName: "Alice", Addr: "127.0.0.1:40000", Action: team.ActionSignIn, Outcome: team.OutcomeOK})
	rec(team.AuditEvent{Actor: "alice@example.com", Action: team.ActionStart, Session: "sess-1", Outcome: team.OutcomeOK, Detail: "cwd=/srv/work/alice"})
	s.mid = time.Now()
	rec(team.AuditEvent{Actor: "bob@example.com", Action: team.ActionPrompt, Session: "sess-1", Outcome: team.OutcomeRefused, Rule: "access",
		Detail: "not yours\x1b[31m\nforged line"})
	rec(team.AuditEvent{Actor: "alice@example.com", Action: team.ActionApproval, Session: "sess-1", Outcome: team.OutcomeOK, Tool: "Bash",
		InputDigest: strings.Repeat("0123456789abcdef", 4), Rule: "allow"})
	return s
}

func TestAuditCommandTable(t *testing.T) {
	s := newAuditServer(t, true)
	code, stdout, stderr := tether(t, "audit", "--state", s.state)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines:\n%s", len(lines), stdout)
	}
	header := lines[0]
	for _, col := range []string{"TIME", "ACTOR", "ACTION", "SESSION", "OUTCOME", "DETAIL"} {
		if !strings.Contains(header, col) {
			t.Errorf("header %q lacks %s", header, col)
		}
	}
	// Columns line up: each row's action and outcome start where the
	// header's do.
	for _, row := range lines[1:] {
		for _, col := range []string{"ACTION", "OUTCOME"} {
			at := strings.Index(header, col)
			if at >= len(row) || row[at-2:at] != "  " || row[at] == ' ' {
				t.Errorf("row %q: column %s not at %d", row, col, at)
			}
		}
	}
	for i, want := range []string{
		"alice@example.com  sign_in        -        ok",
		"session_start  sess-1   ok       cwd=/srv/work/alice",
		`bob@example.com    prompt         sess-1   refused  rule=access not yours\x1b[31m\nforged line`,
		"approval       sess-1   ok       tool=Bash rule=allow input=0123456789ab…",
	} {
		if !strings.Contains(lines[i+1], want) {
			t.Errorf("row %d %q lacks %q", i+1, lines[i+1], want)
		}
	}
	if !strings.Contains(lines[1], "from=127.0.0.1:40000") {
		t.Errorf("sign-in row lacks the address: %q", lines[1])
	}
	if strings.Contains(stdout, "\x1b") {
		t.Error("a control character reached the terminal")
	}
	if stderr != "" {
		t.Errorf("stderr: %q", stderr)
	}
}

func TestAuditCommandJSONLAndFilters(t *testing.T) {
	s := newAuditServer(t, true)
	jsonl := func(args ...string) []team.AuditEvent {
		t.Helper()
		code, stdout, stderr := tether(t, append([]string{"audit", "--state", s.state, "--jsonl"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		var evs []team.AuditEvent
		for line := range strings.Lines(stdout) {
			var ev team.AuditEvent
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("%v: line %q: %v", args, line, err)
			}
			evs = append(evs, ev)
		}
		return evs
	}
	actions := func(evs []team.AuditEvent) string {
		var a []string
		for _, e := range evs {
			a = append(a, e.Action)
		}
		return strings.Join(a, ",")
	}
	all := jsonl()
	if got := actions(all); got != "sign_in,session_start,prompt,approval" {
		t.Fatalf("all: %s", got)
	}
	if e := all[3]; e.Seq != 4 || e.Tool != "Bash" || e.InputDigest != strings.Repeat("0123456789abcdef", 4) || e.Time.IsZero() {
		t.Errorf("approval: %+v", e)
	}
	if e := all[2]; e.Detail != "not yours\x1b[31m\nforged line" || e.Outcome != team.OutcomeRefused {
		t.Errorf("JSONL keeps the detail as recorded (escaped by JSON): %+v", e)
	}
	rfc := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--actor", "Alice@Example.com"}, "sign_in,session_start,approval"},
		{[]string{"--session", "sess-1"}, "session_start,prompt,approval"},
		{[]string{"--action", "prompt"}, "prompt"},
		{[]string{"--since", rfc(s.mid)}, "prompt,approval"},
		{[]string{"--until", rfc(s.mid)}, "sign_in,session_start"},
		{[]string{"--since", "", "--until", rfc(s.mid)}, "sign_in,session_start"},
		{[]string{"--since", "7d"}, "sign_in,session_start,prompt,approval"},
		{[]string{"--until", "1h"}, ""},
		{[]string{"--actor", "alice@example.com", "--action", "approval", "--session", "sess-1"}, "approval"},
	} {
		if got := actions(jsonl(c.args...)); got != c.want {
			t.Errorf("%v: %s, want %s", c.args, got, c.want)
		}
	}

	code, stdout, stderr := tether(t, "audit", "--state", s.state, "--jsonl", "--limit", "2")
	if code != 0 || strings.Count(stdout, "\n") != 2 || !strings.Contains(stderr, "showing the first 2 events; there are more") {
		t.Errorf("--limit 2: %d %q %q", code, stdout, stderr)
	}
	code, stdout, stderr = tether(t, "audit", "--state", s.state, "--limit", "4")
	if code != 0 || strings.Count(stdout, "\n") != 5 || stderr != "" {
		t.Errorf("--limit 4 of 4: %d %q %q", code, stdout, stderr)
	}
	code, stdout, stderr = tether(t, "audit", "--state", s.state, "--action", "session_close")
	if code != 0 || stdout != "" || !strings.Contains(stderr, "no events match") {
		t.Errorf("nothing: %d %q %q", code, stdout, stderr)
	}

	// --nats with the token from the environment, as for tether agent.
	t.Setenv(envNATSToken, s.token)
	code, stdout, stderr = tether(t, "audit", "--nats", s.url, "--jsonl", "--action", "sign_in")
	if code != 0 || strings.Count(stdout, "\n") != 1 || !strings.Contains(stdout, `"actor_name":"Alice"`) {
		t.Errorf("--nats: %d %q %q", code, stdout, stderr)
	}
	t.Setenv(envNATSToken, "wrong")
	if code, _, stderr := tether(t, "audit", "--nats", s.url); code != 1 || !strings.Contains(stderr, "connecting to") {
		t.Errorf("wrong token: %d %q", code, stderr)
	}

	// A message on the audit subjects that is not an event is skipped
	// and said so.
	if _, err := s.js.Publish(context.Background(), "tether.v1.audit.prompt", []byte("junk")); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = tether(t, "audit", "--state", s.state, "--jsonl")
	if code != 0 || strings.Count(stdout, "\n") != 4 || !strings.Contains(stderr, "skipped 1 unreadable message") {
		t.Errorf("junk: %d %q %q", code, stdout, stderr)
	}
}

func TestAuditCommandRefusals(t *testing.T) {
	s := newAuditServer(t, false)
	dir := s.state
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "--state DIR"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"--state", dir, "--nats", "nats://127.0.0.1:1"}, "--state and --nats exclude each other"},
		{[]string{"--state", dir, "--nats-creds", "x.creds"}, "--state and --nats-creds exclude each other"},
		{[]string{"--nats-user", "u"}, "--nats-user goes with --nats URL"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--nats-cert", "c.pem"}, "--nats-cert and --nats-key go together"},
		{[]string{"--state", dir, "--since", "yesterday"}, `--since: "yesterday" is neither`},
		{[]string{"--state", dir, "--since", "-5h"}, "positive"},
		{[]string{"--state", dir, "--since", "xd"}, "is neither"},
		{[]string{"--state", dir, "--until", "soon"}, "--until:"},
		{[]string{"--state", dir, "--since", "1h", "--until", "2h"}, "is not after --since"},
		{[]string{"--state", dir, "--action", "launch"}, `--action "launch" is not one of sign_in`},
		{[]string{"--state", dir, "--limit", "-1"}, "--limit -1 is negative"},
		{[]string{"--state", dir, "--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"--state", dir, "--replicas", "3"}, "flag provided but not defined: -replicas"},
		{[]string{"--state", dir, "--heartbeat", "1s"}, "flag provided but not defined: -heartbeat"},
	} {
		code, stdout, stderr := tether(t, append([]string{"audit"}, c.args...)...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and %q", c.args, code, stdout, stderr, c.want)
		}
	}
	// Failures, not usage errors: no state file, no audit log yet.
	if code, _, stderr := tether(t, "audit", "--state", t.TempDir()); code != 1 || !strings.Contains(stderr, "no local JetStream") {
		t.Errorf("empty state folder: %d %q", code, stderr)
	}
	if code, _, stderr := tether(t, "audit", "--state", dir); code != 1 || !strings.Contains(stderr, "TETHER_AUDIT: not found") {
		t.Errorf("no log yet: %d %q", code, stderr)
	}
	// Reading never creates the stream.
	if _, err := s.js.Stream(context.Background(), team.StreamAudit); err == nil {
		t.Error("tether audit created the audit stream")
	}
	if code, stdout, _ := tether(t, "audit", "-h"); code != 0 || stdout != "" {
		t.Errorf("-h: %d", code)
	}
	if code, stdout, _ := tether(t, "help"); code != 0 || !strings.Contains(stdout, "audit     print a team's audit log") {
		t.Errorf("help lacks audit: %q", stdout)
	}
}
