#!/bin/sh
# The GPU-server side of the Chromium payload (bench/chrome-pack.sh): gathers its parts, which arrive one
# per transfer in .chrome-pack/, in /tmp/qgemm-chrome/parts (kept between commands run back to back), checks
# them against manifest.txt, unpacks the whole into /tmp/qgemm-chrome/root once, and runs
# tools/chrome-gpu-probe.mjs with the payload's Node (attempts A to F; the table last). Modes:
#   sh tools/chrome-gpu-probe.sh stage            keep the part(s) now in .chrome-pack/; say which are still missing
#   sh tools/chrome-gpu-probe.sh unpack           stage, then unpack (for the bench: CHROMIUM_PATH=/tmp/qgemm-chrome/root/chromium)
#   sh tools/chrome-gpu-probe.sh run [OPTIONS]    stage, unpack, then the probe (OPTIONS go to it; results under $OUT)
#   sh tools/chrome-gpu-probe.sh bench [BENCH]    stage, unpack, the probe (QGEMM_PROBE_BUDGET s, default 200; extra
#                                                 options in QGEMM_PROBE_ARGS; log in $OUT/probe.log), then with the
#                                                 attempt that gave a hardware adapter (A-F, tools/chromium.ts does
#                                                 its setup) dist/node/bench.js BENCH on the payload's Node
# QGEMM_CHROME_ICD: the Vulkan ICD for the probe, Chrome and Dawn (default NVIDIA's). A .device/ort.tar.xz, where
# present (onnxruntime-node), is staged like a part and unpacked before the bench.
# Exit: 0 a hardware adapter (run) or done (stage, unpack, bench: the bench's own); 1 no attempt gave one; 2 bad
# use; 3 parts missing.
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
for f in .chrome-pack/manifest.txt .chrome-pack/chrome.tar.xz.part* .chrome-pack/web.tar.xz .device/ort.tar.xz; do [ -f "$f" ] && cp "$f" "$parts/"; done
if [ ! -f "$parts/manifest.txt" ]; then
  echo "chrome-gpu-probe: no manifest: copy .chrome-pack/manifest.txt over with each part (npm run bench:chrome-pack makes them)" >&2
  exit 3
fi
have=''
missing=''
while read -r sum name; do
  case "$sum" in '#'*) continue ;; esac
  if [ -f "$parts/$name" ] && [ "$(sha256sum < "$parts/$name" | cut -d' ' -f1)" = "$sum" ]; then have="$have $name"; else missing="$missing $name"; fi
done < "$parts/manifest.txt"
echo "chrome-gpu-probe: parts here:${have:- none}; missing:${missing:- none}"
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
if [ "$mode" = run ]; then exec "$root/bin/node" tools/chrome-gpu-probe.mjs --prefix "$root" --out "$out" --icd "$icd" "$@"; fi

# bench: the probe first, its log kept; then the bench with the attempt it found, or nothing.
mkdir -p "$out"
# An earlier probe's report would name an attempt this one did not find.
rm -f "$out/chrome-gpu-probe.json"
# shellcheck disable=SC2086
"$root/bin/node" tools/chrome-gpu-probe.mjs --prefix "$root" --out "$out" --icd "$icd" --budget "${QGEMM_PROBE_BUDGET:-200}" ${QGEMM_PROBE_ARGS:-} > "$out/probe.log" 2>&1
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
export QGEMM_CHROME_ATTEMPT="$attempt" QGEMM_CHROMIUM_ADAPTER=hardware CHROMIUM_PATH="$root/chromium" VK_ICD_FILENAMES="$icd" VK_DRIVER_FILES="$icd"
echo "chrome-gpu-probe: the bench, Chrome with attempt $attempt: dist/node/bench.js $*"
exec "$root/bin/node" dist/node/bench.js "$@"
