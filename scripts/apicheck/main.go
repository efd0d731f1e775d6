// Command apicheck applies Tether's compatibility rules to what apidiff
// found between the previous release and this tree (scripts/api-check.sh
// runs both):
//
//	apicheck -report REPORT -old OLDTREE -new NEWTREE -exceptions FILE -changelog FILE
//
// REPORT is the text of `apidiff -m OLD.api NEW.api` over the module. The
// rules, from the upgrades issue:
//
//   - claude and claude/claudetest (the SDK) change only compatibly, as the
//     Go 1 promise says: every incompatible change there fails, unless the
//     exceptions file lists its exact message with the reason it was
//     reviewed and accepted (a change apidiff reports though every call
//     still compiles, such as a parameter made variadic).
//   - Every other public package (host, serve, cluster, team, …) may change
//     shape before 1.0, but only in a new minor version: claude.Version's
//     major.minor must be greater than the previous release's, and
//     CHANGELOG.md's section for this version must name each changed name
//     (as pkg.Name, or the enclosing pkg.Type for a field or method), so
//     the migration is written down where users look.
//   - CHANGELOG.md always has a section for claude.Version, and the version
//     never goes backwards. (Its value changing is the one change to a
//     constant's value the SDK expects: it is the release.)
//
// It prints every verdict and exits 1 when a rule fails, 2 on bad input.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	report := flag.String("report", "", "apidiff -m output")
	oldTree := flag.String("old", "", "the previous release's tree")
	newTree := flag.String("new", ".", "this tree")
	exceptions := flag.String("exceptions", "compat/api-exceptions.txt", "reviewed incompatible SDK changes")
	changelog := flag.String("changelog", "CHANGELOG.md", "the changelog")
	module := flag.String("module", "github.com/tetherhq/tether", "the module's path")
	flag.Parse()
	if *report == "" || *oldTree == "" {
		flag.Usage()
		os.Exit(2)
	}
	in, err := load(*report, *oldTree, *newTree, *exceptions, *changelog)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apicheck:", err)
		os.Exit(2)
	}
	in.Module = *module
	if !Check(in, os.Stdout) {
		os.Exit(1)
	}
}

// Input is everything the rules look at.
type Input struct {
	Module      string   // the module path, to read "package M/p: removed"
	Report      string   // apidiff -m's text
	OldVersion  string   // claude.Version at the previous release
	NewVersion  string   // claude.Version in this tree
	Exceptions  []string // the exceptions file's lines
	ChangelogMD string   // CHANGELOG.md
}

func load(report, oldTree, newTree, exceptions, changelog string) (*Input, error) {
	var in Input
	b, err := os.ReadFile(report)
	if err != nil {
		return nil, err
	}
	in.Report = string(b)
	if in.OldVersion, err = sdkVersion(oldTree); err != nil {
		return nil, err
	}
	if in.NewVersion, err = sdkVersion(newTree); err != nil {
		return nil, err
	}
	if b, err = os.ReadFile(exceptions); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	in.Exceptions = strings.Split(string(b), "\n")
	if b, err = os.ReadFile(changelog); err != nil {
		return nil, err
	}
	in.ChangelogMD = string(b)
	return &in, nil
}

// sdkVersion reads the Version constant of tree's claude package.
func sdkVersion(tree string) (string, error) {
	fset := token.NewFileSet()
	dir := filepath.Join(tree, "claude")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return "", err
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if n.Name != "Version" || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						return strconv.Unquote(lit.Value)
					}
				}
			}
		}
	}
	return "", fmt.Errorf("%s: no const Version string", dir)
}

// Change is one line of apidiff's report.
type Change struct {
	Message    string // as apidiff wrote it, without "- "
	Pkg        string // module-relative: "claude", "serve", "cluster/clustertest"
	Name       string // "SessionInfo.Agent", "Session.SetMaxThinkingTokens"; "" for a whole package
	Compatible bool
}

// Parse reads apidiff -m's text report: an "Incompatible changes:" and a
// "Compatible changes:" section of "- message" lines; other lines (its
// "Ignoring internal package" notes) are skipped.
func Parse(module, report string) ([]Change, error) {
	var out []Change
	section := 0 // 1 incompatible, 2 compatible
	sc := bufio.NewScanner(strings.NewReader(report))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \r")
		switch {
		case line == "Incompatible changes:":
			section = 1
		case line == "Compatible changes:":
			section = 2
		case strings.HasPrefix(line, "- "):
			if section == 0 {
				return nil, fmt.Errorf("a change outside a section: %q", line)
			}
			c, err := parseChange(module, line[2:])
			if err != nil {
				return nil, err
			}
			c.Compatible = section == 2
			out = append(out, c)
		}
	}
	return out, sc.Err()
}

func parseChange(module, msg string) (Change, error) {
	c := Change{Message: msg}
	// "package github.com/m/p: removed" (or added).
	if rest, ok := strings.CutPrefix(msg, "package "); ok {
		path, _, ok := strings.Cut(rest, ": ")
		if !ok {
			return c, fmt.Errorf("unreadable change %q", msg)
		}
		c.Pkg = strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
		return c, nil
	}
	// "./p.Name.Field: what" or "./p.(*T).M: what".
	obj, _, ok := strings.Cut(msg, ": ")
	if !ok || !strings.HasPrefix(obj, "./") {
		return c, fmt.Errorf("unreadable change %q", msg)
	}
	obj = obj[2:]
	// A package path in this module has no dot; the first dot after its
	// last slash starts the name.
	slash := strings.LastIndex(obj[:max(strings.Index(obj, "."), 0)], "/")
	dot := strings.Index(obj[slash+1:], ".")
	if dot < 0 {
		return c, fmt.Errorf("unreadable change %q", msg)
	}
	c.Pkg = obj[:slash+1+dot]
	name := obj[slash+1+dot+1:]
	name = strings.NewReplacer("(*", "", "(", "", ")", "").Replace(name)
	c.Name = name
	return c, nil
}

// notAPI are the folders whose packages no program imports: commands,
// scripts, examples, and deploy/'s file-only packages. apidiff's module
// mode lists them; their changes are not API changes.
var notAPI = []string{"cmd", "scripts", "examples", "deploy"}

func isAPI(pkg string) bool {
	top, _, _ := strings.Cut(pkg, "/")
	return !slices.Contains(notAPI, top)
}

// sdk is where the Go 1 promise holds.
var sdk = []string{"claude", "claude/claudetest"}

// Exception is a reviewed incompatible change: its message and why.
type Exception struct{ Message, Reason string }

// ParseExceptions reads the exceptions file: one "message # reason" a
// line; blank lines and lines starting with # are comments. A line
// without a reason is an error: the file records decisions, not escapes.
func ParseExceptions(lines []string) ([]Exception, error) {
	var out []Exception
	for i, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		msg, reason, ok := strings.Cut(l, " # ")
		msg, reason = strings.TrimSpace(strings.TrimPrefix(msg, "- ")), strings.TrimSpace(reason)
		if !ok || reason == "" {
			return nil, fmt.Errorf("exceptions line %d has no reason (message # reason): %q", i+1, l)
		}
		out = append(out, Exception{msg, reason})
	}
	return out, nil
}

// Semver is major.minor.patch.
type Semver [3]int

var semverRE = regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)$`)

func ParseSemver(s string) (Semver, error) {
	m := semverRE.FindStringSubmatch(s)
	if m == nil {
		return Semver{}, fmt.Errorf("version %q is not major.minor.patch", s)
	}
	var v Semver
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return v, nil
}

// Compare orders versions like cmp.Compare.
func (v Semver) Compare(w Semver) int { return slices.Compare(v[:], w[:]) }

// NewMinor reports whether v is a later minor (or major) version than w.
func (v Semver) NewMinor(w Semver) bool { return slices.Compare(v[:2], w[:2]) > 0 }

// Section returns the text of CHANGELOG's "## [version]" section, ok
// false when there is none.
func Section(changelog, version string) (string, bool) {
	head := regexp.MustCompile(`(?m)^## \[` + regexp.QuoteMeta(version) + `\].*$`)
	loc := head.FindStringIndex(changelog)
	if loc == nil {
		return "", false
	}
	rest := changelog[loc[1]:]
	if next := regexp.MustCompile(`(?m)^## `).FindStringIndex(rest); next != nil {
		rest = rest[:next[0]]
	}
	return rest, true
}

// Mentions reports whether text names c: its package's last element
// qualifying the name or any enclosing prefix of at least one component
// ("serve.SessionInfo" covers "serve.SessionInfo.Agent"), or for a whole
// package its module-relative path.
func Mentions(text string, c Change) bool {
	base := c.Pkg[strings.LastIndex(c.Pkg, "/")+1:]
	var cands []string
	if c.Name == "" {
		cands = []string{c.Pkg}
	} else {
		parts := strings.Split(c.Name, ".")
		for i := len(parts); i >= 1; i-- {
			cands = append(cands, base+"."+strings.Join(parts[:i], "."))
		}
	}
	for _, w := range cands {
		re := regexp.MustCompile(`(^|[^\w./])` + regexp.QuoteMeta(w) + `($|[^\w])`)
		if re.MatchString(text) {
			return true
		}
	}
	return false
}

// Check applies the rules, writing a verdict a line to w; false when a
// rule failed.
func Check(in *Input, w io.Writer) bool {
	ok := true
	fail := func(format string, a ...any) {
		ok = false
		fmt.Fprintf(w, "FAIL "+format+"\n", a...)
	}
	changes, err := Parse(in.Module, in.Report)
	if err != nil {
		fail("apidiff's report: %v", err)
		return false
	}
	exc, err := ParseExceptions(in.Exceptions)
	if err != nil {
		fail("%v", err)
		return false
	}
	oldV, err := ParseSemver(in.OldVersion)
	if err != nil {
		fail("the previous release's claude.Version: %v", err)
		return false
	}
	newV, err := ParseSemver(in.NewVersion)
	if err != nil {
		fail("claude.Version: %v", err)
		return false
	}
	if newV.Compare(oldV) < 0 {
		fail("claude.Version %s is older than the previous release's %s", in.NewVersion, in.OldVersion)
	}
	section, hasSection := Section(in.ChangelogMD, in.NewVersion)
	if !hasSection {
		fail("CHANGELOG.md has no section \"## [%s]\" for claude.Version", in.NewVersion)
	}
	used := make([]bool, len(exc))
	n := 0
	for _, c := range changes {
		if c.Compatible || !isAPI(c.Pkg) {
			continue
		}
		n++
		if c.Pkg == "claude" && c.Name == "Version" && strings.HasPrefix(c.Message, "./claude.Version: value changed from ") {
			n--
			fmt.Fprintf(w, "ok   %s\n     (the release version: checked above)\n", c.Message)
			continue
		}
		if i := slices.IndexFunc(exc, func(e Exception) bool { return e.Message == c.Message }); i >= 0 {
			used[i] = true
			fmt.Fprintf(w, "ok   %s\n     (reviewed exception: %s)\n", c.Message, exc[i].Reason)
			continue
		}
		switch {
		case slices.Contains(sdk, c.Pkg):
			fail("%s\n     package %s changes only compatibly (the Go 1 promise): add a new name instead, or, if every use still compiles, list the message with a reason in the exceptions file", c.Message, c.Pkg)
		case !newV.NewMinor(oldV):
			fail("%s\n     an incompatible change in %s needs a new minor version: claude.Version is %s, the previous release's %s", c.Message, c.Pkg, in.NewVersion, in.OldVersion)
		case !hasSection || !Mentions(section, c):
			fail("%s\n     CHANGELOG.md's section for %s must name %s and say how to migrate", c.Message, in.NewVersion, qualified(c))
		default:
			fmt.Fprintf(w, "ok   %s\n     (new minor version %s, named in CHANGELOG.md)\n", c.Message, in.NewVersion)
		}
	}
	for i, e := range exc {
		if !used[i] {
			fmt.Fprintf(w, "note no change matches this exception (delete it once compat/previous has the change): %s\n", e.Message)
		}
	}
	fmt.Fprintf(w, "%d incompatible change(s) against the previous release (claude.Version %s, previous %s)\n", n, in.NewVersion, in.OldVersion)
	return ok
}

func qualified(c Change) string {
	if c.Name == "" {
		return c.Pkg
	}
	return c.Pkg[strings.LastIndex(c.Pkg, "/")+1:] + "." + c.Name
}
