#!/usr/bin/env bash
# install-axe.sh [VERSION] — install axe-core, the accessibility rule
# engine the browser tests run on every screen they look at
# (serve/a11y_test.go), into a cache folder outside the repository, and
# print the path of its axe.min.js. The UI never loads it; the tests inject
# it into the page. The default VERSION is the one serve/a11y_test.go pins.
# The folder is
# ${TETHER_AXE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tether/axe}/<version>/node_modules/axe-core.
set -euo pipefail
v=${1:-4.14.1}
dir="${TETHER_AXE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tether/axe}/$v"
js="$dir/node_modules/axe-core/axe.min.js"
if ! grep -q "\"version\": \"$v\"" "$dir/node_modules/axe-core/package.json" 2>/dev/null || [ ! -f "$js" ]; then
  mkdir -p "$dir"
  # A package.json of our own keeps npm from walking up into a parent project.
  [ -f "$dir/package.json" ] || printf '{"name":"tether-axe-cache","private":true}\n' >"$dir/package.json"
  echo "installing axe-core@$v into $dir" >&2
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error --save-exact --ignore-scripts "axe-core@$v" >&2)
fi
[ -f "$js" ] || { echo "install-axe: $js missing after the install" >&2; exit 1; }
echo "$js"
