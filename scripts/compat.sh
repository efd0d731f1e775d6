#!/usr/bin/env bash
# compat.sh VERSION — try Tether against any Claude Code CLI version, say a
# new release, and print what differs from the newest pinned version.
# scripts/adopt-cli.sh does this and more (the SDK, the diffs, the pins)
# to adopt a release; this is its test phase alone, without the browser
# tests.
#
#   scripts/compat.sh 2.1.332
#   RACE=1 scripts/compat.sh 2.1.332     # with the race detector (slower)
#
# It installs VERSION into the CLI cache (scripts/install-cli.sh), runs the
# real-CLI suite against it (`go test -count=1 -run RealCLI ./...`, every
# package, no -race unless RACE=1), then runs the tests that failed again
# on the newest pinned version (the last of scripts/test.sh's versions) and
# prints:
#   - each failing test with the first lines of its output;
#   - which of them pass on the pinned version (what VERSION changed) and
#     which fail there too (flaky, or broken already).
# It exits 1 when any test fails on VERSION, 0 when all pass. The raw
# `go test -json` output stays in $TETHER_COMPAT_DIR (default a fresh
# temporary folder), named in the last line. About 3 minutes on a 2-core
# machine (2m42s for 2.1.331, shared with other jobs), plus the reruns; the
# browser tests are not run.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -ne 1 ]; then
  echo "usage: scripts/compat.sh VERSION" >&2
  exit 2
fi
version=$1
# The newest pinned version: the last of the versions CI runs.
pinned=$(sed -n 's/^versions=(\(.*\))$/\1/p' scripts/test.sh | awk '{print $NF}')
[ -n "$pinned" ] || { echo "compat: no versions=(…) line in scripts/test.sh" >&2; exit 2; }

scripts/install-cli.sh "$version" "$pinned" >/dev/null

out=${TETHER_COMPAT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/tether-compat.XXXXXX")}
mkdir -p "$out"
race=(); [ "${RACE:-0}" = 1 ] && race=(-race)
go build -o "$out/compatreport" ./scripts/compatreport
report=("$out/compatreport")

echo "== real-CLI tests against CLI $version" >&2
# A failing run is what this script reports on, not a reason to stop.
TETHER_CLI_VERSION=$version go test "${race[@]}" -count=1 -timeout 30m -json -run RealCLI ./... \
  >"$out/new.json" 2>&1 || true

# The failed tests again, on the pinned version, package by package.
: >"$out/pinned.json"
reruns=$("${report[@]}" rerun "$out/new.json")
if [ -n "$reruns" ]; then
  echo "== the failed tests against the pinned CLI $pinned" >&2
  while IFS=$'\t' read -r pkg pattern; do
    TETHER_CLI_VERSION=$pinned go test "${race[@]}" -count=1 -timeout 30m -json -run "$pattern" "$pkg" \
      >>"$out/pinned.json" 2>&1 || true
  done <<<"$reruns"
fi

status=0
if [ -s "$out/pinned.json" ]; then
  "${report[@]}" report -version "$version" -pinned "$pinned" "$out/new.json" "$out/pinned.json" || status=$?
else
  "${report[@]}" report -version "$version" -pinned "$pinned" "$out/new.json" || status=$?
fi
echo "(go test -json output: $out)"
exit "$status"
