//go:build unix

package proc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"2.1.197", "2.1.197", 0},
		{"2.1.197", "2.1.330", -1},
		{"2.1.330", "2.10.0", -1}, // numeric, not lexical
		{"2.10.0", "2.9.99", 1},
		{"10.0.0", "9.0.0", 1},
		{"2.1", "2.1.0", 0}, // missing fields are 0
		{"2.1", "2.1.1", -1},
		{"v2.1.197", "2.1.197", 0},
		{"2.1.197 (Claude Code)", "2.1.197", 0},
		{"2.1.197+build.5", "2.1.197", 0},
		{"02.001.0197", "2.1.197", 0},
		{"99999999999999999999.0", "1.0", 1}, // beyond int64
		// Pre-releases sort below their release, above the one before.
		{"2.1.197-beta.1", "2.1.197", -1},
		{"2.1.197-beta.1", "2.1.196", 1},
		{"2.1.197-alpha", "2.1.197-beta", -1},
		{"2.1.197-beta.2", "2.1.197-beta.10", -1},
		{"2.1.197-1", "2.1.197-alpha", -1}, // numbers below text
		{"2.1.197-beta", "2.1.197-beta.1", -1},
		{"2.1.197-rc.1", "2.1.197-rc.1", 0},
		// Text after a field's digits compares as text; never panics.
		{"2.1.197a", "2.1.197", 1},
		{"", "", 0},
		{"", "0.0.1", -1},
		{"garbage", "2.1.197", -1},
	} {
		if got := CompareVersions(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := CompareVersions(tc.b, tc.a); got != -tc.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d (antisymmetry)", tc.b, tc.a, got, -tc.want)
		}
	}
}

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		line, want string
		ok         bool
	}{
		{"2.1.197 (Claude Code)", "2.1.197", true},
		{"  1.0.3 (Claude Code)  ", "1.0.3", true},
		{"v2.0.0", "2.0.0", true},
		{"2.1.0-beta.3 (Claude Code)", "2.1.0-beta.3", true},
		{"Claude Code 2.1.197", "", false},
		{"2", "", false},
		{"", "", false},
		{"2.1.197;rm", "", false},
	} {
		got, ok := parseVersion(tc.line)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseVersion(%q) = %q, %v; want %q, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

// script writes an executable shell script.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestVersion(t *testing.T) {
	ctx := context.Background()
	v, err := Version(ctx, script(t, `echo "1.0.3 (Claude Code)"`))
	if err != nil || v != "1.0.3" {
		t.Errorf("Version = %q, %v; want 1.0.3", v, err)
	}

	_, err = Version(ctx, script(t, `echo "Welcome to Claude Code"`))
	if err == nil || !strings.Contains(err.Error(), "unexpected output") {
		t.Errorf("Version of a banner = %v; want an unexpected-output error", err)
	}

	_, err = Version(ctx, script(t, `echo "error: unknown option" >&2; exit 1`))
	if err == nil || !strings.Contains(err.Error(), "unknown option") {
		t.Errorf("Version of a failing CLI = %v; want its stderr in the error", err)
	}

	_, err = Version(ctx, filepath.Join(t.TempDir(), "missing"))
	if err == nil {
		t.Error("Version of a missing file succeeded")
	}

	// A hung CLI is bounded by ctx's deadline (without one, by the
	// internal cap, which is too long to test).
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = Version(short, script(t, `exec sleep 100`))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Version of a hung CLI = %v; want context.DeadlineExceeded", err)
	}
}

// TestVersionRemembered: a second probe of the same unchanged CLI does not
// run it again; a CLI replaced in place is probed afresh.
func TestVersionRemembered(t *testing.T) {
	ctx := context.Background()
	runs := filepath.Join(t.TempDir(), "runs")
	p := script(t, `echo x >> `+runs+`; echo "1.0.3 (Claude Code)"`)
	for range 3 {
		if v, err := Version(ctx, p); err != nil || v != "1.0.3" {
			t.Fatalf("Version = %q, %v; want 1.0.3", v, err)
		}
	}
	if b, _ := os.ReadFile(runs); strings.Count(string(b), "x") != 1 {
		t.Fatalf("the CLI ran %d times for three probes, want 1", strings.Count(string(b), "x"))
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho \"1.0.40 (Claude Code)\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if v, err := Version(ctx, p); err != nil || v != "1.0.40" {
		t.Fatalf("after replacing the CLI: Version = %q, %v; want 1.0.40", v, err)
	}
}
