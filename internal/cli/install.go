package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// installCLI installs the CLI version into the cache the tests and the
// demo look in: with the repository's scripts/install-cli.sh when tether
// runs inside a checkout, else with npm directly, the way the script does.
func installCLI(ctx context.Context, version string, stderr io.Writer) error {
	if script := findInstallScript(); script != "" {
		fmt.Fprintf(stderr, "tether: installing Claude Code CLI %s with %s\n", version, script)
		cmd := exec.CommandContext(ctx, "bash", script, version)
		cmd.Stdout, cmd.Stderr = io.Discard, stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s %s: %w", script, version, err)
		}
		return nil
	}
	cache := cacheDirOr()
	if cache == "the cache" {
		return fmt.Errorf("no cache folder: set TETHER_CLI_CACHE or HOME")
	}
	dir := filepath.Join(cache, version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// A package.json of our own keeps npm from walking up into a parent
	// project.
	pkg := filepath.Join(dir, "package.json")
	if _, err := os.Stat(pkg); err != nil {
		if err := os.WriteFile(pkg, []byte(`{"name":"tether-cli-cache","private":true}`+"\n"), 0o644); err != nil {
			return err
		}
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return fmt.Errorf("installing the CLI needs npm: %w", err)
	}
	fmt.Fprintf(stderr, "tether: installing @anthropic-ai/claude-code@%s into %s\n", version, dir)
	cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--save-exact", "@anthropic-ai/claude-code@"+version)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, stderr, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("npm install @anthropic-ai/claude-code@%s: %w", version, err)
	}
	return nil
}

// findInstallScript returns scripts/install-cli.sh of the Tether checkout
// holding the working directory, or "".
func findInstallScript() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			script := filepath.Join(dir, "scripts", "install-cli.sh")
			if bytes.Contains(mod, []byte("module github.com/tetherhq/tether\n")) {
				if _, err := os.Stat(script); err == nil {
					return script
				}
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
