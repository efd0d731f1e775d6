#!/usr/bin/env bash
# stress-test.sh — the test suite on a machine with every core busy, to
# shake out tests that wait for a fixed time or for one particular way a
# state can arrive (an event where a snapshot may come instead, …).
#
# It starts one busy loop per core (nproc), runs the suite RUNS times in a
# row (default 3) and stops at the first failure; the busy loops are
# killed on exit, however it exits (trap).
#
#   scripts/stress-test.sh                 # scripts/test.sh, 3 times
#   RUNS=10 scripts/stress-test.sh         # 10 times
#   scripts/stress-test.sh ./serve         # only these packages, with the
#                                          # race detector, -count=1
#   BUSY=1 scripts/stress-test.sh ./serve  # one busy loop instead of nproc
#
# With package arguments it runs `go test -race -count=1 -timeout 30m`
# on them (extra go test flags in GOTESTFLAGS, e.g. GOTESTFLAGS='-run Foo');
# without, the whole suite as CI runs it (scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${RUNS:-3}
busy=${BUSY:-$(nproc)}
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for _ in $(seq "$busy"); do
  (while :; do :; done) &
  pids+=($!)
done
echo "== $busy busy loops (pids ${pids[*]}); $runs runs"

for i in $(seq "$runs"); do
  echo "== run $i of $runs"
  if [ $# -gt 0 ]; then
    # shellcheck disable=SC2086 # GOTESTFLAGS is split on purpose
    go test -race -count=1 -timeout 30m ${GOTESTFLAGS:-} "$@" || { echo "== run $i failed"; exit 1; }
  else
    scripts/test.sh || { echo "== run $i failed"; exit 1; }
  fi
done
echo "== $runs runs passed with $busy busy loops"
