package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
	name := "@anthropic-ai/claude-code"
	// Some releases are in the registry only as the platform packages
	// that carry the binary (see scripts/install-cli.sh): install this
	// machine's, and link the binary where the CLI's package puts it.
	platform := exec.CommandContext(ctx, npm, "view", name+"@"+version, "version").Run() != nil
	if platform {
		p, err := platformPackage()
		if err != nil {
			return err
		}
		name = p
	}
	fmt.Fprintf(stderr, "tether: installing %s@%s into %s\n", name, version, dir)
	cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--save-exact", name+"@"+version)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, stderr, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("npm install %s@%s: %w", name, version, err)
	}
	if platform {
		bin := filepath.Join(dir, "node_modules", ".bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			return err
		}
		link := filepath.Join(bin, "claude")
		os.Remove(link)
		return os.Symlink(filepath.Join("..", name, "claude"), link)
	}
	return nil
}

// platformPackage names the package that carries the CLI's binary for
// this machine: @anthropic-ai/claude-code-<os>-<arch>[-musl].
func platformPackage() (string, error) {
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	if arch == "" || (runtime.GOOS != "linux" && runtime.GOOS != "darwin") {
		return "", fmt.Errorf("no Claude Code CLI package for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	libc := ""
	if m, _ := filepath.Glob("/lib/ld-musl-*.so.1"); runtime.GOOS == "linux" && len(m) > 0 {
		libc = "-musl"
	}
	return "@anthropic-ai/claude-code-" + runtime.GOOS + "-" + arch + libc, nil
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
