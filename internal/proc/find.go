package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// envCLIPath names the environment variable Find consults when no explicit
// path is given.
const envCLIPath = "TETHER_CLI_PATH"

// Find locates the Claude Code CLI and returns its absolute path, along
// with every path it tried, in order.
//
// cliPath, when non-empty, is the only candidate: it must name an
// executable file (a name without a separator is looked up in PATH). Next
// the same holds for $TETHER_CLI_PATH when set. An explicit choice that
// does not work is reported rather than silently replaced by whatever
// other CLI happens to be installed. Otherwise Find tries, in order:
//
//   - each absolute directory in $PATH (relative entries are skipped, as
//     exec.LookPath refuses them);
//   - the usual install places: ~/.claude/local, ~/.local/bin,
//     ~/.npm-global/bin, /usr/local/bin, /opt/homebrew/bin,
//     ~/node_modules/.bin, ~/.yarn/bin, and the bin directory of the npm
//     prefix in $npm_config_prefix or $PREFIX (npm itself is not run);
//   - Tether's CLI cache, ${TETHER_CLI_CACHE:-${XDG_CACHE_HOME:-~/.cache}/tether/cli},
//     whose <version>/node_modules/.bin/claude are tried newest first.
//
// All environment lookups go through getenv (nil means os.Getenv), so
// callers and tests control them. When nothing is found the error wraps
// exec.ErrNotFound and lists the paths searched.
//
// Windows batch files (.bat, .cmd) are never returned: Go runs them
// through cmd.exe, which re-parses the arguments by its own rules, so no
// quoting keeps a system prompt or a JSON setting intact. An explicit
// path naming one, or a search that finds only npm's claude.cmd shim, is
// a *BatchFileError.
func Find(cliPath string, getenv func(string) string) (path string, searched []string, err error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	f := finder{getenv: getenv}
	if cliPath != "" {
		return f.explicit(cliPath, "the configured CLI path")
	}
	if p := getenv(envCLIPath); p != "" {
		return f.explicit(p, "$"+envCLIPath)
	}
	for _, dir := range f.pathDirs() {
		if p, ok := f.try(dir); ok {
			return p, f.searched, nil
		}
	}
	for _, dir := range f.installDirs() {
		if p, ok := f.try(dir); ok {
			return p, f.searched, nil
		}
	}
	if f.batch != "" {
		return "", f.searched, &BatchFileError{Path: f.batch, Found: true}
	}
	return "", f.searched, &notFoundError{searched: f.searched}
}

type finder struct {
	getenv   func(string) string
	searched []string
	seen     map[string]bool
	batch    string // the first batch file the search passed over
}

// BatchFileError reports a CLI that is a Windows batch file (.bat or
// .cmd), which Tether refuses to run: cmd.exe re-parses a batch file's
// arguments, and no quoting makes that safe for the text Tether passes.
type BatchFileError struct {
	Path string
	// Found is set when the search found only this file (npm's shim);
	// otherwise it was named explicitly.
	Found bool
}

func (e *BatchFileError) Error() string {
	how := "is"
	if e.Found {
		how = "found no claude.exe, only"
	}
	return fmt.Sprintf("claude CLI %s a batch file %s: cmd.exe would re-parse its arguments; point the CLI path at claude.exe "+
		"(npm installs it under node_modules/@anthropic-ai/claude-code/bin)", how, e.Path)
}

// isBatchFile reports whether p names a Windows batch file.
func isBatchFile(p string) bool {
	ext := strings.ToLower(filepath.Ext(p))
	return ext == ".bat" || ext == ".cmd"
}

// explicit checks a path the user chose.
func (f *finder) explicit(p, what string) (string, []string, error) {
	if isBatchFile(p) {
		f.searched = append(f.searched, p)
		return "", f.searched, &BatchFileError{Path: p}
	}
	if !strings.ContainsRune(p, '/') && !strings.ContainsRune(p, filepath.Separator) {
		// A bare name: find it in PATH, as a shell would.
		for _, dir := range f.pathDirs() {
			if found, ok := f.tryName(filepath.Join(dir, p)); ok {
				return found, f.searched, nil
			}
		}
		return "", f.searched, &notFoundError{searched: f.searched, detail: fmt.Sprintf("%s %q is not in PATH", what, p)}
	}
	f.searched = append(f.searched, p)
	if err := checkExecutable(p); err != nil {
		return "", f.searched, &notFoundError{searched: f.searched, detail: fmt.Sprintf("%s %s: %v", what, p, err)}
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", f.searched, fmt.Errorf("proc: %s %s: %w", what, p, err)
	}
	return abs, f.searched, nil
}

// try looks for the CLI's executable names in dir, and notes a batch
// file shim it passes over.
func (f *finder) try(dir string) (string, bool) {
	for _, name := range cliNames() {
		if p, ok := f.tryName(filepath.Join(dir, name)); ok {
			return p, true
		}
	}
	if f.batch == "" {
		for _, name := range batchNames() {
			if p := filepath.Join(dir, name); checkExecutable(p) == nil {
				f.batch = p
				break
			}
		}
	}
	return "", false
}

// tryName checks one absolute candidate, recording it unless it was
// already tried.
func (f *finder) tryName(p string) (string, bool) {
	p = filepath.Clean(p)
	if f.seen[p] {
		return "", false
	}
	if f.seen == nil {
		f.seen = make(map[string]bool)
	}
	f.seen[p] = true
	f.searched = append(f.searched, p)
	return p, checkExecutable(p) == nil
}

// pathDirs returns the absolute directories in $PATH.
func (f *finder) pathDirs() []string {
	var dirs []string
	for _, dir := range filepath.SplitList(f.getenv("PATH")) {
		// "" and relative entries mean the current directory, which
		// exec.LookPath refuses (exec.ErrDot) for the same reason we do:
		// running whatever "claude" sits in the working directory.
		if filepath.IsAbs(dir) {
			dirs = append(dirs, dir)
		}
	}
	return dirs
}

// installDirs returns the usual install places and the Tether CLI cache,
// in search order.
func (f *finder) installDirs() []string {
	home := f.getenv("HOME")
	if home == "" && goos == "windows" {
		home = f.getenv("USERPROFILE")
	}
	var dirs []string
	inHome := func(rel string) {
		if home != "" {
			dirs = append(dirs, filepath.Join(home, rel))
		}
	}
	inHome(".claude/local")
	inHome(".local/bin")
	inHome(".npm-global/bin")
	dirs = append(dirs, systemDirs...)
	inHome("node_modules/.bin")
	inHome(".yarn/bin")
	for _, env := range []string{"npm_config_prefix", "PREFIX"} {
		if prefix := f.getenv(env); filepath.IsAbs(prefix) {
			if goos == "windows" {
				dirs = append(dirs, prefix) // npm puts shims in the prefix itself there
			} else {
				dirs = append(dirs, filepath.Join(prefix, "bin"))
			}
		}
	}
	return append(dirs, f.cacheDirs(home)...)
}

// cacheDirs returns the bin directories of the CLI versions in Tether's
// cache (scripts/install-cli.sh fills it), newest version first.
func (f *finder) cacheDirs(home string) []string {
	cache := f.getenv("TETHER_CLI_CACHE")
	if cache == "" {
		base := f.getenv("XDG_CACHE_HOME")
		if base == "" {
			if home == "" {
				return nil
			}
			base = filepath.Join(home, ".cache")
		}
		cache = filepath.Join(base, "tether", "cli")
	}
	entries, err := os.ReadDir(cache)
	if err != nil {
		return nil // no cache is the common case
	}
	var versions []string
	for _, e := range entries {
		if n := e.Name(); e.IsDir() && n[0] >= '0' && n[0] <= '9' {
			versions = append(versions, n)
		}
	}
	slices.SortFunc(versions, func(a, b string) int { return CompareVersions(b, a) })
	dirs := make([]string, len(versions))
	for i, v := range versions {
		dirs[i] = filepath.Join(cache, v, "node_modules", ".bin")
	}
	return dirs
}

// systemDirs are the install places outside the home directory. A
// variable so tests can search a fake one instead of the machine's.
var systemDirs = []string{"/usr/local/bin", "/opt/homebrew/bin"}

// goos is runtime.GOOS, a variable so tests on Unix can search as
// Windows does.
var goos = runtime.GOOS

// cliNames are the file names the CLI goes by.
func cliNames() []string {
	if goos == "windows" {
		return []string{"claude.exe"}
	}
	return []string{"claude"}
}

// batchNames are the batch file shims npm installs beside (or instead
// of) claude.exe on Windows; Find refuses them.
func batchNames() []string {
	if goos == "windows" {
		return []string{"claude.cmd", "claude.bat"}
	}
	return nil
}

// checkExecutable reports why p is not an executable file, if it is not.
func checkExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return errors.New("no such file")
		}
		return err
	}
	switch {
	case fi.IsDir():
		return errors.New("is a directory")
	case !fi.Mode().IsRegular():
		return errors.New("not a regular file")
	case goos != "windows" && fi.Mode().Perm()&0o111 == 0:
		return errors.New("not executable")
	}
	return nil
}

// notFoundError reports a failed search. It matches exec.ErrNotFound.
type notFoundError struct {
	searched []string
	detail   string // why an explicit path was rejected
}

func (e *notFoundError) Error() string {
	var b strings.Builder
	b.WriteString("claude CLI not found")
	if e.detail != "" {
		b.WriteString(": ")
		b.WriteString(e.detail)
	}
	if len(e.searched) > 0 {
		b.WriteString("; searched: ")
		b.WriteString(strings.Join(e.searched, ", "))
	}
	return b.String()
}

func (e *notFoundError) Unwrap() error { return exec.ErrNotFound }
