#!/usr/bin/env bash
# bench-roundtrip.sh: the permission round trip against a raw pipe echo.
#
#   scripts/bench-roundtrip.sh            # 9 rounds of 3000 round trips each
#   RUNS=15 scripts/bench-roundtrip.sh
#
# Each round runs BenchmarkPipeEcho and then BenchmarkPermissionRoundTrip
# (package claude) back to back, so load on the machine hits both alike,
# and takes the median round trip of each as the fake CLI sees it (p50-µs).
# It prints every round and the median over rounds of the difference: the
# goal is <= 50 µs. Needs only go.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-9}
BIN=$(mktemp -d)/claude.test
trap 'rm -rf "$(dirname "$BIN")"' EXIT
go test -c -o "$BIN" ./claude

p50() { awk -v name="$1" '$1 ~ name { for (i = 1; i <= NF; i++) if ($(i+1) == "p50-µs") print $i }'; }

diffs=()
for i in $(seq "$RUNS"); do
	out=$("$BIN" -test.run '^$' -test.bench 'PipeEcho|PermissionRoundTrip' -test.benchtime 3000x -test.count 1)
	echo_us=$(p50 PipeEcho <<<"$out")
	perm_us=$(p50 PermissionRoundTrip <<<"$out")
	d=$(awk -v a="$perm_us" -v b="$echo_us" 'BEGIN { printf "%.1f", a - b }')
	printf 'round %d: echo %s µs, permission %s µs, over the echo %s µs\n' "$i" "$echo_us" "$perm_us" "$d"
	diffs+=("$d")
done
printf '%s\n' "${diffs[@]}" | sort -n | awk '{ v[NR] = $1 } END { printf "median over the echo: %s µs (goal <= 50)\n", v[int((NR + 1) / 2)] }'
