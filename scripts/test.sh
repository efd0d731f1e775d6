#!/usr/bin/env bash
# test.sh — the whole test suite, as CI runs it: vet, then every package with
# the race detector against the oldest supported CLI (2.1.197), then the
# real-CLI integration and browser tests again against the two newest
# (the versions list below; internal/cli's TestedCLIVersions must list the
# same versions, and a test checks it; scripts/adopt-cli.sh moves them).
#
# Each extra version costs one pass of about 10 minutes on a 2-core machine
# (2.1.336 and 2.1.337, measured on a fresh clone: 10m05s and 9m50s). A pass
# keeps both cores busy, then its last ~6 minutes are package serve's browser
# scenarios at three quarters of them. Running the two passes side by side
# was tried: 20m28s, against 19m55s one after the other, so they stay in turn.
# So was running three packages at a time in the first pass (-p 3, serve and
# cluster listed first, so that the two longest start at once): 1027 s
# against 1074 s, both cores busy throughout, and two waits ran out under
# the extra load; so go test's default of one per core stays. A test that
# runs no CLI is named so that the pattern of these passes leaves it to the
# first (serve's TestUI, the UI's own code in Chromium: ~16 s a pass;
# TestPushUI, notifications with the fake CLI asking; team's
# TestOIDCInChromium, a sign-in with no session).
#
# It installs the pinned CLI versions into the cache first
# (scripts/install-cli.sh), and the pinned TypeScript SDK whose declarations
# the parity test reads (scripts/install-sdk.sh), so it works on a fresh
# machine with Go and npm.
# With CI=true a missing CLI fails the real-CLI tests instead of skipping them.
# -count=1: the real-CLI tests depend on a binary Go's test cache does not
# track, so a cached pass would prove nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

versions=(2.1.197 2.1.336 2.1.337)
scripts/install-cli.sh "${versions[@]}" >/dev/null
# Debian packages the tests drive, installed when missing (CI runs as
# root): Chromium for the browser tests (serve); prometheus (the server
# that scrapes us in cluster's metrics test, and promtool for deploy/);
# systemd-analyze for deploy/'s units; bubblewrap to run the image's
# rootfs (internal/ociimage). The update also gives `apt-get download`,
# which builds the image's base, a package index.
need=()
for c in chromium:chromium prometheus:prometheus promtool:prometheus systemd-analyze:systemd bwrap:bubblewrap; do
  command -v "${c%%:*}" >/dev/null 2>&1 || need+=("${c##*:}")
done
if [ ${#need[@]} -gt 0 ] && command -v apt-get >/dev/null 2>&1; then
  sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq && $sudo apt-get install -y -qq $(printf '%s\n' "${need[@]}" | sort -u) >/dev/null
fi
# The TypeScript SDK's declarations, for the parity test (internal/parity).
scripts/install-sdk.sh 0.3.337 >/dev/null
# axe-core, the accessibility checks of the browser tests (serve/a11y_test.go).
scripts/install-axe.sh >/dev/null

go vet ./...
# The Go API against the previous release (compat/previous): the SDK
# changes only compatibly, the other packages only in a new minor version
# named in CHANGELOG.md.
scripts/api-check.sh
echo "== go test -race ./... (CLI ${versions[0]})"
TETHER_CLI_VERSION=${versions[0]} go test -race -count=1 -parallel 6 -timeout 30m ./...
# The fuzzers run for a number of inputs, not a time: with a duration,
# Go 1.26's fuzz coordinator can report its own deadline as a failure
# ("context deadline exceeded", no crasher written; Go issue 75804,
# fixed in Go 1.27), which failed a CI run at FuzzVerbatim's 10 s. A count
# has no deadline to race; on a loaded machine it only takes longer. The
# counts are about 20 s and 10 s of this machine's idle rate.
echo "== fuzz the line reader and decoder (short run; longer: -fuzztime 10m)"
go test ./claude -run '^$' -fuzz '^FuzzDecode$' -fuzztime 200000x
echo "== fuzz the raw JSON check the cluster's events are written by"
go test ./internal/rawjson -run '^$' -fuzz '^FuzzVerbatim$' -fuzztime 400000x
for v in "${versions[@]:1}"; do
  echo "== real-CLI and browser tests (CLI $v)"
  TETHER_CLI_VERSION=$v go test -race -count=1 -parallel 6 -timeout 30m -run 'RealCLI|Browser' ./...
done
