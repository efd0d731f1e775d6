#!/usr/bin/env bash
# api-check.sh — hold this tree's Go API against the previous release's.
#
# The previous release is the commit in compat/previous. It is checked out
# from this repository's own history (git worktree add --detach) into a
# temporary directory; apidiff writes both module APIs (every public
# package: what is not under internal/) and compares them; then
# scripts/apicheck applies the rules:
#   - claude and claude/claudetest change only compatibly (the Go 1
#     promise), except reviewed lines in compat/api-exceptions.txt;
#   - host, serve, cluster, team (and every other public package) may
#     change incompatibly only in a new minor version (claude.Version's
#     major.minor above the previous release's), each changed name named in
#     CHANGELOG.md's section for that version.
#
# apidiff is pinned below and run through `go install pkg@version` into the
# temporary directory, not made a tool dependency in go.mod: a `tool` line
# would add golang.org/x/exp (no compatibility promise) and its own
# requirements to the module graph of every program that imports the SDK,
# and minimal version selection would raise theirs. The module proxy and
# checksum database verify the pinned version all the same.
#
# Under CI=true a missing previous commit (a shallow clone) fails; locally
# it skips with a note.
set -euo pipefail
cd "$(dirname "$0")/.."

APIDIFF=golang.org/x/exp/cmd/apidiff@v0.0.0-20261113113407-e3970619a1a4

prev=$(tr -d '[:space:]' < compat/previous)
if ! git cat-file -e "${prev}^{commit}" 2>/dev/null; then
  msg="api-check: the previous release $prev (compat/previous) is not in this clone's history; fetch it (git fetch --unshallow)"
  if [ "${CI:-}" = true ]; then
    echo "$msg" >&2
    exit 1
  fi
  echo "$msg: skipped" >&2
  exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tether-api-check.XXXXXX")
cleanup() {
  git worktree remove --force "$tmp/old" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
git worktree prune # a run killed before its clean-up leaves a stale entry
git worktree add --quiet --detach "$tmp/old" "$prev"

GOBIN="$tmp/bin" go install "$APIDIFF"
module=$(go list -m)
# apidiff notes each internal package it leaves out on stderr: keep only
# what goes wrong.
writeapi() { # dir out
  (cd "$1" && "$tmp/bin/apidiff" -m -w "$2" "$module") 2> >(grep -v '^Ignoring internal package' >&2)
}
writeapi "$tmp/old" "$tmp/old.api"
writeapi "$PWD" "$tmp/new.api"
"$tmp/bin/apidiff" -m "$tmp/old.api" "$tmp/new.api" > "$tmp/report.txt" 2> >(grep -v '^Ignoring internal package' >&2)

echo "== API against the previous release ${prev:0:7}"
go run ./scripts/apicheck -module "$module" -report "$tmp/report.txt" -old "$tmp/old" -new . \
  -exceptions compat/api-exceptions.txt -changelog CHANGELOG.md
