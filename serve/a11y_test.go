package serve_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/chromedp/chromedp"
)

// Accessibility: every look of the UI that a browser test screenshots
// (tab.shot, tab.shots) is checked by axe-core, the rule engine browsers' own
// accessibility audits use: contrast, names of controls, headings, a
// control inside a control, regions that scroll but take no focus, …
// Any violation fails the test, with the rule, the element and axe's
// advice. axe-core is JavaScript from the npm registry, installed pinned
// outside the repository by scripts/install-axe.sh (scripts/test.sh runs
// it), and injected into the page only during the test: the UI itself
// loads nothing but its own files.

// axeVersion is the axe-core release the checks run; scripts/install-axe.sh
// installs the same by default.
const axeVersion = "4.14.1"

var axeSource = sync.OnceValues(func() (string, error) {
	path := os.Getenv("TETHER_AXE_PATH")
	if path == "" {
		// The script's rule, ${XDG_CACHE_HOME:-$HOME/.cache}, not
		// os.UserCacheDir's (which is another folder on macOS).
		cache := os.Getenv("TETHER_AXE_CACHE")
		if cache == "" {
			base := os.Getenv("XDG_CACHE_HOME")
			if base == "" {
				home, err := os.UserHomeDir()
				if err != nil {
					return "", err
				}
				base = filepath.Join(home, ".cache")
			}
			cache = filepath.Join(base, "tether", "axe")
		}
		path = filepath.Join(cache, axeVersion, "node_modules", "axe-core", "axe.min.js")
	}
	b, err := os.ReadFile(path)
	return string(b), err
})

var axeMissing sync.Once

// accessible runs axe-core on the page as it is now and fails the test on
// any violation. Pages of other origins (an identity provider's sign-in)
// are not ours to check. Without axe-core it fails under CI=true and is
// skipped, with a line saying how to install it, elsewhere.
func (tb *tab) accessible(name string) {
	tb.t.Helper()
	src, err := axeSource()
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.t.Fatalf("axe-core %s required under CI=true (scripts/install-axe.sh): %v", axeVersion, err)
		}
		axeMissing.Do(func() { tb.t.Logf("accessibility not checked: %v (scripts/install-axe.sh installs axe-core)", err) })
		return
	}
	if !tb.onOrigin() {
		return
	}
	var loaded bool
	tb.eval(`typeof window.axe === "object"`, &loaded)
	if !loaded {
		tb.run(chromedp.Evaluate(src, nil))
	}
	var out string
	tb.eval(`axe.run(document, {resultTypes: ["violations"]}).then((r) => JSON.stringify(r.violations.map((v) => ({
		id: v.id, impact: v.impact, help: v.help,
		nodes: v.nodes.map((n) => ({target: n.target.join(" "), summary: n.failureSummary})),
	}))))`, &out)
	var vs []struct {
		ID, Impact, Help string
		Nodes            []struct{ Target, Summary string }
	}
	if err := json.Unmarshal([]byte(out), &vs); err != nil {
		tb.t.Fatalf("%s: axe's answer: %v", name, err)
	}
	if len(vs) == 0 {
		return
	}
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "\n%s (%s): %s", v.ID, v.Impact, v.Help)
		for _, n := range v.Nodes {
			fmt.Fprintf(&b, "\n  %s\n    %s", n.Target, strings.ReplaceAll(n.Summary, "\n", "\n    "))
		}
	}
	tb.capture("inaccessible-" + name)
	tb.t.Errorf("%s: the page breaks %d accessibility rule(s):%s", name, len(vs), b.String())
}
