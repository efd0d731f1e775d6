package prometheus_test

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// metrics are the series Tether exports (docs/operations.md, "Metrics"),
// histograms with their _bucket, _sum and _count series.
var metrics = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range []string{
		"tether_sessions", "tether_cli_starts_total", "tether_cli_start_failures_total", "tether_cli_exits_total",
		"tether_pending_approvals", "tether_tokens_total", "tether_cost_usd_total",
		"tether_browser_connections", "tether_browser_resyncs_total", "tether_browser_slow_drops_total",
		"tether_events_published_total", "tether_event_publish_retries_total",
		"tether_nats_connected", "tether_agent_capacity", "tether_agent_slots_used",
	} {
		m[n] = true
	}
	for _, h := range []string{"tether_turn_duration_seconds", "tether_approval_wait_seconds", "tether_event_publish_lag_seconds"} {
		for _, s := range []string{"_bucket", "_sum", "_count"} {
			m[h+s] = true
		}
	}
	return m
}()

// jobs are the scrape jobs the rules may name, all defined in
// prometheus.yml.
var jobs = []string{"tether-serve", "tether-agent", "tether-serve-readyz"}

type rules struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

var (
	metricRE = regexp.MustCompile(`\btether_[a-z0-9_]+`)
	jobRE    = regexp.MustCompile(`job\s*=\s*"([^"]*)"`)
)

// TestAlertsUseTetherMetrics catches what promtool cannot: a misspelt
// metric or job name is valid PromQL that never fires.
func TestAlertsUseTetherMetrics(t *testing.T) {
	b, err := os.ReadFile("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var r rules
	if err := yaml.UnmarshalStrict(b, &r); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range r.Groups {
		for _, rule := range g.Rules {
			names = append(names, rule.Alert)
			for _, m := range metricRE.FindAllString(rule.Expr, -1) {
				if !metrics[m] {
					t.Errorf("%s: %s is not a metric Tether exports", rule.Alert, m)
				}
			}
			for _, j := range jobRE.FindAllStringSubmatch(rule.Expr, -1) {
				if !slices.Contains(jobs, j[1]) {
					t.Errorf("%s: job %q is not a job of prometheus.yml", rule.Alert, j[1])
				}
			}
			if rule.Labels["severity"] == "" || rule.Annotations["summary"] == "" {
				t.Errorf("%s: want a severity label and a summary", rule.Alert)
			}
		}
	}
	for _, want := range []string{
		"TetherNATSDisconnected", "TetherAgentsFull", "TetherCLIStartFailures", "TetherEventPublishRetriesRising",
		"TetherEventPublishLagHigh", "TetherApprovalsWaitingLong", "TetherServeDown", "TetherServeNotReady",
	} {
		if !slices.Contains(names, want) {
			t.Errorf("no alert %s", want)
		}
	}
	cfg, err := os.ReadFile("prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if !strings.Contains(string(cfg), "job_name: "+j+"\n") {
			t.Errorf("prometheus.yml has no job %s", j)
		}
	}
}

// TestPromtool checks the rules and the configuration with Debian's
// promtool, and runs the rules' unit tests (alerts_test.yml: each alert
// fires on the series it is for, and not before its `for`).
func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("promtool: %v (CI=true: scripts/test.sh installs the prometheus package)", err)
		}
		t.Skipf("promtool: %v (apt-get install prometheus)", err)
	}
	for _, args := range [][]string{
		{"check", "rules", "alerts.yml"},
		{"check", "config", "prometheus.yml"},
		{"test", "rules", "alerts_test.yml"},
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
