#!/usr/bin/env bash
# install-cli.sh VERSION... — install pinned Claude Code CLI versions into a cache
# folder outside the repository, and print the path of each binary.
#
# The CLI package is ~235 MB per version, so it lives in
# ${TETHER_CLI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tether/cli}/<version>, where the
# tests (claudetest.FindCLI) and `tether demo` look for it. npm skips the
# package's postinstall script here; node_modules/.bin/claude still works because
# the package ships the native binary itself.
set -euo pipefail
cache="${TETHER_CLI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tether/cli}"
[ $# -gt 0 ] || set -- 2.1.197
for v in "$@"; do
  dir="$cache/$v"
  bin="$dir/node_modules/.bin/claude"
  if [ ! -x "$bin" ] || ! "$bin" --version >/dev/null 2>&1; then
    mkdir -p "$dir"
    # A package.json of our own keeps npm from walking up into a parent project.
    [ -f "$dir/package.json" ] || printf '{"name":"tether-cli-cache","private":true}\n' >"$dir/package.json"
    echo "installing @anthropic-ai/claude-code@$v into $dir" >&2
    (cd "$dir" && npm install --no-audit --no-fund --loglevel=error --save-exact "@anthropic-ai/claude-code@$v" >&2)
  fi
  got=$("$bin" --version 2>/dev/null | awk '{print $1}')
  if [ "$got" != "$v" ]; then
    echo "install-cli: wanted $v, $bin reports '$got'" >&2
    exit 1
  fi
  echo "$bin"
done
