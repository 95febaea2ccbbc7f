#!/bin/sh
# `npm run bench:device-pack`: prepares, in one step, everything a benchmark run on a bare GPU machine
# needs (the project's GPU machines take a copy of the repository plus at most 64 MiB per transfer), in
# folders git ignores: dist/ (the bundled bench, vite build), .device/ (Node itself, Dawn's dawn.node, a pruned
# onnxruntime-node with its own WebGPU EP and dist/'s Node and browser bundles, xz-compressed) and .gl/ (the Vulkan loader and GL/EGL
# libraries as Debian packages, `apt-get download`: the GPU machine has the NVIDIA driver but no
# loader). bench/device-run.sh is the one command that uses them on the GPU machine (core: verify, tune, the
# bench twice with clocks.csv; extras: the token, robustness off, the 4-bit pass; bench/README.md "Tuning on
# a GPU"). Run it from the repo root.
set -eu
cd "$(dirname "$0")/.."
. bench/pack-common.sh
[ -d node_modules/webgpu ] || { echo "device-pack: run npm ci first" >&2; exit 1; }

echo "device-pack: building dist/ (node bundle + browser bundle)"
npx vite build --logLevel error && npx vite build --mode bench --logLevel error
npx vite build --mode browser --logLevel error

mkdir -p .device .gl
echo "device-pack: compressing node and dawn.node into .device/"
xz -T2 -c "$(readlink -f "$(command -v node)")" > .device/node.xz
xz -T2 -c node_modules/webgpu/dist/linux-x64/dawn.node > .device/dawn.node.xz
# The bundles, compressed (7.7 MiB as files, about 1.2 as dist.tar.xz): device-run.sh and the Chrome bench
# (tools/chrome-gpu-probe.sh) unpack it over dist/, so a call need not carry dist/ itself.
tar -cJf .device/dist.tar.xz dist/node dist/browser
echo "device-pack: pruned onnxruntime-node (linux-x64 binary only) into .device/ort.tar.xz"
tar -cJf .device/ort.tar.xz node_modules/onnxruntime-common node_modules/onnxruntime-node/package.json \
  node_modules/onnxruntime-node/dist node_modules/onnxruntime-node/bin/napi-v6/linux/x64

echo "device-pack: Vulkan loader and GL debs into .gl/ (apt-get download)"
gl_pkgs="libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2"
# Only the packages .gl/ lacks (a run cut short leaves some).
need=$(for p in $gl_pkgs; do ls .gl/"${p}"_*.deb >/dev/null 2>&1 || echo "$p"; done)
# shellcheck disable=SC2086
[ -z "$need" ] || apt_download device-pack .gl $need || exit 1

# What travels with each call: the repository's files (tracked, and untracked ones git does not ignore)
# beside the carried folders, 64 MiB in all.
carried=$(du -cb .device .gl | tail -1 | cut -f1)
repo=$(repo_bytes)
total=$((carried + repo))
echo "device-pack: .gl/ and .device/ = $((carried / 1048576)) MiB, with the repository's $((repo / 1048576)) MiB = $((total / 1048576)) MiB (at most 64 MiB per call to the GPU machine)"
du -sh .device/* .gl | sed 's/^/  /'
if [ "$total" -gt $((64 * 1048576)) ]; then echo "device-pack: over the 64 MiB a GPU machine takes per call" >&2; exit 1; fi
# The core results a run copied in for its extras call (bench/README.md "Tuning on a GPU"): an older run's
# would serve the next extras call unsaid.
if [ -f .device/core.tar ]; then
  echo "device-pack: .device/core.tar ($(date -r .device/core.tar '+%Y-%m-%d %H:%M')) will serve the extras call: remove it unless it is this run's core results"
fi
echo "device-pack: on the GPU machine (carry .gl and .device), with \$OUT set: sh bench/device-run.sh, then sh bench/device-run.sh extras"
