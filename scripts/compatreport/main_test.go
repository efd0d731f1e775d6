package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newRunJSON: package a fails in one subtest (its parent fails with it)
// and passes another test; package b fails in a plain test; package c
// fails outside any test; package d passes.
const newRunJSON = `{"Action":"start","Package":"x/a"}
{"Action":"run","Package":"x/a","Test":"TestRealCLI"}
{"Action":"run","Package":"x/a","Test":"TestRealCLI/hooks_x"}
{"Action":"output","Package":"x/a","Test":"TestRealCLI/hooks_x","Output":"=== RUN   TestRealCLI/hooks_x\n"}
{"Action":"output","Package":"x/a","Test":"TestRealCLI/hooks_x","Output":"    hooks_test.go:12: the API got 2 requests; want the retry note\n"}
{"Action":"output","Package":"x/a","Test":"TestRealCLI/hooks_x","Output":"--- FAIL: TestRealCLI/hooks_x (1.00s)\n"}
{"Action":"fail","Package":"x/a","Test":"TestRealCLI/hooks_x"}
{"Action":"run","Package":"x/a","Test":"TestRealCLI/ok.1"}
{"Action":"pass","Package":"x/a","Test":"TestRealCLI/ok.1"}
{"Action":"fail","Package":"x/a","Test":"TestRealCLI"}
{"Action":"run","Package":"x/a","Test":"TestRealCLIOther"}
{"Action":"output","Package":"x/a","Test":"TestRealCLIOther","Output":"    other_test.go:9: bubblewrap is installed\n"}
{"Action":"skip","Package":"x/a","Test":"TestRealCLIOther"}
{"Action":"fail","Package":"x/a"}
{"Action":"run","Package":"x/b","Test":"TestRealCLIDoctor"}
{"Action":"output","Package":"x/b","Test":"TestRealCLIDoctor","Output":"    cli_test.go:70: report lacks \"[ok  ] version: \"\n"}
{"Action":"fail","Package":"x/b","Test":"TestRealCLIDoctor"}
{"Action":"fail","Package":"x/b"}
not json: a line of the go command's own
{"Action":"output","Package":"x/c","Output":"goleak: found unexpected goroutines\n"}
{"Action":"fail","Package":"x/c"}
{"Action":"pass","Package":"x/d"}
`

// pinnedJSON is the rerun on the pinned version: hooks_x passes there,
// the doctor test fails there too.
const pinnedJSON = `{"Action":"pass","Package":"x/a","Test":"TestRealCLI/hooks_x"}
{"Action":"pass","Package":"x/a","Test":"TestRealCLI"}
{"Action":"fail","Package":"x/b","Test":"TestRealCLIDoctor"}
`

func write(t *testing.T, name, s string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRerunPatterns(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"rerun", write(t, "new.json", newRunJSON)}, &out, &errb); code != 0 {
		t.Fatalf("rerun = %d: %s", code, errb.String())
	}
	want := "x/a\t(^TestRealCLI$)/(^hooks_x$)\nx/b\t(^TestRealCLIDoctor$)\nx/c\tRealCLI\n"
	if out.String() != want {
		t.Errorf("rerun printed\n%s\nwant\n%s", out.String(), want)
	}
}

func TestReportComparesWithPinned(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"report", "-version", "9.9.9", "-pinned", "2.1.331",
		write(t, "new.json", newRunJSON), write(t, "pinned.json", pinnedJSON)}, &out, &errb)
	if code != 1 {
		t.Errorf("report = %d, want 1 for a failing run", code)
	}
	got := out.String()
	for _, want := range []string{
		"== CLI 9.9.9: 1 passed, 2 failed, 1 skipped",
		"FAIL x/a TestRealCLI/hooks_x\n    hooks_test.go:12: the API got 2 requests; want the retry note\n",
		"FAIL x/b TestRealCLIDoctor\n    cli_test.go:70: report lacks",
		"FAIL x/c (outside any test)\n    goleak: found unexpected goroutines",
		"skipped: x/a TestRealCLIOther: other_test.go:9: bubblewrap is installed\n",
		"pass on 2.1.331, fail on 9.9.9 (what 9.9.9 changed):\n    x/a TestRealCLI/hooks_x\n",
		"fail on both (not a version difference: flaky, or broken on 2.1.331 too):\n    x/b TestRealCLIDoctor\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "FAIL x/a TestRealCLI\n") || strings.Contains(got, "=== RUN") {
		t.Errorf("report names a parent that failed only through its subtest, or the go command's lines:\n%s", got)
	}
}

func TestReportAllPass(t *testing.T) {
	var out, errb bytes.Buffer
	p := write(t, "new.json", `{"Action":"pass","Package":"x/a","Test":"TestRealCLI"}
{"Action":"pass","Package":"x/a"}
`)
	if code := run([]string{"report", "-version", "2.1.331", p}, &out, &errb); code != 0 || !strings.Contains(out.String(), "every real-CLI test passes on 2.1.331") {
		t.Errorf("report = %d:\n%s%s", code, out.String(), errb.String())
	}
}

func TestBadInput(t *testing.T) {
	for _, args := range [][]string{nil, {"rerun"}, {"report"}, {"bogus"}, {"rerun", filepath.Join(t.TempDir(), "missing.json")}, {"rerun", write(t, "empty.json", "")}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 || errb.Len() == 0 {
			t.Errorf("run(%q) = %d, stderr %q; want 2 and a message", args, code, errb.String())
		}
	}
}
