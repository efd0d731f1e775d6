package proc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"
)

// versionTimeout bounds the --version probe when the caller's context
// has no deadline: a hung probe must not hang session start forever. A
// caller's deadline, when there is one, is the bound instead, longer or
// shorter: it is what the caller gave the whole start. The CLI answers
// in well under a second on an idle machine, but a Node start on a
// machine busy with many sessions starting at once has been seen to
// take over 10 s, and over 30 s under the stress run (two busy loops
// beside the race-instrumented suite), which failed starts whose
// callers would have waited.
const versionTimeout = 30 * time.Second

// versions remembers the versions probed, by the executable's path, size
// and modification time: a host starting many sessions runs the probe (a
// whole Node start) once per CLI, and a CLI replaced in place is probed
// again. Bounded: past maxVersions entries it starts afresh.
var versions struct {
	sync.Mutex
	m map[versionKey]string
}

type versionKey struct {
	path string
	size int64
	mod  time.Time
}

const maxVersions = 64

// Version runs `path --version` and returns the version it reports: the
// first word of its output ("2.1.197" from "2.1.197 (Claude Code)"),
// without a leading "v". ctx bounds the probe, and so does a 30 s cap. A
// version found before for the same unchanged file is returned without
// running it again.
func Version(ctx context.Context, path string) (string, error) {
	var key versionKey
	if fi, err := os.Stat(path); err == nil {
		key = versionKey{path: path, size: fi.Size(), mod: fi.ModTime()}
		versions.Lock()
		v, ok := versions.m[key]
		versions.Unlock()
		if ok {
			return v, nil
		}
	}
	v, err := probeVersion(ctx, path)
	if err == nil && key.path != "" {
		versions.Lock()
		if versions.m == nil || len(versions.m) >= maxVersions {
			versions.m = make(map[versionKey]string)
		}
		versions.m[key] = v
		versions.Unlock()
	}
	return v, err
}

func probeVersion(ctx context.Context, path string) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, versionTimeout)
		defer cancel()
	}
	var stdout, stderr capped
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = sysProcAttr()
	// A grandchild left holding the output pipes must not hang Run.
	cmd.WaitDelay = time.Second
	// Pdeathsig is tied to the forking thread (see Start); holding it
	// until the probe is reaped keeps it from firing early.
	runtime.LockOSThread()
	err := cmd.Run()
	runtime.UnlockOSThread()
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
		if msg := firstLine(stderr.String()); msg != "" {
			return "", fmt.Errorf("running %s --version: %w: %s", path, err, msg)
		}
		return "", fmt.Errorf("running %s --version: %w", path, err)
	}
	out := firstLine(stdout.String())
	v, ok := parseVersion(out)
	if !ok {
		return "", fmt.Errorf("running %s --version: unexpected output %q", path, out)
	}
	return v, nil
}

// parseVersion extracts the version from a line of --version output.
func parseVersion(line string) (string, bool) {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return "", false
	}
	v := strings.TrimPrefix(strings.TrimPrefix(fields[0], "v"), "V")
	if v == "" || v[0] < '0' || v[0] > '9' || !strings.Contains(v, ".") {
		return "", false
	}
	for _, r := range v {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '.' || r == '-' || r == '+') {
			return "", false
		}
	}
	return v, true
}

// firstLine returns the first non-blank line of s, trimmed and cut to a
// length fit for an error message.
func firstLine(s string) string {
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			return truncate(line, 512)
		}
	}
	return ""
}

// capped is a bytes.Buffer that keeps only its first 64 KiB, so a
// misbehaving --version cannot fill memory.
type capped struct{ bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if room := 64<<10 - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// CompareVersions compares two versions and returns -1, 0 or +1.
//
// Versions are dot-separated numbers ("2.1.197" < "2.1.330" < "2.10.0"),
// with missing fields counting as 0 ("2.1" == "2.1.0"). A leading "v" and
// anything after a space are ignored. A pre-release suffix sorts before its
// release ("2.1.0-beta.2" < "2.1.0"), pre-releases compare by semver's
// rules, and build metadata ("+abc") is ignored. Non-numeric text in a
// field compares as text after the field's leading digits.
func CompareVersions(a, b string) int {
	aCore, aPre := splitVersion(a)
	bCore, bPre := splitVersion(b)
	as, bs := strings.Split(aCore, "."), strings.Split(bCore, ".")
	for i := range max(len(as), len(bs)) {
		x, y := "0", "0"
		if i < len(as) {
			x = as[i]
		}
		if i < len(bs) {
			y = bs[i]
		}
		if c := compareField(x, y); c != 0 {
			return c
		}
	}
	switch {
	case aPre == bPre:
		return 0
	case aPre == "":
		return 1
	case bPre == "":
		return -1
	}
	return comparePre(aPre, bPre)
}

// splitVersion returns the release part of v and its pre-release suffix.
func splitVersion(v string) (core, pre string) {
	v = strings.TrimSpace(v)
	if i := strings.IndexAny(v, " \t"); i >= 0 {
		v = v[:i]
	}
	v = strings.TrimPrefix(strings.TrimPrefix(v, "v"), "V")
	if i := strings.IndexByte(v, '+'); i >= 0 {
		v = v[:i]
	}
	core, pre, _ = strings.Cut(v, "-")
	return core, pre
}

// compareField compares one release field: its leading digits as a
// number, then whatever follows as text.
func compareField(x, y string) int {
	xn, xr := leadingDigits(x)
	yn, yr := leadingDigits(y)
	if c := compareNumeric(xn, yn); c != 0 {
		return c
	}
	return strings.Compare(xr, yr)
}

// comparePre compares pre-release suffixes as semver does: identifier by
// identifier, numbers numerically and below text, a longer list above its
// prefix.
func comparePre(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range min(len(as), len(bs)) {
		x, y := as[i], bs[i]
		xn, xr := leadingDigits(x)
		yn, yr := leadingDigits(y)
		xNum, yNum := xn != "" && xr == "", yn != "" && yr == ""
		var c int
		switch {
		case xNum && yNum:
			c = compareNumeric(xn, yn)
		case xNum:
			c = -1
		case yNum:
			c = 1
		default:
			c = strings.Compare(x, y)
		}
		if c != 0 {
			return c
		}
	}
	switch {
	case len(as) < len(bs):
		return -1
	case len(as) > len(bs):
		return 1
	}
	return 0
}

// leadingDigits splits s into its leading decimal digits and the rest.
func leadingDigits(s string) (digits, rest string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i], s[i:]
}

// compareNumeric compares decimal digit strings of any length ("" is 0).
func compareNumeric(x, y string) int {
	x, y = strings.TrimLeft(x, "0"), strings.TrimLeft(y, "0")
	if len(x) != len(y) {
		if len(x) < len(y) {
			return -1
		}
		return 1
	}
	return strings.Compare(x, y)
}
