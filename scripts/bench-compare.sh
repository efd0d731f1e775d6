#!/usr/bin/env bash
# bench-compare.sh: Tether's claude.Query side by side with the official
# TypeScript SDK's query() (@anthropic-ai/claude-agent-sdk, pinned below),
# both reading the same fake CLI stream of 100k messages written by
# package claude's test binary ("firehose" script), so the CLI costs the
# same for both and only the host side differs. Two mixes:
#
#   real    the stream the CLI writes with partial messages on, per model
#           message: message_start, content_block_start, 12 text deltas,
#           the assistant message, content_block_stop, message_delta,
#           message_stop, an assistant tool_use and a user tool_result
#           (60% token deltas)
#   deltas  85% token deltas, 10% assistant messages, 5% tool results
#
#   scripts/bench-compare.sh            # both mixes, 5 runs each, 100000 messages
#   MIX=real RUNS=9 N=200000 scripts/bench-compare.sh
#   HOST_GOMAXPROCS=1 scripts/bench-compare.sh   # the Tether host on one processor
#
# HOST_GOMAXPROCS sets GOMAXPROCS for the Tether host alone (benchhost
# -procs; not for the fake CLI, not for Node): docs/session-io.md measures
# with it what the Go runtime's second processor costs on this stream.
#
# It installs the SDK with npm into a cache directory outside the repo
# ($TETHER_BENCH_CACHE, default ~/.cache/tether/bench) on first use, and
# prints the median of each metric. The turn measure (the goals) runs from
# the first message to the result, without the processes' start: the
# host's throughput (msgs/s) and CPU time (user+system). The wall measure
# runs from the call to the end, start-up included. And the host's peak
# RSS. Needs go, node (>= 18) and npm.
set -euo pipefail
cd "$(dirname "$0")/.."

SDK_VERSION=0.3.332
MIXES=${MIX:-real deltas}
N=${N:-100000}
RUNS=${RUNS:-5}
CACHE=${TETHER_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tether/bench}
SDK_DIR=$CACHE/sdk-$SDK_VERSION
SDK=$SDK_DIR/node_modules/@anthropic-ai/claude-agent-sdk/sdk.mjs

mkdir -p "$CACHE"
if [ ! -f "$SDK" ]; then
	echo "installing @anthropic-ai/claude-agent-sdk@$SDK_VERSION into $SDK_DIR" >&2
	mkdir -p "$SDK_DIR"
	(cd "$SDK_DIR" && { [ -f package.json ] || echo '{"private":true}' >package.json; } &&
		npm install --no-audit --no-fund --loglevel=error "@anthropic-ai/claude-agent-sdk@$SDK_VERSION" >&2)
fi

echo "building the fake CLI and the Tether host" >&2
go test -c -o "$CACHE/claude.test" ./claude
# Static (no cgo), as Go programs are usually shipped: with cgo the host
# maps libc and the dynamic loader too, about 1.5 MB more resident memory
# that is no work of Tether's (BENCH_CGO=1 measures that build instead).
CGO_ENABLED=${BENCH_CGO:-0} go build -o "$CACHE/benchhost" ./scripts/benchhost

cat >"$CACHE/bench-ts.mjs" <<'JS'
// The TypeScript host: query() over the fake CLI, one line of JSON stats.
const [sdkPath, cliPath, n] = process.argv.slice(2);
const { query } = await import(sdkPath);
const start = process.hrtime.bigint();
let msgs = 0;
let first = 0n;
let firstCPU = null;
for await (const m of query({
  prompt: String(n),
  options: {
    pathToClaudeCodeExecutable: cliPath,
    env: { ...process.env, TETHER_FAKE_CLI_SCRIPT: "firehose" },
  },
})) {
  if (m.type !== "result") {
    if (msgs === 0) {
      first = process.hrtime.bigint();
      firstCPU = process.cpuUsage();
    }
    msgs++;
  }
}
const end = process.hrtime.bigint();
const ru = process.resourceUsage();
const streamCPU = process.cpuUsage(firstCPU);
console.log(JSON.stringify({
  impl: "ts-sdk",
  msgs,
  seconds: Number(end - start) / 1e9,
  stream_seconds: Number(end - first) / 1e9,
  msgs_per_s: msgs / (Number(end - first) / 1e9),
  wall_msgs_per_s: msgs / (Number(end - start) / 1e9),
  stream_cpu_s: (streamCPU.user + streamCPU.system) / 1e6,
  cpu_s: (ru.userCPUTime + ru.systemCPUTime) / 1e6,
  peak_rss_mb: ru.maxRSS / 1024,
}));
JS

for mix in $MIXES; do
export TETHER_BENCH_MIX=$mix
results=$CACHE/results-$mix.jsonl
: >"$results"
for i in $(seq "$RUNS"); do
	echo "mix $mix: run $i/$RUNS" >&2
	# Alternate, so that load on the machine hits both alike.
	"$CACHE/benchhost" -cli "$CACHE/claude.test" -n "$N" -procs "${HOST_GOMAXPROCS:-0}" >>"$results"
	node "$CACHE/bench-ts.mjs" "$SDK" "$CACHE/claude.test" "$N" >>"$results"
done

node - "$results" "$N" "$RUNS" "$SDK_VERSION" "$mix" <<'JS'
const fs = require("fs");
const [file, n, runs, sdkVersion, mix] = process.argv.slice(2);
const rows = fs.readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l));
for (const r of rows) {
  if (r.msgs !== Number(n)) throw new Error(`${r.impl} received ${r.msgs} of ${n} messages`);
}
const median = (impl, key) => {
  const v = rows.filter((r) => r.impl === impl).map((r) => r[key]).sort((a, b) => a - b);
  return v[Math.floor(v.length / 2)];
};
const fmt = (x, d) => x.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
const metrics = [
  ["turn: throughput (msgs/s)", "msgs_per_s", 0, (t, s) => `${fmt(t / s, 2)}x`, "tether >= 3x ts"],
  ["turn: host CPU (s)", "stream_cpu_s", 3, (t, s) => `${fmt(t / s, 2)}x`, "tether <= 1/4 ts"],
  ["wall: throughput (msgs/s)", "wall_msgs_per_s", 0, (t, s) => `${fmt(t / s, 2)}x`, ""],
  ["wall: host CPU (s)", "cpu_s", 3, (t, s) => `${fmt(t / s, 2)}x`, ""],
  ["peak RSS (MB)", "peak_rss_mb", 1, (t, s) => `${fmt(t / s, 2)}x`, "tether <= 16 MB"],
  ["wall, start to end (s)", "seconds", 3, (t, s) => `${fmt(t / s, 2)}x`, ""],
];
console.log(`mix ${mix}: ${n} messages, median of ${runs} runs; ts = @anthropic-ai/claude-agent-sdk@${sdkVersion} on node ${process.version}`);
console.log("");
const w = [26, 12, 12, 8, 18];
const line = (cells) => cells.map((c, i) => String(c).padEnd(w[i])).join(" | ");
console.log(line(["metric", "tether", "ts", "ratio", "goal"]));
console.log(w.map((x) => "-".repeat(x)).join("-|-"));
for (const [name, key, d, ratio, goal] of metrics) {
  const t = median("tether", key), s = median("ts-sdk", key);
  console.log(line([name, fmt(t, d), fmt(s, d), ratio(t, s), goal]));
}
JS
echo
done
