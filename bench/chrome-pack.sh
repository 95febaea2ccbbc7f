#!/bin/sh
# `npm run bench:chrome-pack`: makes the Chromium payload for a GPU server that has neither Chromium nor
# its libraries nor Node (the other half of bench/device-pack.sh, which packs the bench for Node). Into
# the ignored folder .chrome-pack/ it writes chrome.tar.xz.part0, .part1, ... (xz -9, each part at most
# PART_MIB, default 50 MiB, so that one part and this repository fit the 64 MiB that the project's GPU
# servers take per transfer) and manifest.txt (each part's sha256). The tar holds one folder tree,
# unpacked on the server by tools/chrome-gpu-probe.sh into /tmp/qgemm-chrome/root:
#   usr/lib/chromium/      Debian's chromium + chromium-common + chromium-sandbox (apt-get download; the
#                          setuid sandbox attempt C needs where user namespaces are off), pruned: no
#                          validation layer, no mock ICD, en-US locale only
#   chromium               a wrapper that puts lib/ first on LD_LIBRARY_PATH and runs usr/lib/chromium/chromium
#   lib/                   every shared library that ldd finds for chromium, Xvfb and xkbcomp, except glibc's
#                          own (the server has a glibc; Chromium 156 from bookworm asks for GLIBC_2.35 at most)
#   usr/lib/x86_64-linux-gnu/  libvulkan1 and the GL dispatch libraries (libglvnd: libEGL, libGL, libGLX,
#                          libOpenGL, libGLESv2), loaded at run time, so ldd does not list them
#   usr/bin/Xvfb, usr/bin/xkbcomp, usr/share/X11/xkb  the X server of attempt D
#   bin/node               this machine's Node, to run the probe and the bench there
#   VERSIONS               the packages and versions inside
# and .chrome-pack/web.tar.xz: the bench page's tfjs and onnxruntime-web files from node_modules (below).
# Run it from the repo root, on x86-64 Debian with the chromium package installed (its libraries are
# what ldd resolves), with apt able to download. bench/README.md, "Chrome on a GPU server", gives the steps.
set -eu
cd "$(dirname "$0")/.."
. bench/pack-common.sh
PART_MIB=${PART_MIB:-50}
XZ_LEVEL=${XZ_LEVEL:-9}
work=${TMPDIR:-/tmp}/qgemm-chrome-pack
stage=$work/root
web_files="node_modules/@tensorflow/tfjs-core/package.json node_modules/@tensorflow/tfjs-core/dist/tf-core.es2017.min.js
  node_modules/@tensorflow/tfjs-backend-webgpu/package.json node_modules/@tensorflow/tfjs-backend-webgpu/dist/tf-backend-webgpu.es2017.min.js
  node_modules/onnxruntime-web/package.json node_modules/onnxruntime-web/dist/ort.node.min.js node_modules/onnxruntime-web/dist/ort.min.js
  node_modules/onnxruntime-web/dist/ort.webgpu.min.mjs node_modules/onnxruntime-web/dist/ort-wasm-simd-threaded.asyncify.mjs
  node_modules/onnxruntime-web/dist/ort-wasm-simd-threaded.asyncify.wasm"
# Checked first, not after minutes of xz: a pipe's status is its last command's, so a file missing would
# leave an empty web.tar.xz behind an exit 0.
for f in $web_files; do [ -f "$f" ] || { echo "chrome-pack: $f is missing: run npm ci first" >&2; exit 1; }; done
rm -rf "$work" && mkdir -p "$work/debs" "$stage/lib" "$stage/bin"

pkgs="chromium chromium-common chromium-sandbox libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 xvfb x11-xkb-utils xkb-data libxfont2"
echo "chrome-pack: apt-get download $pkgs"
# shellcheck disable=SC2086
apt_download chrome-pack "$work/debs" $pkgs || exit 1
for f in "$work"/debs/*.deb; do dpkg -x "$f" "$stage"; done
for f in "$work"/debs/*.deb; do dpkg-deb -f "$f" Package Version | paste -sd' '; done > "$stage/VERSIONS"

echo "chrome-pack: pruning"
c=$stage/usr/lib/chromium
rm -f "$c"/libVkLayer_khronos_validation.so* "$c"/libVkICD_mock_icd.so*
find "$c/locales" -type f ! -name 'en-US.pak' -delete
rm -rf "$stage/usr/share/doc" "$stage/usr/share/man" "$stage/usr/share/icons" "$stage/usr/share/lintian" \
  "$stage/usr/share/applications" "$stage/usr/share/gnome-control-center" "$stage/usr/share/bug" "$stage/usr/share/pixmaps" \
  "$stage/etc" "$stage/usr/bin/chromium" "$stage/usr/share/X11/xkb/compiled"

# Every library the binaries need, by ldd (the payload's own libraries first), except glibc's. A library
# that nothing here provides stops the pack: install its Debian package on this machine, or add it to $pkgs.
glibc='^(libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|ld-linux-x86-64)\.so'
ldpath="$stage/lib:$stage/usr/lib/x86_64-linux-gnu:$stage/lib/x86_64-linux-gnu"
for round in 1 2 3; do
  for bin in "$c/chromium" "$c/chrome_crashpad_handler" "$c/libvk_swiftshader.so" "$stage/usr/bin/Xvfb" "$stage/usr/bin/xkbcomp" \
    "$stage"/usr/lib/x86_64-linux-gnu/*.so.* "$stage"/lib/*.so*; do
    [ -f "$bin" ] || continue
    LD_LIBRARY_PATH=$ldpath ldd "$bin" 2>/dev/null | while read -r name arrow path rest; do
      [ "$arrow" = "=>" ] || continue
      if [ "$path" = "not" ]; then echo "chrome-pack: $name (needed by $bin) is not on this machine" >&2; echo "$name" >> "$work/missing"; continue; fi
      echo "$name" | grep -Eq "$glibc" && continue
      case "$path" in "$stage"/*) continue ;; esac
      [ -e "$stage/lib/$name" ] || cp -L "$path" "$stage/lib/$name"
    done
  done
  echo "chrome-pack: round $round: $(ls "$stage/lib" | wc -l) libraries in lib/"
done
if [ -s "$work/missing" ]; then echo "chrome-pack: missing libraries: $(sort -u "$work/missing" | paste -sd' ')" >&2; exit 1; fi

cp -L "$(readlink -f "$(command -v node)")" "$stage/bin/node"
cat > "$stage/chromium" <<'EOF'
#!/bin/sh
# The payload's Chromium with the payload's libraries (bench/chrome-pack.sh); the NVIDIA driver's own folders after them.
d=$(dirname "$(readlink -f "$0")")
LD_LIBRARY_PATH="$d/lib:$d/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for n in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do [ -d "$n" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$n"; done
export LD_LIBRARY_PATH
exec "$d/usr/lib/chromium/chromium" "$@"
EOF
chmod +x "$stage/chromium"
"$stage/chromium" --version >> "$stage/VERSIONS"
echo "node $("$stage/bin/node" --version)" >> "$stage/VERSIONS"
echo "chrome-pack: $(du -sh "$stage" | cut -f1) unpacked; $(tail -2 "$stage/VERSIONS" | paste -sd';')"

echo "chrome-pack: tar | xz -$XZ_LEVEL (minutes on a loaded machine)"
rm -rf .chrome-pack && mkdir -p .chrome-pack
tar -C "$stage" -cf - . | xz "-$XZ_LEVEL" -T2 > "$work/chrome.tar.xz"
split -b "${PART_MIB}m" -d -a 1 "$work/chrome.tar.xz" .chrome-pack/chrome.tar.xz.part
(cd .chrome-pack && sha256sum chrome.tar.xz.part* > manifest.txt)
echo "# whole $(sha256sum < "$work/chrome.tar.xz" | cut -d' ' -f1)" >> .chrome-pack/manifest.txt
rm -rf "$work"
# The bench page's libraries from node_modules (tfjs's UMD bundles, onnxruntime-web's WebGPU build and its
# WASM files): the Chrome rows of `npm run bench` on the server read them from node_modules, which
# tools/chrome-gpu-probe.sh links to the unpacked copy. A separate, small tar: only the bench run needs it.
# shellcheck disable=SC2086
tar -cf - $web_files | xz "-$XZ_LEVEL" -T2 > .chrome-pack/web.tar.xz
echo "chrome-pack: .chrome-pack/ (copy one part per transfer, with manifest.txt; web.tar.xz with the bench run):"
ls -l .chrome-pack | tail -n +2 | awk '{printf "  %s %.1f MiB\n", $9, $5 / 1048576}'
# Each transfer carries the repository's files (tracked, and untracked ones git does not ignore) beside
# its part and the manifest: 64 MiB in all.
repo=$(repo_bytes)
for f in .chrome-pack/chrome.tar.xz.part*; do
  total=$(($(stat -c %s "$f") + $(stat -c %s .chrome-pack/manifest.txt) + repo))
  if [ "$total" -gt $((64 * 1048576)) ]; then
    echo "chrome-pack: $(basename "$f") with the repository's $((repo / 1048576)) MiB is $((total / 1048576)) MiB, over the 64 MiB of a transfer: pack again with a smaller PART_MIB" >&2
    exit 1
  fi
done
echo "chrome-pack: each part with the repository's $((repo / 1048576)) MiB fits a transfer (64 MiB)"
