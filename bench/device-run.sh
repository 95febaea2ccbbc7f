#!/bin/sh
# One command on a bare GPU machine (Linux, NVIDIA driver, no Node, no Vulkan loader), from the payload of
# `npm run bench:device-pack` (.device/ and .gl/; bench/README.md "Tuning on a GPU"), in two
# forms, each one call of the machine:
#   core (the default, within 9 minutes): unpacks Node, dawn.node, onnxruntime-node and the Vulkan loader;
#     starts clocks.csv (nvidia-smi, every 250 ms); runs `qgemm verify` (every kernel against the
#     reference; a mismatch is reported first in the summary and the run goes on, since the self-test
#     disables a failing tensor-core kernel on the device, the tuner verifies its winners and the bench
#     every qgemm row, bit for bit), `qgemm tune` (150 s of budget; it starts from the adapter's committed
#     table, if any; the table it writes serves the bench through --tuning, before a committed table,
#     which serves the shapes nearer one of its own entries), then the bench twice (squares, decode, the suite's two conv layers and three deep ones:
#     14x14x256, 7x7x512 and 2x2x512 inputs, 3x3 filters; `resident`; qgemm, tfjs f32, onnxruntime's
#     MatMulNBits-8; the second pass without the after-pause rows), so the spread between passes is known.
#   extras (about 4 minutes, a second call): one token through four 4096² fully connected layers
#     (dist/node/token.js, bench/token.ts: Sequential.run's wall against the sum of its GPU times), qgemm
#     at five shapes with Dawn's robustness off (the same kernels: what the index clamps cost; docs/gpu.md
#     "Dawn toggles"), and 1x11008² and 128x11008² with 8- and 4-bit weights; with the core run's table
#     and passes where its results.tar was copied to .device/core.tar (the table checked first).
# Each prints short tables last (bench/device-summary.mjs) and exits non-zero where a stage failed, timed
# out or wrote no JSON (verify: a mismatch), naming them. Each stage has its own time limit, with a KILL 5 s
# after its TERM (core: 75 + 190 + 120 + 115 s and about 15 s to unpack; extras: 15 + 30 + 45 + 115 s; every
# bench cell warms the GPU's clocks first, 0.5 to about 2 s until its calls are steady, bench/timing.ts,
# and the bench's budget counts the last cell's warm-up). The bench writes its JSON after every cell
# (--checkpoint), so a pass cut short by its limit keeps the rows it measured, marked `incomplete`.
# The machine gives back at most 8 files, so the JSON reports and gpu.csv go into one results.tar:
# $OUT holds results.tar, clocks.csv and run.log (core: verify.json, tune.json, tuning.json, bench1.json,
# bench2.json, gpu.csv in the tar; extras: token.json, bench-norobust.json, bench-u4.json, gpu.csv).
# The NVIDIA driver's Vulkan manifest is found where the GPU machines have it (VK_DRIVER_FILES overrides).
#   usage, in the payload's root:  OUT=/some/folder sh bench/device-run.sh [core|extras]
#   between the two calls, here:   cp <the core call's results.tar> .device/core.tar
set -u
cd "$(dirname "$0")/.."
: "${OUT:?set OUT to a folder for the results}"
MODE=${1:-core}
case "$MODE" in core | extras) ;; *) echo "usage: OUT=folder sh bench/device-run.sh [core|extras]" >&2; exit 2 ;; esac
mkdir -p "$OUT"
LOG=$OUT/run.log
: > "$LOG"
say() { echo "device-run: $*" | tee -a "$LOG"; }
T0=$(date +%s)
stage() { say "$1 at $(( $(date +%s) - T0 )) s"; }
# How a stage ended (name, exit status, the JSON it writes): a timeout (124, or 137 where the TERM went
# unheeded and KILL followed) or a missing JSON is said, and counted in FAILED, which the exit status at
# the end reports.
FAILED=""
timed_out() { [ "$1" -eq 124 ] || [ "$1" -eq 137 ]; }
ended() {
  if timed_out "$2"; then say "$1 TIMED OUT"; else say "$1 exit $2"; fi
  [ -s "$3" ] || say "$1 wrote no $(basename "$3")"
  [ "$2" -eq 0 ] && [ -s "$3" ] || FAILED="$FAILED $1"
}
# Right after a stage whose output went to a file (name, that file, the JSON it writes): its exit status
# ($? on entry), its output in the log, and `ended`.
logged() {
  B=$?
  cat "$2" >> "$LOG"
  ended "$1" "$B" "$3"
}

stage "unpack"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
# The NVIDIA driver's Vulkan manifest: where the project's GPU machines have it, else where Debian's and
# NVIDIA's installers put it. Without one no stage could find the GPU: said once, here.
if [ -z "${VK_DRIVER_FILES:-}" ]; then
  for f in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json; do
    if [ -f "$f" ]; then VK_DRIVER_FILES=$f && break; fi
  done
fi
if [ -z "${VK_DRIVER_FILES:-}" ] || ! [ -f "${VK_DRIVER_FILES%%:*}" ]; then
  say "no Vulkan driver manifest (nvidia_icd.json) found${VK_DRIVER_FILES:+ at $VK_DRIVER_FILES}: set VK_DRIVER_FILES to it"
  exit 1
fi
export VK_DRIVER_FILES
say "Vulkan driver: $VK_DRIVER_FILES"
# Where the unpacked binaries and the stages' output go (DEVICE_TMP: a test's own folder).
T=${DEVICE_TMP:-/tmp}
N="$T/node"
# A stage of an earlier call that outlived it (its call was cut off) still holds the GPU, and its Node
# binary, which cannot be written over while it runs: it is killed, and the binaries are unpacked beside
# and moved into place.
# Its clock logger too (nvidia-smi with -lms 250: no other nvidia-smi). -ef: the same file, however the
# path was written.
SMI_BIN=$(command -v nvidia-smi)
for p in /proc/[0-9]*; do
  if [ "$p/exe" -ef "$N" ] || { [ -n "$SMI_BIN" ] && [ "$p/exe" -ef "$SMI_BIN" ] && tr '\0' ' ' 2>/dev/null < "$p/cmdline" | grep -q -e ' -lms 250 '; }; then
    kill -KILL "${p#/proc/}" 2>/dev/null && say "killed a process left running by an earlier call: pid ${p#/proc/} ($(readlink "$p/exe"))"
    # until it is gone, and the GPU with it (5 s at most)
    for _ in 1 2 3 4 5 6 7 8 9 10; do [ -e "$p" ] || break; sleep 0.5; done
  fi
done
xz -dc .device/node.xz > "$N.new" && chmod +x "$N.new" && mv -f "$N.new" "$N" && xz -dc .device/dawn.node.xz > "$T/dawn.node.new" &&
  mv -f "$T/dawn.node.new" "$T/dawn.node"
U=$?
# Without Node or dawn.node no stage can run: said as the unpack's failure, not as each stage's.
if [ "$U" -ne 0 ] || ! [ -x "$N" ] || ! [ -s "$T/dawn.node" ]; then
  say "unpack FAILED (exit $U): no Node or dawn.node from .device/ (npm run bench:device-pack makes them)"
  exit 1
fi
[ -f .device/ort.tar.xz ] && tar -xJf .device/ort.tar.xz
# The bundles of this payload (npm run bench:device-pack), over any dist/ an earlier call left.
if [ -f .device/dist.tar.xz ]; then rm -rf dist/node dist/browser && tar -xJf .device/dist.tar.xz; fi
export QGEMM_DAWN_NODE="$T/dawn.node"
# Dawn's device toggles for every stage (docs/gpu.md "Dawn toggles"; the bench JSON records them as
# adapter.toggles, the table's method names them): the audited default, or QGEMM_DAWN_TOGGLES as given.
export QGEMM_DAWN_TOGGLES=${QGEMM_DAWN_TOGGLES:-disable_workgroup_init}
say "Dawn toggles: $QGEMM_DAWN_TOGGLES"

nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv > "$OUT/gpu.csv" 2>> "$LOG"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,clocks_throttle_reasons.active \
  --format=csv -lms 250 > "$OUT/clocks.csv" 2>> "$LOG" &
SMI=$!

# The end of either form: the tables, then the JSON reports and gpu.csv into results.tar (the machine gives
# back at most 8 files), and the exit status naming the stages that failed.
finish() {
  kill "$SMI" 2>/dev/null
  stage "done"
  "$N" bench/device-summary.mjs "$@" | tee -a "$LOG"
  (
    cd "$OUT" || exit
    : > .packed
    for f in *.json gpu.csv; do if [ -s "$f" ]; then echo "$f" >> .packed; else rm -f "$f"; fi; done
    [ -s .packed ] && tar -cf results.tar -T .packed && xargs rm -f < .packed
    rm -f .packed
  )
  say "results.tar: $(tar -tf "$OUT/results.tar" 2>/dev/null | paste -sd' ')"
  [ -z "$FAILED" ] || say "failed or incomplete:$FAILED"
  [ -z "$FAILED" ]
}

if [ "$MODE" = extras ]; then
  # The core run's results.tar, where it was copied to .device/core.tar: its table serves the benches
  # (before a committed table, which serves the shapes it lacks) once `qgemm info` takes it on this
  # adapter, and its two passes stand beside robustness off in the summary.
  TUNING=""
  CORE=""
  if [ -s .device/core.tar ]; then
    rm -rf "$T/core" && mkdir -p "$T/core" && tar -xf .device/core.tar -C "$T/core" && CORE="$T/core"
    [ -n "$CORE" ] || say "core.tar: not a tar of the core run's results; the benches run without its table"
  fi
  if [ -n "$CORE" ] && [ -s "$CORE/tuning.json" ]; then
    # exit 2 where the table is refused; exit 0 with "adapter": null where no adapter could check it
    timeout -k 5 15 "$N" bin/qgemm.mjs info --json --tuning "$CORE/tuning.json" > "$T/info.json" 2> "$T/info.out"
    I=$?
    if [ "$I" -eq 0 ] && ! grep -q '^  "adapter": null' "$T/info.json"; then
      TUNING="$CORE/tuning.json" && say "tuning: the core run's tuning.json"
    else
      say "tuning: the core run's tuning.json not taken (qgemm info exit $I$(grep -q '^  "adapter": null' "$T/info.json" && echo ', no adapter')), the benches run without it: $(tail -1 "$T/info.out")"
    fi
  fi
  # One token through a Sequential of four 4096² layers (bench/README.md item 10): its wall, back to back
  # and after a pause, against the sum of its layers' GPU times; verified against the CPU path.
  stage "token"
  timeout -k 5 30 "$N" dist/node/token.js --layers 4 --width 4096 --runs 50 --json "$OUT/token.json" > "$T/token.out" 2>&1
  logged token "$T/token.out" "$OUT/token.json"
  # What Dawn's robustness (the clamping of every buffer and array index) costs the kernels: qgemm alone at
  # five shapes of the core passes, with `disable_robustness` added; every row still verified bit for bit.
  # Measured only: the library's own devices keep robustness on.
  stage "bench without robustness"
  QGEMM_DAWN_TOGGLES=disable_workgroup_init,disable_robustness timeout -k 5 45 "$N" dist/node/bench.js --dawn "$T/dawn.node" \
    --runtimes node --backends webgpu --modes resident --impls qgemm \
    --shapes 1x4096x4096,128x4096x4096,2048x2048x2048,4096x4096x4096,conv56x56x64-k3x3-s1-o64 --budget 35 ${TUNING:+--tuning "$TUNING"} \
    --no-after-pause --no-save --json "$OUT/bench-norobust.json" --checkpoint > "$T/bench.out" 2>&1
  logged "bench without robustness" "$T/bench.out" "$OUT/bench-norobust.json"
  # The 4-bit weights target (bench/README.md item 22): 128x11008² with 8- and 4-bit weights beside
  # onnxruntime's MatMulNBits-8 and -4, and the widest decode shape, 1x11008².
  stage "bench 4-bit"
  timeout -k 5 115 "$N" dist/node/bench.js --dawn "$T/dawn.node" --runtimes node --backends webgpu --modes resident \
    --impls qgemm,onnxruntime-webgpu-matmulnbits8,onnxruntime-webgpu-matmulnbits4 --rhs-bits 8,4 \
    --shapes 1x11008x11008,128x11008x11008 --budget 105 ${TUNING:+--tuning "$TUNING"} \
    --no-after-pause --no-save --json "$OUT/bench-u4.json" --checkpoint > "$T/bench.out" 2>&1
  logged "bench 4-bit" "$T/bench.out" "$OUT/bench-u4.json"
  # the core run's passes, those it has, before the options
  set --
  for f in bench1.json bench2.json; do if [ -n "$CORE" ] && [ -s "$CORE/$f" ]; then set -- "$@" "$CORE/$f"; fi; done
  finish "$@" --u4 "$OUT/bench-u4.json" --norobust "$OUT/bench-norobust.json" --token "$OUT/token.json"
  exit $?
fi

stage "verify"
timeout -k 5 75 "$N" bin/qgemm.mjs verify --backend webgpu --json > "$OUT/verify.json" 2>> "$LOG"
V=$?
ended verify "$V" "$OUT/verify.json"
# A mismatch stops nothing that could report a wrong result as right: the rest runs, each result verified.
if [ "$V" -ne 0 ] && ! timed_out "$V"; then
  if [ -s "$OUT/verify.json" ]; then say "verify FAILED: see verify.json; tune and bench go on (each verifies its own results)"
  else say "verify FAILED without a report (no adapter? see its error above); tune and bench go on"; fi
fi

stage "tune"
timeout -k 5 190 "$N" bin/qgemm.mjs tune --backend webgpu --budget 150s --out "$OUT/tuning.json" --json > "$OUT/tune.json" 2>> "$LOG"
ended tune $? "$OUT/tune.json"
TUNING=""
[ -s "$OUT/tuning.json" ] && TUNING="$OUT/tuning.json"

SHAPES=256x256x256,512x512x512,1024x1024x1024,2048x2048x2048,4096x4096x4096,1x4096x4096,16x1024x1024,128x1024x1024,128x4096x4096,conv56x56x64-k3x3-s1-o64,conv112x112x32-k3x3-s2-o64,conv14x14x256-k3x3-s1-o256,conv7x7x512-k3x3-s1-o512,conv2x2x512-k3x3-s1-o512
# Pass 1 with the after-pause rows (the decode loop's other case), pass 2 without them: the GPU times of
# both give the spread, and the second pass's budget reaches the largest squares.
stage "bench pass 1"
timeout -k 5 120 "$N" dist/node/bench.js --dawn "$T/dawn.node" --runtimes node --backends webgpu --modes resident \
  --impls qgemm,tfjs-webgpu-f32,onnxruntime-webgpu-matmulnbits8 --shapes "$SHAPES" --budget 105 ${TUNING:+--tuning "$TUNING"} \
  --no-save --json "$OUT/bench1.json" --checkpoint > "$T/bench.out" 2>&1
logged "bench pass 1" "$T/bench.out" "$OUT/bench1.json"
stage "bench pass 2"
timeout -k 5 115 "$N" dist/node/bench.js --dawn "$T/dawn.node" --runtimes node --backends webgpu --modes resident \
  --impls qgemm,tfjs-webgpu-f32,onnxruntime-webgpu-matmulnbits8 --shapes "$SHAPES" --budget 100 ${TUNING:+--tuning "$TUNING"} \
  --no-after-pause --no-save --json "$OUT/bench2.json" --checkpoint > "$T/bench.out" 2>&1
logged "bench pass 2" "$T/bench.out" "$OUT/bench2.json"
finish "$OUT/bench1.json" "$OUT/bench2.json" --verify "$OUT/verify.json" --tune "$OUT/tune.json"
