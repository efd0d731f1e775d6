#!/usr/bin/env bash
# install-cli.sh VERSION... — install pinned Claude Code CLI versions into a cache
# folder outside the repository, and print the path of each binary.
#
# The CLI package is ~235 MB per version, so it lives in
# ${TETHER_CLI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tether/cli}/<version>, where the
# tests (claudetest.FindCLI) and `tether demo` look for it. npm skips the
# package's postinstall script here; node_modules/.bin/claude still works because
# the package ships the native binary itself.
#
# The binary itself is in a package per platform
# (@anthropic-ai/claude-code-linux-x64, …-linux-arm64-musl, …-darwin-arm64…),
# which the CLI's package names as optional dependencies. Releases 2.1.333 to
# 2.1.335 are in the registry only as those platform packages (with the SDK
# of the same patch naming them): for a version the CLI's package lacks, the
# script installs this platform's package and links its binary where the
# CLI's package puts it, node_modules/.bin/claude.
set -euo pipefail
cache="${TETHER_CLI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tether/cli}"
[ $# -gt 0 ] || set -- 2.1.197

# platform_package prints the name of this machine's platform package.
platform_package() {
  local os arch libc=""
  case "$(uname -s)" in
    Linux) os=linux ;;
    Darwin) os=darwin ;;
    *) echo "install-cli: no platform package for $(uname -s)" >&2; return 1 ;;
  esac
  case "$(uname -m)" in
    x86_64 | amd64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) echo "install-cli: no platform package for $(uname -m)" >&2; return 1 ;;
  esac
  if [ "$os" = linux ] && ldd --version 2>&1 | grep -qi musl; then
    libc=-musl
  fi
  echo "@anthropic-ai/claude-code-$os-$arch$libc"
}
for v in "$@"; do
  dir="$cache/$v"
  bin="$dir/node_modules/.bin/claude"
  if [ ! -x "$bin" ] || ! "$bin" --version >/dev/null 2>&1; then
    mkdir -p "$dir"
    # A package.json of our own keeps npm from walking up into a parent project.
    [ -f "$dir/package.json" ] || printf '{"name":"tether-cli-cache","private":true}\n' >"$dir/package.json"
    if npm view "@anthropic-ai/claude-code@$v" version >/dev/null 2>&1; then
      echo "installing @anthropic-ai/claude-code@$v into $dir" >&2
      (cd "$dir" && npm install --no-audit --no-fund --loglevel=error --save-exact "@anthropic-ai/claude-code@$v" >&2)
    else
      pkg=$(platform_package)
      echo "installing $pkg@$v into $dir (@anthropic-ai/claude-code@$v is not in the registry)" >&2
      (cd "$dir" && npm install --no-audit --no-fund --loglevel=error --save-exact "$pkg@$v" >&2)
      mkdir -p "$dir/node_modules/.bin"
      ln -sf "../$pkg/claude" "$bin"
    fi
  fi
  got=$("$bin" --version 2>/dev/null | awk '{print $1}')
  if [ "$got" != "$v" ]; then
    echo "install-cli: wanted $v, $bin reports '$got'" >&2
    exit 1
  fi
  echo "$bin"
done
