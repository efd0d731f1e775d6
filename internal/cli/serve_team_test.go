package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every team flag is refused, with a message naming what is missing,
// when it cannot work; none of them starts a server.
func TestServeTeamFlagRefusals(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "team.yaml")
	os.WriteFile(file, []byte("people:\n  - {email: a@example.com, role: admin}\nstate_dir: "+filepath.Join(dir, "state")+"\n"), 0o600)
	multi := filepath.Join(dir, "multi.yaml")
	os.WriteFile(multi, []byte("people:\n  - {email: a@example.com, role: admin}\n  - {email: b@example.com, role: member}\nstate_dir: "+filepath.Join(dir, "state")+"\n"), 0o600)
	t.Setenv(envOIDCSecret, "")
	teamBwrap = filepath.Join(dir, "no-bwrap")
	t.Cleanup(func() { teamBwrap = "" })
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--oidc-issuer", "http://127.0.0.1:1"}, "--oidc-issuer needs --team"},
		{[]string{"--public-url", "https://tether.example.com"}, "--public-url needs --team"},
		{[]string{"--proxy-header", "X-Forwarded-Email"}, "--proxy-header needs --team"},
		{[]string{"--oidc-client-id", "x"}, "--oidc-client-id needs --team"},
		{[]string{"--team", file}, "--team needs a way to sign in"},
		{[]string{"--team", file, "--proxy-header", "X-Forwarded-Email"}, "--proxy-header needs --trusted-proxy"},
		{[]string{"--team", file, "--oidc-issuer", "http://127.0.0.1:1", "--proxy-header", "X", "--trusted-proxy", "127.0.0.1"}, "exclude each other"},
		{[]string{"--team", file, "--oidc-issuer", "http://127.0.0.1:1", "--public-url", "http://127.0.0.1:7878"}, "--oidc-issuer needs --oidc-client-id"},
		{[]string{"--team", file, "--oidc-issuer", "http://127.0.0.1:1", "--oidc-client-id", "x"}, "--oidc-issuer needs --public-url"},
		{[]string{"--team", file, "--oidc-issuer", "http://127.0.0.1:1", "--oidc-client-id", "x", "--public-url", "tether"}, "--public-url \"tether\""},
		{[]string{"--team", file, "--oidc-client-id", "x", "--proxy-header", "X", "--trusted-proxy", "127.0.0.1"}, "need --oidc-issuer"},
		{[]string{"--team", file, "--proxy-name-header", "X-Name"}, "--team needs a way to sign in"},
		{[]string{"--team", multi, "--nats-embedded", "--nats-store", filepath.Join(dir, "nats"), "--proxy-header", "X", "--trusted-proxy", "127.0.0.1"}, "this machine cannot isolate sessions"},
		{[]string{"--team", filepath.Join(dir, "missing.yaml"), "--proxy-header", "X", "--trusted-proxy", "127.0.0.1"}, "--team:"},
		{[]string{"--team", multi, "--proxy-header", "X", "--trusted-proxy", "127.0.0.1"}, "this machine cannot isolate sessions"},
		{[]string{"--oidc-trust-unverified-email"}, "--oidc-trust-unverified-email needs --team"},
		{[]string{"--team", file, "--proxy-header", "X", "--trusted-proxy", "127.0.0.1", "--spares", "2"}, "--spares does not go with --team"},
		{[]string{"--team", file, "--proxy-header", "X", "--trusted-proxy", "127.0.0.1", "--oidc-trust-unverified-email"}, "--oidc-trust-unverified-email needs --oidc-issuer"},
		{[]string{"--team", file, "--oidc-issuer", "http://127.0.0.1:1", "--oidc-client-id", "x", "--public-url", "http://127.0.0.1:7878"}, "TETHER_OIDC_CLIENT_SECRET"},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"serve", "--addr", "127.0.0.1:0", "--cli", "/bin/true"}, c.args...)
		code := Main(context.Background(), args, strings.NewReader(""), &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), c.want) || strings.Contains(out.String(), "listening") {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errb.String(), c.want)
		}
	}
}
