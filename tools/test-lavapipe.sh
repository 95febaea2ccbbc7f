#!/usr/bin/env bash
# Runs the lavapipe tier (test/lavapipe/): the subgroup-matrix kernel with Dawn's real builtins on Mesa's
# lavapipe (>= 26), fetched by tools/lavapipe.sh into .lavapipe/ (nothing installed into the system).
# Lavapipe needs trixie's glibc, newer than this machine's may be, so Node runs through the extracted
# dynamic loader with the extracted libraries first; vitest then runs its files on worker threads
# (`--pool=threads`), because the loader makes process.execPath unusable for forked workers.
# A failed fetch fails this script with the fetch's one-line reason.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(tools/lavapipe.sh) || exit 1
eval "$(tools/lavapipe.sh --env)"
mkdir -p "$MESA_SHADER_CACHE_DIR"
lib="$root/root/usr/lib/x86_64-linux-gnu"
node=$(readlink -f "$(command -v node)")
echo "lavapipe: Mesa $(cat "$root/mesa-version") from $root"
QGEMM_LAVAPIPE=1 exec "$lib/ld-linux-x86-64.so.2" --library-path "$lib:/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu" \
  "$node" node_modules/vitest/vitest.mjs run --pool=threads test/lavapipe "$@"
