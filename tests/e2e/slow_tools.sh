#!/usr/bin/env bash
# e2e: real tools through a slowed backend (issue 27): a latency proxy in
# front of Azurite (SLOW_TOOLS_RTT_MS, default 20 ms round trip, plus
# SLOW_TOOLS_JITTER_MS, default 5: an exponential extra wait of that mean each
# way, so some answers take tens of ms more, in order) and a busy
# CPU beside the mount (a niced spin loop), the timing windows a fast
# loopback closes. With the defaults (commit=async):
#   - git clone of a repository (this one) into the mount, `git status`,
#     drop_caches while the commits are queued, `git status` again;
#   - rsync -a of a tree into the mount twice: the second pass finds
#     nothing to send (--itemize-changes prints nothing);
# then: no conflict copy anywhere, the unmount leaves nothing in the cache
# journal alone, and a mount with a new cache dir shows the same (git
# status clean, diff -r of the rsync tree), fsck exits 0. (Before issue 27's
# fixes, a git clone + status left 53 files empty in the container and rsync
# made conflict copies.)
#
#   bash tests/e2e/slow_tools.sh BUILD_DIR
#   SLOW_TOOLS_RTT_MS=N (default 20), SLOW_TOOLS_JITTER_MS=N (default 5),
#   SLOW_TOOLS_BUSY=0 (no spin loop)
#   SLOW_TOOLS_PROXY_BASE=N (default 31300): the proxies' blob and table ports
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2317
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RTT=${SLOW_TOOLS_RTT_MS:-20}
JITTER=${SLOW_TOOLS_JITTER_MS:-5}
PBASE=${SLOW_TOOLS_PROXY_BASE:-31300}
PROXY=$1/tests/stampfs_latency_proxy
for tool in git rsync; do
  command -v "$tool" >/dev/null || { echo "slow_tools: $tool is missing: skipped" >&2; exit 77; }
done
[[ -x $PROXY ]] || { echo "slow_tools: $PROXY is not built" >&2; exit 2; }
[[ -d $ROOT/.git ]] || { echo "slow_tools: $ROOT is not a git checkout: skipped" >&2; exit 77; }

# The proxies, one per service, each way half the round trip.
export PROXY_LOGS
PROXY_LOGS=$(mktemp -d "${TMPDIR:-/tmp}/stampfs-slow-tools-proxy.XXXXXX")
PIDS=()
start_proxy() {
  local i
  # (an earlier run's proxy goes a second after that run ends)
  for i in $(seq 50); do
    (: >"/dev/tcp/127.0.0.1/$1") 2>/dev/null || break
    sleep 0.1
  done
  "$PROXY" "$1" "127.0.0.1:$2" "$(awk -v r="$RTT" 'BEGIN { print r / 2 }')" "$JITTER" \
    >"$PROXY_LOGS/$1.log" 2>&1 </dev/null &
  PIDS+=($!)
  for i in $(seq 100); do
    grep -qs "127.0.0.1:$1 ->" "$PROXY_LOGS/$1.log" && return 0
    sleep 0.05
  done
  echo "slow_tools: the latency proxy on port $1 did not start" >&2
  cat "$PROXY_LOGS/$1.log" >&2
  exit 2
}
start_proxy "$PBASE" "${AZURITE_BLOB_PORT:-10000}"
start_proxy "$((PBASE + 2))" "${AZURITE_TABLE_PORT:-10002}"
if [[ ${SLOW_TOOLS_BUSY:-1} != 0 ]]; then
  nice -n 10 sh -c 'while :; do :; done' &
  PIDS+=($!)
fi
# Stopped when this shell ends, whatever way it ends.
bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; shift; kill "$@" 2>/dev/null; rm -rf "$PROXY_LOGS"' \
  slow-tools-guard $$ "${PIDS[@]}" </dev/null >/dev/null 2>&1 &
key="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="  # the emulator's public key
export AZURE_STORAGE_CONNECTION_STRING="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=$key;BlobEndpoint=http://127.0.0.1:$PBASE/devstoreaccount1;TableEndpoint=http://127.0.0.1:$((PBASE + 2))/devstoreaccount1"

source "$(dirname "$0")/lib.bash" "$@"
[[ -x $E2E_INSPECT ]] || e2e_fatal "stampfs_inspect" "$E2E_INSPECT is not built"
export GIT_CONFIG_NOSYSTEM=1 HOME=$E2E_TMP
git config --global user.email e2e@example.invalid
git config --global user.name e2e
git config --global safe.directory '*'

conflicts() {
  local shown blobs
  shown=$(find "$M" -name '*.conflict-*' | wc -l)
  blobs=$("$E2E_INSPECT" blobs "$E2E_CONTAINER" | cut -f1 | grep -c '\.conflict-')
  echo "$shown conflict copies shown, $blobs conflict blobs"
  find "$M" -name '*.conflict-*' | head -n 5
  ((shown == 0 && blobs == 0))
}
SRC=$E2E_TMP/tree
mkdir -p "$SRC"
cp -r "$ROOT/docs" "$ROOT/fs" "$ROOT/storage" "$ROOT/cache" "$SRC/"
touch -d '2020-01-02 03:04:05' "$SRC/docs/design.md"

section "git clone and rsync through a ${RTT} ms round trip (jitter ${JITTER} ms each way), a CPU busy"
e2e_mount
LOG=${E2E_LOG[$M]}
t0=$SECONDS
E2E_TIMEOUT=600 check "git clone" git clone -q --no-hardlinks "$ROOT" "$M/repo"
echo "  (clone took $((SECONDS - t0)) s; $(e2e_stat_value "$M" commits.queued) commits queued)"
grep -E ' (warning|error): ' "$LOG" | head -n 10 | cut -c1-300 | sed 's/^/  log: /'
echo "  ($(for k in requests.total requests.retries requests.failed requests.failed_fast metadata.offline_served conflicts; do printf '%s=%s ' "$k" "$(e2e_stat_value "$M" "$k")"; done))"
check_eq "git status right after: clean" "" git -C "$M/repo" status --porcelain
sync
echo 2 >/proc/sys/vm/drop_caches 2>/dev/null || echo "  (drop_caches not writable: skipped)"
check_eq "git status after drop_caches: clean" "" git -C "$M/repo" status --porcelain
t0=$SECONDS
E2E_TIMEOUT=600 check "rsync -a, first pass" rsync -a "$SRC/" "$M/tree/"
echo "  (first pass took $((SECONDS - t0)) s)"
t0=$SECONDS
E2E_TIMEOUT=600 check_eq "rsync -a, second pass: nothing to send" "" \
  rsync -a --itemize-changes "$SRC/" "$M/tree/"
echo "  (second pass took $((SECONDS - t0)) s)"
E2E_TIMEOUT=300 check "the queue drains" e2e_sync
check "no conflict copies" conflicts && sed 's/^/  /' "$E2E_TMP/.out"
e2e_unmount && _e2e_pass "unmount"
check "the unmount left nothing in the cache journal alone" \
  eval "! grep -E 'shutdown: .*not committed|conflict-|another writer' '$LOG'"

section "a mount with a new cache dir"
e2e_new_cache
e2e_mount
E2E_TIMEOUT=600 check_eq "git status: clean" "" git -C "$M/repo" status --porcelain
E2E_TIMEOUT=600 check "git fsck of the clone" git -C "$M/repo" fsck --no-progress
E2E_TIMEOUT=600 check "diff -r of the rsync tree" diff -r "$SRC" "$M/tree"
check "mtimes kept (rsync -a)" \
  eval "[[ \$(stat -c %Y '$M/tree/docs/design.md') == \$(stat -c %Y '$SRC/docs/design.md') ]]"
e2e_unmount
E2E_TIMEOUT=600 check "fsck: clean" "$E2E_STAMPFS" fsck "$E2E_CONTAINER"

e2e_finish
