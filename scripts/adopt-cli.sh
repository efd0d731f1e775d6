#!/usr/bin/env bash
# adopt-cli.sh VERSION — adopt a new Claude Code CLI release and the
# TypeScript Agent SDK released with it, in one command:
#
#   scripts/adopt-cli.sh 2.1.333
#
# 1. installs CLI VERSION and its SDK (0.3.<patch>, or $SDK_VERSION; the
#    SDK's package.json must name VERSION as its claudeCodeVersion), beside
#    the newest pinned ones (the last of scripts/test.sh's versions, and
#    scripts/install-sdk.sh's default);
# 2. diffs, against the newest pinned: the SDK's declarations (sdk.d.ts,
#    sdk-tools.d.ts: the names declared or removed, and the values added
#    to or dropped from sdk.d.ts's string unions), the CLI's --help, and
#    the fields the CLI really writes in an offline session (the answer to
#    initialize, system/init, the result, unknown messages) that Tether's
#    Go types lack (scripts/clifields, one session on each CLI); and what
#    the types generated from the SDK (internal/sdkgen) would change, with
#    the generator's notes on what its mapping tables do not name yet;
# 3. runs the parity test (internal/parity) on the new SDK, and the
#    real-CLI and browser tests (`-run 'RealCLI|Browser' ./...`: claude,
#    host, serve, cluster, …) on the new CLI, then the failed ones again on
#    the newest pinned CLI (scripts/compatreport), to tell what the release
#    changed from what fails on both;
# 4. prints a markdown report, ready for docs/cli-versions.md, and keeps it
#    with the raw outputs in $TETHER_ADOPT_DIR (default a fresh temporary
#    folder, named at the end);
# 5. when everything passed, moves the pins: scripts/test.sh keeps the
#    oldest supported version and the newest two (the one dropped is named
#    in docs/cli-versions.md's table of what each version is trusted for),
#    the SDK in scripts/install-sdk.sh and scripts/test.sh, internal/cli's
#    TestedCLIVersions, internal/parity's and internal/sdkgen's SDKVersion
#    (and the generated types in package claude), the versions named in
#    README.md and docs/parity.md, and the report goes into
#    docs/cli-versions.md. Review the diff and commit it.
#
# --pins VERSION skips 1-4 and only moves the pins (what a test of this
# script runs, or a maintainer who tested elsewhere).
#
# Knobs: RACE=1 runs the tests with -race; PKGS (default ./...) and TESTS
# (default 'RealCLI|Browser') narrow the test phase on a busy machine (the
# report says what ran; a narrowed run is not enough to move the pins
# unless PIN=1); PIN=0 never moves the pins. Exit status: 0 when
# everything passed (pins moved unless PIN=0), 1 when something failed, 2
# on bad usage or a failed install.
set -euo pipefail
cd "$(dirname "$0")/.."

pins_only=0
if [ "${1:-}" = --pins ]; then
  pins_only=1
  shift
fi
if [ $# -ne 1 ] || [[ ! $1 =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "usage: scripts/adopt-cli.sh [--pins] VERSION   (e.g. 2.1.333)" >&2
  echo "  --pins: only move the pins (after a run whose report you keep yourself)" >&2
  exit 2
fi
version=$1
sdk=${SDK_VERSION:-0.3.${version##*.}}
read -r -a pinned_all <<<"$(sed -n 's/^versions=(\(.*\))$/\1/p' scripts/test.sh)"
[ ${#pinned_all[@]} -ge 2 ] || { echo "adopt-cli: no versions=(…) line in scripts/test.sh" >&2; exit 2; }
oldest=${pinned_all[0]}
pinned=${pinned_all[${#pinned_all[@]}-1]}
pinned_sdk=$(sed -n 's/^\[ \$# -gt 0 \] || set -- \(.*\)$/\1/p' scripts/install-sdk.sh)
[ -n "$pinned_sdk" ] || { echo "adopt-cli: no default version in scripts/install-sdk.sh" >&2; exit 2; }
if [ "$(printf '%s\n%s\n' "$pinned" "$version" | sort -V | tail -n1)" != "$version" ] || [ "$version" = "$pinned" ]; then
  echo "adopt-cli: $version is not newer than the newest pinned version, $pinned" >&2
  exit 2
fi

out=${TETHER_ADOPT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/tether-adopt.XXXXXX")}
mkdir -p "$out"
race=(); [ "${RACE:-0}" = 1 ] && race=(-race)
pkgs=${PKGS:-./...}
tests=${TESTS:-RealCLI|Browser}
full=1; { [ "$pkgs" = ./... ] && [ "$tests" = 'RealCLI|Browser' ]; } || full=0

if [ "$pins_only" = 0 ]; then
echo "== installing CLI $version and SDK $sdk (newest pinned: CLI $pinned, SDK $pinned_sdk)" >&2
clis=$(scripts/install-cli.sh "$version" "$pinned") || exit 2
sdks=$(scripts/install-sdk.sh "$sdk" "$pinned_sdk") || exit 2
newcli=$(sed -n 1p <<<"$clis"); oldcli=$(sed -n 2p <<<"$clis")
newsdk=$(sed -n 1p <<<"$sdks"); oldsdk=$(sed -n 2p <<<"$sdks")
bundled=$(sed -n 's/^  "claudeCodeVersion": "\(.*\)",\{0,1\}$/\1/p' "$newsdk/package.json")
if [ -n "$bundled" ] && [ "$bundled" != "$version" ]; then
  echo "adopt-cli: SDK $sdk is the SDK of CLI $bundled, not $version (set SDK_VERSION)" >&2
  exit 2
fi

# 2. What is new.
names() { # the exported names a declaration file declares
  sed -n 's/^export declare \(type\|function\|const\|interface\|class\|namespace\) \([A-Za-z0-9_$]*\).*/\2/p' "$1" | sort -u
}
values() { # "Union: value" for each literal of a one-line string union
  grep -E "^export declare type [A-Za-z0-9_]+ = '" "$1" | while read -r _ _ _ name _ rest; do
    grep -o "'[^']*'" <<<"$rest" | tr -d "'" | sed "s/^/$name: /"
  done | sort -u
}
for f in sdk.d.ts sdk-tools.d.ts; do
  diff -u "$oldsdk/$f" "$newsdk/$f" >"$out/$f.diff" || true
  comm -13 <(names "$oldsdk/$f") <(names "$newsdk/$f") >"$out/$f.added"
  comm -23 <(names "$oldsdk/$f") <(names "$newsdk/$f") >"$out/$f.removed"
done
# A value added to a union declares no new name: list those apart.
comm -13 <(values "$oldsdk/sdk.d.ts") <(values "$newsdk/sdk.d.ts") >"$out/values.added"
comm -23 <(values "$oldsdk/sdk.d.ts") <(values "$newsdk/sdk.d.ts") >"$out/values.removed"
"$oldcli" --help >"$out/help.pinned" 2>&1 || true
"$newcli" --help >"$out/help.new" 2>&1 || true
diff -u "$out/help.pinned" "$out/help.new" >"$out/help.diff" || true
echo "== the fields CLI $version writes (one offline session on each CLI)" >&2
fields_status=0
go run ./scripts/clifields -cli "$newcli" -baseline "$oldcli" >"$out/fields.md" 2>"$out/fields.err" || fields_status=$?

# 2, continued. The generated types (internal/sdkgen) from the new SDK, into a
# scratch folder: what it would change in package claude, and its notes
# (a new tool, field, subtype or hook event that the mapping tables do
# not name yet gets a derived name; a name the tables keep but the SDK
# dropped fails generation).
echo "== generating the SDK's types from SDK $sdk" >&2
gen_status=0
mkdir -p "$out/gen"
go run ./internal/sdkgen -version "$sdk" -o "$out/gen" 2>"$out/gen.notes" || gen_status=$?
: >"$out/gen.diff"
for f in "$out"/gen/*_gen.go; do
  [ -f "$f" ] || continue
  diff -u --label "claude/${f##*/}" --label "claude/${f##*/} ($sdk)" <(tail -n +2 "claude/${f##*/}") <(tail -n +2 "$f") >>"$out/gen.diff" || true
done

# 3. The parity test on the new SDK, the real-CLI suite on the new CLI.
echo "== parity test against SDK $sdk" >&2
parity_status=0
TETHER_SDK_PATH=$newsdk go test -count=1 -run 'Parity' ./internal/parity >"$out/parity.txt" 2>&1 || parity_status=$?
gotest="go test${race[*]:+ ${race[*]}} -run '$tests' $pkgs"
echo "== real-CLI tests against CLI $version ($gotest)" >&2
go build -o "$out/compatreport" ./scripts/compatreport
TETHER_CLI_VERSION=$version go test "${race[@]}" -count=1 -timeout 30m -json -run "$tests" $pkgs >"$out/new.json" 2>&1 || true
: >"$out/pinned.json"
reruns=$("$out/compatreport" rerun "$out/new.json")
if [ -n "$reruns" ]; then
  echo "== the failed tests against the pinned CLI $pinned" >&2
  while IFS=$'\t' read -r pkg pattern; do
    TETHER_CLI_VERSION=$pinned go test "${race[@]}" -count=1 -timeout 30m -json -run "$pattern" "$pkg" >>"$out/pinned.json" 2>&1 || true
  done <<<"$reruns"
fi
suite_status=0
if [ -s "$out/pinned.json" ]; then
  "$out/compatreport" report -version "$version" -pinned "$pinned" "$out/new.json" "$out/pinned.json" >"$out/suite.txt" || suite_status=$?
else
  "$out/compatreport" report -version "$version" -pinned "$pinned" "$out/new.json" >"$out/suite.txt" || suite_status=$?
fi

# 4. The report.
list() { if [ -s "$1" ]; then sed 's/.*/`&`/' "$1" | paste -sd, - | sed 's/,/, /g'; else echo none; fi; }
{
  echo "## $version (against $pinned)"
  echo
  echo "Adopted with \`scripts/adopt-cli.sh $version\` on $(date -u +%Y-%m-%d), with SDK $sdk."
  echo
  echo "* **The SDK's declarations** (against $pinned_sdk): sdk.d.ts declares $(list "$out/sdk.d.ts.added") anew and drops $(list "$out/sdk.d.ts.removed"); sdk-tools.d.ts declares $(list "$out/sdk-tools.d.ts.added") anew and drops $(list "$out/sdk-tools.d.ts.removed") ($(grep -c '^[-+][^-+]' "$out/sdk.d.ts.diff" || true) and $(grep -c '^[-+][^-+]' "$out/sdk-tools.d.ts.diff" || true) lines changed)."
  echo "* **Values of the SDK's string unions** (a value added declares no new name): added $(list "$out/values.added"), dropped $(list "$out/values.removed")."
  if [ -s "$out/help.diff" ]; then
    echo "* **\`--help\`** changed: $(grep -c '^[-+][^-+]' "$out/help.diff" || true) lines (help.diff)."
  else
    echo "* **\`--help\`**: unchanged."
  fi
  if [ "$fields_status" -le 1 ]; then
    echo "* **What the CLI writes**, an offline session on each version:"
    echo
    sed 's/^./  &/' "$out/fields.md"
    echo
  else
    echo "* **What the CLI writes**: the session failed ($(head -c 300 "$out/fields.err" | tr '\n' ' '))."
  fi
  if [ "$gen_status" != 0 ]; then
    echo "* **The generated types** (\`go generate ./claude\`) fail on SDK $sdk:"
    echo
    sed 's/^/  * /' "$out/gen.notes" | head -40
    echo
  elif [ -s "$out/gen.diff" ]; then
    echo "* **The generated types** change: $(grep -c '^[-+][^-+]' "$out/gen.diff" || true) lines (gen.diff)$([ -s "$out/gen.notes" ] && echo '; the generator notes:')"
    [ -s "$out/gen.notes" ] && { echo; sed 's/^/  * /' "$out/gen.notes" | head -40; echo; }
  else
    echo "* **The generated types**: unchanged."
  fi
  if [ "$parity_status" = 0 ]; then
    echo "* **The parity test** passes on SDK $sdk."
  else
    echo "* **The parity test fails** on SDK $sdk (each line a row to add or change in docs/parity.md, or a constant to add for a value):"
    echo
    grep -E 'parity_test.go:[0-9]+: ' "$out/parity.txt" | grep -v 'parity with' | sed 's/^ *parity_test.go:[0-9]*: /  * /' | head -60
    echo
  fi
  echo "* **The real-CLI suite** (\`$gotest\`$([ "$full" = 1 ] || echo ', a narrowed run')):"
  echo
  echo '  ```'
  sed 's/^/  /' "$out/suite.txt"
  echo '  ```'
} >"$out/report.md"
cat "$out/report.md"

status=0
{ [ "$gen_status" = 0 ] && [ "$parity_status" = 0 ] && [ "$suite_status" = 0 ] && [ "$fields_status" -le 1 ]; } || status=1
pin=${PIN:-$full}
if [ "$status" != 0 ] || [ "$pin" = 0 ]; then
  echo >&2
  [ "$status" != 0 ] && echo "adopt-cli: not moving the pins: something above failed (outputs in $out)" >&2
  [ "$status" = 0 ] && echo "adopt-cli: all passed; pins not moved (PIN=0, or a narrowed run: PIN=1 moves them)" >&2
  echo "(outputs: $out)" >&2
  exit "$status"
fi
fi

# 5. Move the pins: the oldest supported and the newest two.
dropped=()
for v in "${pinned_all[@]:1:${#pinned_all[@]}-2}"; do dropped+=("$v"); done
newset=("$oldest" "$pinned" "$version")
echo "== moving the pins: ${pinned_all[*]} -> ${newset[*]}; SDK $pinned_sdk -> $sdk" >&2
sed -i "s/^versions=(.*)$/versions=(${newset[*]})/" scripts/test.sh
sed -i "s/^scripts\/install-sdk.sh $pinned_sdk >\/dev\/null$/scripts\/install-sdk.sh $sdk >\/dev\/null/" scripts/test.sh
sed -i "s/^\[ \$# -gt 0 \] || set -- $pinned_sdk$/[ \$# -gt 0 ] || set -- $sdk/" scripts/install-sdk.sh
golist=$(printf '"%s", ' "${newset[@]}"); golist=${golist%, }
sed -i "s/^var TestedCLIVersions = \[\]string{.*}$/var TestedCLIVersions = []string{$golist}/" internal/cli/doctor.go
sed -i "s/^const SDKVersion = \".*\"$/const SDKVersion = \"$sdk\"/; s/(it bundles CLI [0-9.]*)/(it bundles CLI $version)/" internal/parity/parity_test.go
# The generated types follow the SDK: its version in the generator, and
# the files generated from it above (--pins: generated now), since their
# freshness test reads the pinned SDK.
sed -i "s/^const SDKVersion = \".*\"$/const SDKVersion = \"$sdk\"/" internal/sdkgen/main.go
if [ -f "$out/gen/tools_input_gen.go" ]; then
  cp "$out"/gen/*_gen.go claude/
elif [ -f go.mod ]; then
  go generate ./claude
fi
sed -i "s/real-CLI and browser tests again against [0-9.]* and [0-9.]*\./real-CLI and browser tests again against $pinned and $version./; s/compares Tether with the TypeScript SDK [0-9.]* /compares Tether with the TypeScript SDK $sdk /" README.md
sed -i "s/\*\*$pinned_sdk\*\* (which bundles Claude Code CLI [0-9.]*)/**$sdk** (which bundles Claude Code CLI $version)/; s/scripts\/install-sdk.sh $pinned_sdk /scripts\/install-sdk.sh $sdk /; s/on every pinned CLI version: [0-9.]*, [0-9.]* and [0-9.]*,/on every pinned CLI version: $oldest, $pinned and $version,/" docs/parity.md
# docs/cli-versions.md: the tested set, a row for each version no longer
# run, and the report above the previous one.
md=docs/cli-versions.md
sed -i "s/^Tested set: .*/Tested set: **$oldest** (the oldest supported), **$pinned** and **$version** (the newest two)./" "$md"
for v in "${dropped[@]}"; do
  row="| $v | the whole suite passed on it while it was pinned (its section below); no longer run, so trusted for what $oldest and $pinned both pass |"
  grep -qF "| $v |" "$md" || sed -i "/^<!-- adopt-cli: trusted rows above -->$/i $row" "$md"
done
[ -f "$out/report.md" ] && awk -v report="$out/report.md" '
  { print }
  /^<!-- adopt-cli: reports below, newest first -->$/ { print ""; while ((getline line < report) > 0) print line }
 ' "$md" >"$out/cli-versions.md" && cp "$out/cli-versions.md" "$md"
gofmt -l internal/cli internal/parity
echo >&2
echo "adopt-cli: pins moved to ${newset[*]} and SDK $sdk; the report is in $md. Review (git diff), then:" >&2
echo "  git add -A && git commit -m \"adopt CLI $version and SDK $sdk\"" >&2
echo "(outputs: $out)" >&2
