#!/usr/bin/env bash
# install-sdk.sh [VERSION...] — install pinned versions of the official
# TypeScript Agent SDK (@anthropic-ai/claude-agent-sdk) into a cache folder
# outside the repository, and print the path of each package folder.
#
# Only its type declarations are used: internal/parity reads sdk.d.ts and
# sdk-tools.d.ts and checks docs/parity.md against them. So the install
# skips the optional native CLI binary (~360 MB; Tether's tests use the CLI
# from install-cli.sh), peer dependencies and install scripts: about 5 MB.
# The folder is
# ${TETHER_SDK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tether/sdk}/<version>/node_modules/@anthropic-ai/claude-agent-sdk.
set -euo pipefail
cache="${TETHER_SDK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tether/sdk}"
[ $# -gt 0 ] || set -- 0.3.337
for v in "$@"; do
  dir="$cache/$v"
  pkg="$dir/node_modules/@anthropic-ai/claude-agent-sdk"
  got=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$pkg/package.json" 2>/dev/null || true)
  if [ "$got" != "$v" ] || [ ! -f "$pkg/sdk.d.ts" ] || [ ! -f "$pkg/sdk-tools.d.ts" ]; then
    mkdir -p "$dir"
    # A package.json of our own keeps npm from walking up into a parent project.
    [ -f "$dir/package.json" ] || printf '{"name":"tether-sdk-cache","private":true}\n' >"$dir/package.json"
    echo "installing @anthropic-ai/claude-agent-sdk@$v into $dir" >&2
    (cd "$dir" && npm install --no-audit --no-fund --loglevel=error --save-exact \
      --omit=optional --legacy-peer-deps --ignore-scripts "@anthropic-ai/claude-agent-sdk@$v" >&2)
    got=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$pkg/package.json" 2>/dev/null || true)
  fi
  if [ "$got" != "$v" ]; then
    echo "install-sdk: wanted $v, $pkg/package.json says '$got'" >&2
    exit 1
  fi
  echo "$pkg"
done
