package systemd_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// unit is a parsed unit file: section → key → values, in order (a key may
// repeat; an empty assignment is kept as "").
type unit map[string]map[string][]string

// parse reads the INI dialect of systemd.syntax(7): comments (# and ;),
// [Section] headers, Key=Value lines, and lines continued by a trailing
// backslash. Anything else is an error, so that a typo does not pass.
func parse(path string) (unit, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	u := unit{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		for strings.HasSuffix(line, `\`) && sc.Scan() {
			n++
			next := strings.TrimSpace(sc.Text())
			if strings.HasPrefix(next, "#") || strings.HasPrefix(next, ";") {
				continue
			}
			line = strings.TrimSuffix(line, `\`) + " " + next
		}
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			if u[section] != nil {
				return nil, fmt.Errorf("%s:%d: section [%s] twice", path, n, section)
			}
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				return nil, fmt.Errorf("%s:%d: not a Key=Value line in a section: %q", path, n, line)
			}
			k = strings.TrimSpace(k)
			u[section][k] = append(u[section][k], strings.Join(strings.Fields(v), " "))
		}
	}
	return u, sc.Err()
}

// one returns a key's only value, failing the test when it is missing or
// repeated.
func (u unit) one(t *testing.T, section, key string) string {
	t.Helper()
	v := u[section][key]
	if len(v) != 1 {
		t.Errorf("[%s] %s: %d assignments %q, want exactly one", section, key, len(v), v)
		return ""
	}
	return v[0]
}

// span parses a systemd time span of one number and unit ("6min", "5m",
// "30s", "90").
func span(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	for _, r := range [][2]string{{"min", "m"}, {"sec", "s"}, {"hr", "h"}} {
		if strings.HasSuffix(s, r[0]) {
			s = strings.TrimSuffix(s, r[0]) + r[1]
		}
	}
	if s != "" && strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) < 0 {
		s += "s"
	}
	return time.ParseDuration(s)
}

// flag returns the value of --name in a command line ("--name v" or
// "--name=v"), and whether it is there.
func flag(args []string, name string) (string, bool) {
	for i, a := range args {
		if a == "--"+name || a == "-"+name {
			if i+1 < len(args) {
				return args[i+1], true
			}
			return "", true
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func under(p string, roots []string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}

func TestUnits(t *testing.T) {
	for _, tc := range []struct {
		file     string
		command  string
		writable []string
	}{
		{"tether-agent.service", "agent", []string{"/var/lib/tether", "/srv/tether/workspaces"}},
		{"tether-serve.service", "serve", []string{"/var/lib/tether"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			u, err := parse(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{"Unit", "Service", "Install"} {
				if u[s] == nil {
					t.Errorf("no [%s] section", s)
				}
			}
			want := map[string]string{
				"User": "tether", "Group": "tether", "DynamicUser": "no",
				"ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
				"NoNewPrivileges": "yes", "CapabilityBoundingSet": "", "AmbientCapabilities": "",
				"KillSignal": "SIGTERM", "Restart": "on-failure",
			}
			for k, v := range want {
				if got := u.one(t, "Service", k); got != v {
					t.Errorf("%s=%q, want %q", k, got, v)
				}
			}
			if ef := u.one(t, "Service", "EnvironmentFile"); !strings.HasPrefix(ef, "/etc/tether/") {
				t.Errorf("EnvironmentFile=%q, want a file in /etc/tether (secrets stay out of the world-readable unit)", ef)
			}
			for _, e := range u["Service"]["Environment"] {
				if up := strings.ToUpper(e); strings.Contains(up, "PASSWORD") || strings.Contains(up, "TOKEN") || strings.Contains(up, "API_KEY") {
					t.Errorf("Environment=%s: a secret in the unit file; it belongs in the EnvironmentFile", e)
				}
			}

			rw := strings.Fields(u.one(t, "Service", "ReadWritePaths"))
			if !slices.Equal(rw, tc.writable) {
				t.Errorf("ReadWritePaths=%q, want exactly %q", rw, tc.writable)
			}
			home := ""
			for _, e := range u["Service"]["Environment"] {
				if v, ok := strings.CutPrefix(e, "HOME="); ok {
					home = v
				}
			}
			if !under(home, rw) {
				t.Errorf("HOME=%q is not writable (ReadWritePaths %q): the CLI writes its config and transcripts there", home, rw)
			}
			if wd := u.one(t, "Service", "WorkingDirectory"); !under(wd, rw) {
				t.Errorf("WorkingDirectory=%q is not among the writable paths %q", wd, rw)
			}

			args := strings.Fields(u.one(t, "Service", "ExecStart"))
			if len(args) < 2 || args[0] != "/usr/local/bin/tether" || args[1] != tc.command {
				t.Fatalf("ExecStart=%q, want /usr/local/bin/tether %s …", args, tc.command)
			}
			if cwd, ok := flag(args, "cwd"); ok && !under(cwd, rw) {
				t.Errorf("--cwd %s is not writable (ReadWritePaths %q)", cwd, rw)
			}
			stop, err := span(u.one(t, "Service", "TimeoutStopSec"))
			if err != nil {
				t.Fatalf("TimeoutStopSec: %v", err)
			}
			if tc.command != "agent" {
				return
			}
			if addr, _ := flag(args, "http-addr"); addr != "127.0.0.1:9464" {
				t.Errorf("--http-addr %q, want 127.0.0.1:9464 (metrics and probes)", addr)
			}
			drain := 5 * time.Minute // the agent's default
			if v, ok := flag(args, "drain-timeout"); ok {
				if drain, err = time.ParseDuration(v); err != nil {
					t.Fatalf("--drain-timeout %q: %v", v, err)
				}
			}
			if stop <= drain {
				t.Errorf("TimeoutStopSec %v is not longer than the drain timeout %v: systemd would kill the turns the drain waits for", stop, drain)
			}
			if km := u.one(t, "Service", "KillMode"); km != "mixed" {
				t.Errorf("KillMode=%q, want mixed: SIGTERM to tether alone, or every CLI of the cgroup dies at once instead of draining", km)
			}
		})
	}
}

// TestSystemdAnalyzeVerify runs systemd-analyze verify on both units, with
// tether's path pointed at an executable that exists here (verify checks
// it). Any warning (an unknown key or section, a bad value) fails.
func TestSystemdAnalyzeVerify(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("systemd-analyze: %v (CI=true: scripts/test.sh installs systemd)", err)
		}
		t.Skipf("systemd-analyze: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var files []string
	for _, f := range []string{"tether-agent.service", "tether-serve.service"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.ReplaceAll(b, []byte("/usr/local/bin/tether "), []byte(exe+" "))
		p := filepath.Join(dir, f)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	cmd := exec.Command(sa, append([]string{"verify", "--man=no"}, files...)...)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
