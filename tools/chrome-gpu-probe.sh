#!/bin/sh
# The GPU-server side of the Chromium payload (bench/chrome-pack.sh): gathers its parts, which arrive one
# per transfer in .chrome-pack/, in /tmp/qgemm-chrome/parts (kept between commands run back to back), checks
# them against manifest.txt, unpacks the whole into /tmp/qgemm-chrome/root once, and runs
# tools/chrome-gpu-probe.mjs with the payload's Node (attempts A to F; the table last). Modes:
#   sh tools/chrome-gpu-probe.sh stage            keep the part(s) now in .chrome-pack/; say which are still missing
#   sh tools/chrome-gpu-probe.sh unpack           stage, then unpack (for the bench: CHROMIUM_PATH=/tmp/qgemm-chrome/root/chromium)
#   sh tools/chrome-gpu-probe.sh run [OPTIONS]    stage, unpack, then the probe (OPTIONS go to it; results under $OUT,
#                                                 its log in $OUT/probe.log, printed at the end)
#   sh tools/chrome-gpu-probe.sh bench [BENCH]    stage, unpack, the probe (QGEMM_PROBE_BUDGET s, default 200; extra
#                                                 options in QGEMM_PROBE_ARGS; log in $OUT/probe.log), then with the
#                                                 attempt that gave a hardware adapter (A-F, tools/chromium.ts does
#                                                 its setup) dist/node/bench.js BENCH on the payload's Node (log in
#                                                 $OUT/bench.log, its last 40 lines printed); the Vulkan loader from
#                                                 .gl/ and Dawn from .device/dawn.node.xz where they came along
# QGEMM_CHROME_ICD: the Vulkan ICD for the probe, Chrome and Dawn (default NVIDIA's). A .device/ort.tar.xz, where
# present (onnxruntime-node), is staged like a part and unpacked before the bench.
# Exit: 0 a hardware adapter (run) or done (stage, unpack, bench: the bench's own); 1 no attempt gave one; 2 bad
# use; 3 parts missing or corrupt.
set -u
cd "$(dirname "$0")/.."
base=${QGEMM_CHROME_BASE:-/tmp/qgemm-chrome}
parts=$base/parts
root=$base/root
mode=${1:-run}
[ $# -gt 0 ] && shift
icd=${QGEMM_CHROME_ICD:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
case "$mode" in stage | unpack | run | bench) ;; *) echo "usage: sh tools/chrome-gpu-probe.sh stage|unpack|run|bench [probe or bench options]" >&2; exit 2 ;; esac

mkdir -p "$parts"
[ -f .chrome-pack/manifest.txt ] && cp .chrome-pack/manifest.txt "$parts/"
if [ ! -f "$parts/manifest.txt" ]; then
  echo "chrome-gpu-probe: no manifest: copy .chrome-pack/manifest.txt over with each part (npm run bench:chrome-pack makes them)" >&2
  exit 3
fi
# A part is kept only where its sha256 is the manifest's: a corrupt copy is named, and a good one staged
# before stays.
corrupt=''
for f in .chrome-pack/chrome.tar.xz.part* .chrome-pack/web.tar.xz .device/ort.tar.xz; do
  [ -f "$f" ] || continue
  want=$(awk -v n="$(basename "$f")" '$2 == n {print $1}' "$parts/manifest.txt")
  if [ -n "$want" ] && [ "$(sha256sum < "$f" | cut -d' ' -f1)" != "$want" ]; then corrupt="$corrupt $(basename "$f")"; else cp "$f" "$parts/"; fi
done
have=''
missing=''
while read -r sum name; do
  case "$sum" in '#'*) continue ;; esac
  if [ -f "$parts/$name" ] && [ "$(sha256sum < "$parts/$name" | cut -d' ' -f1)" = "$sum" ]; then have="$have $name"; else missing="$missing $name"; fi
done < "$parts/manifest.txt"
echo "chrome-gpu-probe: parts here:${have:- none}; missing:${missing:- none}"
if [ -n "$corrupt" ]; then
  echo "chrome-gpu-probe: corrupt (sha256 not the manifest's), not kept:$corrupt: copy it over again" >&2
  exit 3
fi
[ "$mode" = stage ] && exit 0
if [ -n "$missing" ]; then
  echo "chrome-gpu-probe: parts missing:$missing (copy each to .chrome-pack/ and run this again, the commands back to back: /tmp lasts about 30 s between them)" >&2
  exit 3
fi

if [ ! -f "$root/.unpacked" ] || ! cmp -s "$root/.unpacked" "$parts/manifest.txt"; then
  rm -rf "$root" && mkdir -p "$root"
  whole=$(sed -n 's/^# whole //p' "$parts/manifest.txt")
  # shellcheck disable=SC2046
  got=$(cat $(grep -v '^#' "$parts/manifest.txt" | awk '{print $2}' | sed "s|^|$parts/|") | tee "$base/whole.tar.xz" | sha256sum | cut -d' ' -f1)
  if [ -n "$whole" ] && [ "$got" != "$whole" ]; then echo "chrome-gpu-probe: the joined parts do not match the manifest" >&2; exit 3; fi
  start=$(date +%s)
  xz -dc "$base/whole.tar.xz" | tar -x -C "$root" || { echo "chrome-gpu-probe: unpacking failed" >&2; exit 3; }
  rm -f "$base/whole.tar.xz"
  cp "$parts/manifest.txt" "$root/.unpacked"
  echo "chrome-gpu-probe: unpacked into $root in $(($(date +%s) - start)) s ($(du -sh "$root" | cut -f1))"
fi
# Libraries Chromium takes from outside the payload: glibc's alone, where the payload is complete.
outside=$(LD_LIBRARY_PATH="$root/lib:$root/usr/lib/x86_64-linux-gnu" ldd "$root/usr/lib/chromium/chromium" 2>&1 | grep -v "$root" | awk '{print $1}' | paste -sd' ')
echo "chrome-gpu-probe: $(grep "^Chromium" "$root/VERSIONS" | head -1); libraries from the system: $outside"
# The bench page's node_modules files (web.tar.xz), where present: node_modules here links to them.
if [ -f "$parts/web.tar.xz" ] && [ ! -f "$root/.web" ]; then
  tar -xJf "$parts/web.tar.xz" -C "$root" && touch "$root/.web" && echo "chrome-gpu-probe: the bench page's files unpacked into $root/node_modules"
fi
# Each package on its own: node_modules may be here already (a device-run.sh before this unpacked
# onnxruntime-node into it), and a link of the whole folder would then be left unmade.
for p in "$root"/node_modules/@tensorflow "$root"/node_modules/onnxruntime-web; do
  name=node_modules/${p#"$root"/node_modules/}
  if [ -d "$p" ] && [ ! -e "$name" ]; then mkdir -p node_modules && ln -s "$p" "$name"; fi
done
[ "$mode" = unpack ] && exit 0

export QGEMM_CHROME_PREFIX="$root"
out=${OUT:-chrome-probe-out}
mkdir -p "$out"
# The payload's Node with the system's C++ runtime where it has one, else the payload's (lib/ holds it).
nodeenv=''
"$root/bin/node" -e 0 > /dev/null 2>&1 || nodeenv="LD_LIBRARY_PATH=$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
node() { env ${nodeenv:+"$nodeenv"} "$root/bin/node" "$@"; }
# An earlier probe's report would name an attempt this one did not find.
rm -f "$out/chrome-gpu-probe.json"
if [ "$mode" = run ]; then
  node tools/chrome-gpu-probe.mjs --prefix "$root" --out "$out" --icd "$icd" "$@" > "$out/probe.log" 2>&1
  P=$?
  cat "$out/probe.log"
  exit $P
fi

# bench: the probe first, its log kept; then the bench with the attempt it found, or nothing.
# shellcheck disable=SC2086
node tools/chrome-gpu-probe.mjs --prefix "$root" --out "$out" --icd "$icd" --budget "${QGEMM_PROBE_BUDGET:-200}" ${QGEMM_PROBE_ARGS:-} > "$out/probe.log" 2>&1
P=$?
tail -12 "$out/probe.log"
attempt=$(sed -n 's/^  "hardware": "\([A-F]\)",$/\1/p' "$out/chrome-gpu-probe.json" 2>/dev/null)
if [ -z "$attempt" ]; then
  if [ -s "$out/chrome-gpu-probe.json" ]; then
    echo "chrome-gpu-probe: no attempt gave a hardware adapter, so no bench in Chrome: the table above names each blocker ($out/chrome-gpu-probe.json)" >&2
  else
    echo "chrome-gpu-probe: the probe exited $P and wrote no report, so no bench in Chrome: see $out/probe.log" >&2
  fi
  exit 1
fi
# The bundles of the payload (npm run bench:device-pack), over any dist/ an earlier call left.
if [ -f .device/dist.tar.xz ]; then rm -rf dist/node dist/browser && tar -xJf .device/dist.tar.xz && echo "chrome-gpu-probe: dist/ unpacked from .device/dist.tar.xz"; fi
if [ -f "$parts/ort.tar.xz" ]; then tar --keep-directory-symlink -xJf "$parts/ort.tar.xz" && echo "chrome-gpu-probe: onnxruntime-node unpacked"; fi
# The Vulkan loader (.gl/, bench/device-pack.sh) for Dawn in Node, and Dawn itself, where they came along.
if ls .gl/*.deb > /dev/null 2>&1; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
# Through QGEMM_DAWN_NODE, not --dawn: a Dawn that finds no adapter then skips the Node rows only, where
# --dawn would stop the whole run (bench/environment.ts chooseAdapter) and Chrome's rows with it.
if [ -f .device/dawn.node.xz ]; then xz -dc .device/dawn.node.xz > "$base/dawn.node" && export QGEMM_DAWN_NODE="$base/dawn.node"; fi
export QGEMM_CHROME_ATTEMPT="$attempt" QGEMM_CHROMIUM_ADAPTER=hardware CHROMIUM_PATH="$root/chromium" VK_ICD_FILENAMES="$icd" VK_DRIVER_FILES="$icd"
echo "chrome-gpu-probe: the bench, Chrome with attempt $attempt: dist/node/bench.js $*"
node dist/node/bench.js "$@" > "$out/bench.log" 2>&1
B=$?
tail -40 "$out/bench.log"
exit $B
