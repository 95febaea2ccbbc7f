# Sourced by bench/device-pack.sh and bench/chrome-pack.sh (from the repo root; a sh with `local`, as dash
# and bash are): the two steps both payloads for a bare GPU machine share. apt_download fetches Debian
# packages the machine lacks; repo_bytes counts what each transfer to it carries besides the payload.

# apt_download NAME DIR PKG...: `apt-get download` of every PKG into DIR for amd64, through package lists of
# its own (/tmp/qgemm-apt-amd64), refreshed first. apt-get's status is not enough (a stale list gives a 404
# for one package while the others still come), so every PKG must have its .deb after; else NAME says which
# one did not come, and the call fails.
apt_download() {
  local name=$1 dir=$2 lists=${TMPDIR:-/tmp}/qgemm-apt-amd64 p
  shift 2
  local o="-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=$lists"
  mkdir -p "$lists/partial" "$dir"
  # shellcheck disable=SC2086
  apt-get $o update >/dev/null || { echo "$name: apt-get update failed" >&2; return 1; }
  # shellcheck disable=SC2086
  (cd "$dir" && apt-get $o download "$@" > "$lists/download.log" 2>&1) || true
  grep -v -e '^W: Download is performed unsandboxed' -e '^Get:' -e '^Fetched ' "$lists/download.log" >&2 || true
  for p in "$@"; do
    ls "$dir/${p}_"*.deb >/dev/null 2>&1 || { echo "$name: apt-get download got no $p (log above)" >&2; return 1; }
  done
}

# repo_bytes: the bytes of the repository a transfer carries: its tracked files, and the untracked ones git
# does not ignore.
repo_bytes() {
  git ls-files -z --cached --others --exclude-standard | xargs -0 du -cb 2>/dev/null | awk '$2 == "total" {t += $1} END {print t + 0}'
}
