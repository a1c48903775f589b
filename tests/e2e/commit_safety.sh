#!/usr/bin/env bash
# e2e: the commit pipeline never drops what close acknowledged (issue 27).
#
# A. The kernel forgets inodes while commits are queued: 2 directories x 100
#    small files are untarred into a mount with a long commit_delay, and
#    `sync; echo 2 >/proc/sys/vm/drop_caches` runs (three times, a listing
#    between) while every commit is still queued, so the kernel sends FORGETs
#    of the files and their directories. Once the queue has drained and the
#    mount unmounted, a mount with a new cache dir must show every file with
#    its exact content, no `*.conflict-*` name anywhere, and fsck exits 0.
#    (Before the fix: queued files whose inodes the kernel forgot were taken
#    for conflicts, "inode N is not known", and lost their names.)
# B. Writes while the service is frozen: Azurite (this script's own) is
#    SIGSTOPped under a default mount (commit=async) with a committed
#    directory; a shell loop writes 100 4 KiB files into it (a burst), then
#    drop_caches runs, and Azurite stays frozen for about 60 s in all (past
#    the 45 s request deadline, so queued commits time out and are retried).
#    Every close of the burst must return 0, and so must the writes of a
#    writer that goes on past the attribute TTL (COMMIT_SAFETY_LATE files, one
#    every 2 s), and `ls`, `stat` and `cat` of cached entries then answer from
#    the cache within seconds. After SIGCONT the queue must drain, unmount succeed and
#    say nothing stayed behind in the journal, and a mount with a new cache
#    dir show every acknowledged file with its exact content, no conflict
#    copies, fsck exit 0. (Before the fix: queued commits that timed out were
#    taken for conflicts and left the queue; the files were only in the
#    writing mount's journal or in conflict copies; writes past the TTL
#    blocked 45 s on a table read of the root, then failed with EIO.)
#
# Both scenarios run on an Azurite of this script's own (in memory, ports
# 31100-31102: the SIGSTOP must not freeze other tests running in parallel),
# each in a container of its own. Needs root (drop_caches; exit 77 without).
# About 2 minutes (5 when commits never drain: every wait is bounded).
#
#   bash tests/e2e/commit_safety.sh BUILD_DIR
#   COMMIT_SAFETY_PORT_BASE=N (default 31100): blob N, queue N+1, table N+2
#   COMMIT_SAFETY_DELAY=SECONDS (default 20): scenario A's commit_delay
#   COMMIT_SAFETY_FILES=N (default 100): files per directory in A, files written in B
#   COMMIT_SAFETY_FREEZE=SECONDS (default 60): how long Azurite stays frozen in B
#   COMMIT_SAFETY_ATTR_TIMEOUT=SECONDS (default 10): attr_timeout of B's writing mount
#   COMMIT_SAFETY_LATE=N (default 8): B's writes past that TTL
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2317
set -u
if [[ ! -w /proc/sys/vm/drop_caches ]]; then
  echo "commit_safety: /proc/sys/vm/drop_caches is not writable (needs root): skipped" >&2
  exit 77
fi
BASE=${COMMIT_SAFETY_PORT_BASE:-31100}
DELAY_A=${COMMIT_SAFETY_DELAY:-20}
NFILES=${COMMIT_SAFETY_FILES:-100}
FREEZE=${COMMIT_SAFETY_FREEZE:-60}
ATTR_B=${COMMIT_SAFETY_ATTR_TIMEOUT:-10}
export AZURITE_IN_MEMORY=1 AZURITE_EXTENT_MEMORY_MB=512
source "$(dirname "$0")/private_azurite.bash"
private_azurite_start commit-safety "$BASE" COMMIT_SAFETY_PORT_BASE

source "$(dirname "$0")/lib.bash" "$@"
# A frozen Azurite is thawed before the lib's EXIT trap unmounts and deletes
# (its status is passed on: the trap reads $?).
trap 'rc=$?; kill -CONT "$AZ_PID" 2>/dev/null; (exit $rc); _e2e_on_exit' EXIT
[[ -x $E2E_INSPECT ]] || e2e_fatal "stampfs_inspect" "$E2E_INSPECT is not built"
CONTAINER_BASE=$E2E_CONTAINER

ms_now() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
queued() { e2e_stat_value "$M" commits.queued; }
drop_caches() { timeout -s KILL 60 sh -c 'echo 2 >/proc/sys/vm/drop_caches'; }
# wait_drained SECONDS: until the mount's commit queue is empty.
wait_drained() {
  local end=$((SECONDS + $1)) q
  while :; do
    q=$(queued 2>/dev/null) || q="? (stampfs stat failed)"
    [[ $q == 0 ]] && return 0
    ((SECONDS < end)) || { echo "still $q queued after $1 s"; return 1; }
    sleep 0.5
  done
}
# stats KEY...: "key=value ..." of the mount's counters.
stats() {
  "$E2E_STAMPFS" stat --json "$M" |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(" ".join("%s=%s" % (k, d.get(k)) for k in sys.argv[1:]))' "$@"
}
# compare SRC DST NAMESFILE: every name of NAMESFILE (relative paths) is in
# DST with SRC's bytes. Prints the counts and the first names at fault.
compare() {
  local src=$1 dst=$2 names=$3 n=0 missing=0 wrong=0 bad=() name
  while IFS= read -r name; do
    n=$((n + 1))
    if [[ ! -e $dst/$name ]]; then
      missing=$((missing + 1))
      bad+=("missing: $name")
    elif ! cmp -s "$src/$name" "$dst/$name"; then
      wrong=$((wrong + 1))
      bad+=("wrong content: $name ($(stat -c %s "$dst/$name") bytes, expected $(stat -c %s "$src/$name"))")
    fi
  done <"$names"
  echo "$n files: $missing missing, $wrong with wrong content"
  ((${#bad[@]} == 0)) || printf '  %s\n' "${bad[@]:0:10}"
  ((missing == 0 && wrong == 0))
}
# conflicts DIR: the conflict copies a mount shows under DIR, and those the
# container holds as blobs.
conflicts() {
  local shown blobs
  shown=$(find "$1" -name '*.conflict-*' | wc -l)
  blobs=$("$E2E_INSPECT" blobs "$E2E_CONTAINER" | cut -f1 | grep -c '\.conflict-')
  echo "$shown conflict copies shown, $blobs conflict blobs in the container"
  find "$1" -name '*.conflict-*' | head -n 10 | sed 's/^/  /'
  ((shown == 0 && blobs == 0))
}
# log_lines LOG: what a mount's log says about conflicts, failed copies and
# changes left behind: counts, then the first such lines.
log_lines() {
  local log=$1
  echo "  log $log: $(grep -c 'conflict' "$log") lines mention a conflict" \
    "($(grep -c 'is not known' "$log") 'inode N is not known', $(grep -c 'no copy saved' "$log") 'no copy saved'," \
    "$(grep -c 'another writer committed' "$log") 'another writer committed'), $(grep -c 'Timeout' "$log") a timeout," \
    "$(grep -c ' warning: ' "$log") warnings, $(grep -c ' error: ' "$log") errors"
  { grep -E 'conflict' "$log" | head -n 12; grep -E 'shutdown: ' "$log"; } | cut -c1-360 | sed 's/^/  | /'
}
# left_behind LOG: the mount's shutdown committed everything (it says so
# when changes stay in the cache journal only).
left_behind() { ! grep -E 'shutdown: .*not committed' "$1"; }
fsck_clean() {
  E2E_TIMEOUT=300 check "fsck: clean (exit 0)" \
    eval "'$E2E_STAMPFS' fsck '$E2E_CONTAINER' >'$E2E_TMP/fsck.out' 2>&1"
  head -n 20 "$E2E_TMP/fsck.out" | sed 's/^/  fsck: /'
}
# The failures of the checks before, to tell whether a scenario failed.
failed_so_far() { echo "$E2E_FAILED"; }

# ============================================================================
section "A: the kernel forgets inodes while $((2 * NFILES)) commits are queued (commit_delay=$DELAY_A)"
E2E_CONTAINER=$CONTAINER_BASE-a
failed_before=$(failed_so_far)
SRC_A=$E2E_TMP/src-a
mkdir -p "$SRC_A/d1" "$SRC_A/d2"
for d in d1 d2; do
  for i in $(seq -w 1 "$NFILES"); do
    { printf '%s/f%s\n' "$d" "$i"; head -c $((100 + 10#$i * 17)) /dev/urandom | base64; } >"$SRC_A/$d/f$i"
  done
done
(cd "$SRC_A" && find . -type f | sed 's|^\./||' | sort) >"$E2E_TMP/names-a"
tar -cf "$E2E_TMP/a.tar" -C "$SRC_A" d1 d2
E2E_MOUNT_OPTS="commit=async,commit_delay=$DELAY_A"
e2e_new_cache
e2e_mount
LOG_A=${E2E_LOG[$M]}
t0=$SECONDS
run "untar 2 directories x $NFILES files" tar -xf "$E2E_TMP/a.tar" -C "$M"
forget0=$(stats ops.forget ops.forget_multi)
q0=$(queued)
echo "  (untar took $((SECONDS - t0)) s; $q0 commits queued)"
for round in 1 2 3; do
  sync
  drop_caches
  # Look the tree up again between rounds, so that later rounds forget
  # inodes the kernel learned anew (the last round leaves them forgotten).
  ((round < 3)) && ls -lR "$M" >/dev/null
  sleep 1
done
q1=$(queued)
echo "  (after drop_caches at t=$((SECONDS - t0)) s: $q1 queued; before: $forget0; after: $(stats ops.forget ops.forget_multi))"
check "A: the drops ran while commits were queued ($q0 queued after the untar, $q1 after the drops)" \
  eval "((q0 > 0 && q1 > 0))"
E2E_TIMEOUT=$((DELAY_A + 70)) check "A: the queue drains (within commit_delay + 60 s)" wait_drained $((DELAY_A + 60))
echo "  (at t=$((SECONDS - t0)) s: $(stats commits.queued async_commits async_commit_retries conflicts errors.eio))"
e2e_unmount && _e2e_pass "A: unmount succeeds"
check "A: the unmount left nothing in the cache journal alone" left_behind "$LOG_A"
E2E_MOUNT_OPTS=""
e2e_new_cache
e2e_mount
check "A: every file on a mount with a new cache dir, with its exact content" \
  compare "$SRC_A" "$M" "$E2E_TMP/names-a" && sed 's/^/  /' "$E2E_TMP/.out"
check "A: no conflict copies" conflicts "$M" && sed 's/^/  /' "$E2E_TMP/.out"
check "A: nothing else in the tree (diff -r)" diff -r "$SRC_A" "$M"
e2e_unmount
fsck_clean
if (($(failed_so_far) > failed_before)); then
  echo "  scenario A failed; the writing mount's log:"
  log_lines "$LOG_A"
fi
if [[ ${E2E_KEEP:-0} != 1 ]]; then
  timeout 120 "$E2E_INSPECT" drop "$E2E_CONTAINER" >/dev/null || echo "note: could not delete container $E2E_CONTAINER"
fi

# ============================================================================
NLATE=${COMMIT_SAFETY_LATE:-8}
section "B: $NFILES + $NLATE writes while Azurite is frozen for ${FREEZE}s (default mount: commit=async)"
E2E_CONTAINER=$CONTAINER_BASE-b
failed_before=$(failed_so_far)
SRC_B=$E2E_TMP/src-b
mkdir -p "$SRC_B/d"
for i in $(seq -w 1 "$NFILES"); do head -c 4096 /dev/urandom >"$SRC_B/d/w$i"; done
for i in $(seq -w 1 "$NLATE"); do head -c 4096 /dev/urandom >"$SRC_B/d/late$i"; done
E2E_MOUNT_OPTS=""  # the defaults: commit=async, conflict=copy
# A TTL the burst cannot outlast on a slow machine (the burst is acknowledged
# whatever the service does); the writes after it go on past the TTL.
E2E_ATTR_TIMEOUT=$ATTR_B
e2e_new_cache
e2e_mount
E2E_ATTR_TIMEOUT=1
LOG_B=${E2E_LOG[$M]}
run "a directory, committed" eval "mkdir '$M/d' && echo before >'$M/d/before' && sync '$M/d'"
run "the queue is empty" wait_drained 30
ls -l "$M/d" >/dev/null
run "freeze Azurite (SIGSTOP)" kill -STOP "$AZ_PID"
t_freeze=$SECONDS
# write NAME: one file of SRC_B into the mount, bounded by the freeze (a call
# blocked on the frozen service is killed); its status goes to writes-b, an
# acknowledged name to acked-b.
: >"$E2E_TMP/acked-b"
: >"$E2E_TMP/writes-b"
write() {
  local left=$((FREEZE - 5 - (SECONDS - t_freeze))) ts rc
  if ((left < 2)); then
    echo "$1 not-tried" >>"$E2E_TMP/writes-b"
    return
  fi
  ts=$(ms_now)
  # (bash's "Killed" report of timeout goes to /dev/null)
  { timeout -s KILL "$left" cp "$SRC_B/d/$1" "$M/d/$1" 2>>"$E2E_TMP/writes-b.err"; } 2>/dev/null
  rc=$?
  echo "$1 $rc $(($(ms_now) - ts))ms" >>"$E2E_TMP/writes-b"
  [[ $rc == 0 ]] && echo "d/$1" >>"$E2E_TMP/acked-b"
}
# A burst (as a shell loop or cp -r writes), then drop_caches (the kernel
# forgets the new files and may forget the directory), then a writer that
# keeps writing through the rest of the freeze, a file every 2 s.
for i in $(seq -w 1 "$NFILES"); do write "w$i"; done
echo "  (the burst of $NFILES writes ended at t=$((SECONDS - t_freeze)) s of the freeze)"
drop_caches
# Past the TTL, the cache answers: a listing, a stat, a read of cached data.
while ((SECONDS - t_freeze < ATTR_B + 1)); do sleep 1; done
offline_reads() {
  local n
  n=$(timeout -s KILL 20 ls "$M/d" | wc -l) && ((n == NFILES + 1)) &&
    timeout -s KILL 20 stat "$M/d/w$(printf %0${#NFILES}d 1)" >/dev/null &&
    [[ $(timeout -s KILL 20 cat "$M/d/before") == before ]]
}
t_reads=$(ms_now)
check "B: past the TTL, ls, stat and cat of cached entries answer while frozen" offline_reads
echo "  (they took $(($(ms_now) - t_reads)) ms in all)"
for i in $(seq -w 1 "$NLATE"); do
  write "late$i"
  sleep 2
done
awk '$1 ~ /^late/' "$E2E_TMP/writes-b" | tr '\n' ' ' | sed 's/^/  (late writes: /; s/$/)\n/'
total=$((NFILES + NLATE))
acked=$(wc -l <"$E2E_TMP/acked-b")
echo "  ($acked of $total writes returned 0 within $((SECONDS - t_freeze)) s;" \
  "$(awk '$2 != 0 && $2 != "not-tried"' "$E2E_TMP/writes-b" | wc -l) failed or were killed," \
  "$(grep -c not-tried "$E2E_TMP/writes-b") not tried)"
awk '$2 != 0' "$E2E_TMP/writes-b" | head -n 5 | sed 's/^/  write: /'
sed -E 's/[^ ]*mnt\/d\/[^ :]*/NAME/' "$E2E_TMP/writes-b.err" | sort | uniq -c | head -n 5 | sed 's/^/  /'
check "B: every write during the freeze succeeds ($acked of $total)" eval "((acked == total))"
while ((SECONDS - t_freeze < FREEZE)); do sleep 1; done
echo "  (before the thaw: $(stats commits.queued commits.retrying async_commits async_commit_retries conflicts requests.failed_fast))"
run "thaw Azurite (SIGCONT) after $((SECONDS - t_freeze)) s" kill -CONT "$AZ_PID"
t_thaw=$SECONDS
E2E_TIMEOUT=130 check "B: the queue drains within 120 s of the thaw" wait_drained 120
echo "  ($((SECONDS - t_thaw)) s after the thaw: $(stats commits.queued async_commits async_commit_retries conflicts errors.eio))"
e2e_unmount && _e2e_pass "B: unmount succeeds"
check "B: the unmount left nothing in the cache journal alone" left_behind "$LOG_B"
e2e_new_cache
e2e_mount
check "B: every acknowledged file on a mount with a new cache dir, with its exact content" \
  compare "$SRC_B" "$M" "$E2E_TMP/acked-b" && sed 's/^/  /' "$E2E_TMP/.out"
check "B: the file written before the freeze" grep -qx before "$M/d/before"
check "B: no conflict copies" conflicts "$M" && sed 's/^/  /' "$E2E_TMP/.out"
e2e_unmount
fsck_clean
if (($(failed_so_far) > failed_before)); then
  echo "  scenario B failed; the writing mount's log:"
  log_lines "$LOG_B"
fi

e2e_finish
