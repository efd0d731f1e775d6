// Command compatreport reads the `go test -json` output of
// scripts/compat.sh's runs and says what differs between a CLI version
// under trial and the newest pinned one.
//
//	compatreport rerun NEW.json
//	compatreport report -version V -pinned P NEW.json [PINNED.json]
//
// rerun prints one line per package with failing tests, "package<TAB>-run
// pattern", matching just those tests, so that compat.sh can run them
// again on the pinned version (a full second run would double the time).
// report prints the counts, each failing test with the first lines of its
// output, and, given the pinned run, which failures are the new version's
// own (the test passes on the pinned one) and which fail on both. It
// exits 1 when the new run failed anywhere, 2 on bad input.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = "usage: compatreport rerun NEW.json | compatreport report -version V -pinned P NEW.json [PINNED.json]"

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	switch args[0] {
	case "rerun":
		if len(args) != 2 {
			fmt.Fprintln(stderr, usage)
			return 2
		}
		r, err := readRun(args[1])
		if err != nil {
			fmt.Fprintln(stderr, "compatreport:", err)
			return 2
		}
		for _, pkg := range r.failedPackages() {
			fmt.Fprintf(stdout, "%s\t%s\n", pkg, r.rerunPattern(pkg))
		}
		return 0
	case "report":
		fs := flag.NewFlagSet("compatreport report", flag.ContinueOnError)
		fs.SetOutput(stderr)
		version := fs.String("version", "", "the CLI version under trial")
		pinned := fs.String("pinned", "", "the newest pinned CLI version")
		if err := fs.Parse(args[1:]); err != nil {
			return 2
		}
		if fs.NArg() < 1 || fs.NArg() > 2 {
			fmt.Fprintln(stderr, usage)
			return 2
		}
		newRun, err := readRun(fs.Arg(0))
		if err != nil {
			fmt.Fprintln(stderr, "compatreport:", err)
			return 2
		}
		var pinnedRun *testRun
		if fs.NArg() == 2 {
			if pinnedRun, err = readRun(fs.Arg(1)); err != nil {
				fmt.Fprintln(stderr, "compatreport:", err)
				return 2
			}
		}
		return report(stdout, *version, *pinned, newRun, pinnedRun)
	}
	fmt.Fprintln(stderr, usage)
	return 2
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// key names a test: its package and its full name ("TestX/sub").
type key struct{ pkg, test string }

// maxOutputLines bounds what is kept of one test's output: the report
// shows only its first lines, so later ones are dropped.
const maxOutputLines = 200

// testRun is one `go test -json` run, reduced to each test's outcome and
// the start of its output.
type testRun struct {
	result  map[key]string   // "pass", "fail" or "skip"; the package itself under test ""
	output  map[key][]string // the first maxOutputLines lines
	order   []key            // in the order the tests first appeared
	garbage []string         // lines that are not JSON (build errors), the first maxOutputLines
}

func readRun(path string) (*testRun, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseRun(f)
}

// parseRun reads a `go test -json` stream. Lines that are not JSON (what
// the go command prints on its own, such as a build failure) are kept
// apart rather than refused.
func parseRun(r io.Reader) (*testRun, error) {
	tr := &testRun{result: map[key]string{}, output: map[key][]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			if len(tr.garbage) < maxOutputLines && len(strings.TrimSpace(string(line))) > 0 {
				tr.garbage = append(tr.garbage, string(line))
			}
			continue
		}
		k := key{ev.Package, ev.Test}
		if _, seen := tr.output[k]; !seen {
			tr.output[k] = nil
			tr.order = append(tr.order, k)
		}
		switch ev.Action {
		case "pass", "fail", "skip":
			tr.result[k] = ev.Action
		case "output", "build-output":
			if len(tr.output[k]) < maxOutputLines {
				tr.output[k] = append(tr.output[k], strings.TrimRight(ev.Output, "\n"))
			}
		case "build-fail":
			tr.result[key{ev.Package, ""}] = "fail"
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading go test -json output: %w", err)
	}
	if len(tr.order) == 0 && len(tr.garbage) == 0 {
		return nil, errors.New("no go test -json output")
	}
	return tr, nil
}

// failedLeaves are the failing tests none of whose subtests failed: the
// tests that hold the failure, not the parents that fail because of them.
func (tr *testRun) failedLeaves() []key {
	var out []key
	for _, k := range tr.order {
		if k.test == "" || tr.result[k] != "fail" {
			continue
		}
		child := false
		for k2, res := range tr.result {
			if res == "fail" && k2.pkg == k.pkg && strings.HasPrefix(k2.test, k.test+"/") {
				child = true
				break
			}
		}
		if !child {
			out = append(out, k)
		}
	}
	return out
}

// skipped are the skipped tests, in order.
func (tr *testRun) skipped() []key {
	var out []key
	for _, k := range tr.order {
		if k.test != "" && tr.result[k] == "skip" {
			out = append(out, k)
		}
	}
	return out
}

// failedPackages are the packages that failed, in order.
func (tr *testRun) failedPackages() []string {
	var out []string
	for _, k := range tr.order {
		if k.test == "" && tr.result[k] == "fail" && !slices.Contains(out, k.pkg) {
			out = append(out, k.pkg)
		}
	}
	return out
}

// bareFailures are the packages that failed with no failing test: a
// build error, a panic outside a test, leaked goroutines in TestMain.
func (tr *testRun) bareFailures() []string {
	var out []string
	for _, pkg := range tr.failedPackages() {
		if !slices.ContainsFunc(tr.failedLeaves(), func(k key) bool { return k.pkg == pkg }) {
			out = append(out, pkg)
		}
	}
	return out
}

// rerunPattern is a -run pattern for pkg's failing tests: one alternation
// per level of the names. A level's alternation applies to every test at
// that level, so it may select a few more tests than failed (TestA/x when
// TestA/y and TestB/x failed), never fewer. A package that failed outside
// any test gets "RealCLI", the whole trial again.
func (tr *testRun) rerunPattern(pkg string) string {
	var levels [][]string
	for _, k := range tr.failedLeaves() {
		if k.pkg != pkg {
			continue
		}
		for i, part := range strings.Split(k.test, "/") {
			if i == len(levels) {
				levels = append(levels, nil)
			}
			if q := "^" + regexp.QuoteMeta(part) + "$"; !slices.Contains(levels[i], q) {
				levels[i] = append(levels[i], q)
			}
		}
	}
	if len(levels) == 0 {
		return "RealCLI"
	}
	parts := make([]string, len(levels))
	for i, alts := range levels {
		parts[i] = "(" + strings.Join(alts, "|") + ")"
	}
	return strings.Join(parts, "/")
}

// firstLines are the first n lines of a failing test's output that say
// something: the go command's own "=== RUN", "--- FAIL" and such are
// left out.
func (tr *testRun) firstLines(k key, n int) []string {
	var out []string
	for _, l := range tr.output[k] {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- ") {
			continue
		}
		if out = append(out, l); len(out) == n {
			break
		}
	}
	return out
}

// counts counts the tests without subtests (a parent's outcome is its
// subtests').
func (tr *testRun) counts() (pass, fail, skip int) {
	parents := map[key]bool{}
	for k := range tr.result {
		if i := strings.LastIndexByte(k.test, '/'); i > 0 {
			parents[key{k.pkg, k.test[:i]}] = true
		}
	}
	for k, r := range tr.result {
		if k.test == "" || parents[k] {
			continue
		}
		switch r {
		case "pass":
			pass++
		case "fail":
			fail++
		case "skip":
			skip++
		}
	}
	return
}

func report(w io.Writer, version, pinned string, newRun, pinnedRun *testRun) int {
	pass, fail, skip := newRun.counts()
	fmt.Fprintf(w, "== CLI %s: %d passed, %d failed, %d skipped\n", version, pass, fail, skip)
	for _, k := range newRun.skipped() {
		reason := newRun.firstLines(k, 1)
		if len(reason) == 0 {
			reason = []string{"(no reason given)"}
		}
		fmt.Fprintf(w, "skipped: %s %s: %s\n", k.pkg, k.test, strings.TrimSpace(reason[0]))
	}
	leaves := newRun.failedLeaves()
	bare := newRun.bareFailures()
	if len(leaves) == 0 && len(bare) == 0 {
		fmt.Fprintf(w, "every real-CLI test passes on %s\n", version)
		return 0
	}
	for _, k := range leaves {
		fmt.Fprintf(w, "\nFAIL %s %s\n", k.pkg, k.test)
		for _, l := range newRun.firstLines(k, 5) {
			fmt.Fprintf(w, "    %s\n", strings.TrimSpace(l))
		}
	}
	for _, pkg := range bare {
		fmt.Fprintf(w, "\nFAIL %s (outside any test)\n", pkg)
		lines := newRun.firstLines(key{pkg, ""}, 10)
		if len(lines) == 0 {
			lines = newRun.garbage[:min(len(newRun.garbage), 10)]
		}
		for _, l := range lines {
			fmt.Fprintf(w, "    %s\n", strings.TrimSpace(l))
		}
	}
	if pinnedRun == nil {
		return 1
	}
	var regressed, both, unknown []string
	for _, k := range leaves {
		name := k.pkg + " " + k.test
		switch pinnedRun.result[k] {
		case "pass":
			regressed = append(regressed, name)
		case "fail":
			both = append(both, name)
		default:
			unknown = append(unknown, name)
		}
	}
	fmt.Fprintf(w, "\n== compared with the pinned CLI %s (the failing tests run again on it)\n", pinned)
	section := func(title string, names []string) {
		if len(names) == 0 {
			return
		}
		fmt.Fprintf(w, "%s:\n", title)
		for _, n := range names {
			fmt.Fprintf(w, "    %s\n", n)
		}
	}
	section(fmt.Sprintf("pass on %s, fail on %s (what %s changed)", pinned, version, version), regressed)
	section(fmt.Sprintf("fail on both (not a version difference: flaky, or broken on %s too)", pinned), both)
	section(fmt.Sprintf("did not run or skipped on %s", pinned), unknown)
	return 1
}
