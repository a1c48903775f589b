#!/usr/bin/env bash
# The backend goes away and comes back, with no remount: an Azurite of this
# script's own (ports 31000-31002, data on disk, so a restart keeps it) is
# stopped under a mount. Operations that need the service fail with EIO after
# the request deadline and retries (about a second: connections are
# refused), and once one call has failed that way the circuit breaker fails
# the next ones at once; what the cache holds answers (a lookup of a name the
# cached listing lacks is ENOENT, past the TTL too: docs/semantics.md); data
# written and not committed stays in the dirty journal; once Azurite is back
# the same mount works and commits it. Then Azurite is frozen (SIGSTOP:
# connections accepted, never answered): processes blocked in calls in one
# directory (stat, ls, cat, create) are SIGKILLed and must be gone within
# seconds (the FUSE interrupt aborts their requests), not after the 45 s
# deadline, and their aborted requests open the circuit, so the calls after
# them fail with EIO within seconds too; after SIGCONT the mount works. Last, Azurite is
# stopped while `mv` of a directory of 200 files copies their blobs and is
# restarted: after a remount (which rolls the rename forward) the tree is
# wholly at one name with every file intact, and fsck finds it clean.
# About 70 seconds.
#
#   bash tests/e2e/outage.sh BUILD_DIR
#   OUTAGE_PORT_BASE=N (default 31000): blob N, queue N+1, table N+2
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BASE=${OUTAGE_PORT_BASE:-31000}
export AZURITE_IN_MEMORY=0
azurite() { "$ROOT/scripts/azurite" "$@"; }
source "$(dirname "$0")/private_azurite.bash"
private_azurite_start outage "$BASE" OUTAGE_PORT_BASE

source "$(dirname "$0")/lib.bash" "$@"
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3

e2e_mount

section "before the outage"
head -c 300000 /dev/urandom >"$E2E_TMP/before"
check "a committed file" cp "$E2E_TMP/before" "$M/before"
head -c 200000 /dev/urandom >"$E2E_TMP/dirty"
# A writer that keeps its file open: writes, then fsyncs when told (go.N
# files), reporting each result to result.N.
"$PY" - "$M/dirty" "$E2E_TMP/dirty" "$E2E_TMP" <<'PYEOF' &
import os, sys, time
path, src, tmp = sys.argv[1:4]
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, open(src, "rb").read())
open(os.path.join(tmp, "written"), "w").close()
for step, action in ((1, "fsync"), (2, "fsync"), (3, "close")):
    while not os.path.exists(os.path.join(tmp, "go.%d" % step)):
        time.sleep(0.05)
    t0 = time.time()
    try:
        os.fsync(fd) if action == "fsync" else os.close(fd)
        result = "ok"
    except OSError as e:
        result = os.strerror(e.errno)
    with open(os.path.join(tmp, "result.%d" % step), "w") as f:
        f.write("%s %s after %.1fs\n" % (action, result, time.time() - t0))
PYEOF
WRITER=$!
run "the writer wrote (not committed: the file stays open)" \
  eval "for i in \$(seq 100); do [[ -e '$E2E_TMP/written' ]] && exit 0; sleep 0.1; done; exit 1"

section "Azurite stopped"
run "stop Azurite" azurite stop
ms_now() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
ms_since() { echo $(($(ms_now) - $1)); }
# The failing calls run in parallel, each timed.
timed() {  # timed NAME CMD...: stderr and the time taken to $E2E_TMP/NAME.txt
  local name=$1 start
  start=$(ms_now)
  shift
  "$@" >/dev/null 2>"$E2E_TMP/$name.err"
  echo "status $? after $(ms_since "$start") ms: $(tail -1 "$E2E_TMP/$name.err")" >"$E2E_TMP/$name.txt"
}
t0=$(ms_now)
timed lookup stat "$M/never-seen" &
p1=$!
timed mkdir mkdir "$M/newdir" &
p2=$!
touch "$E2E_TMP/go.1"
wait "$p1" "$p2"  # (not inside check: a subshell cannot wait for them)
echo "  (the failing calls returned after $(ms_since "$t0") ms)"
check "a lookup of a name the cached root listing lacks answers ENOENT from the cache" \
  grep -q "No such file or directory" "$E2E_TMP/lookup.txt"
cat "$E2E_TMP/lookup.txt" | sed 's/^/  lookup: /'
check "mkdir fails with EIO" grep -q "Input/output error" "$E2E_TMP/mkdir.txt"
cat "$E2E_TMP/mkdir.txt" | sed 's/^/  mkdir: /'
E2E_TIMEOUT=150 check "fsync of the written file fails with EIO" \
  eval "until [[ -e '$E2E_TMP/result.1' ]]; do sleep 0.2; done; grep -q 'fsync Input/output error' '$E2E_TMP/result.1'"
sed 's/^/  writer: /' "$E2E_TMP/result.1"
check "the data is still in the dirty journal" \
  eval "sqlite3 '$E2E_CACHE'/blocks/*/index.db 'select count(*) from blocks where state >= 2' | grep -qv '^0$'"
# fail_fast N TAG: N mkdirs of new names one after another (each needs the
# table), each must fail with EIO; prints the milliseconds they took in all.
fail_fast() {
  local start i out
  start=$(ms_now)
  for i in $(seq "$1"); do
    out=$(mkdir "$M/$2-$i" 2>&1)
    [[ $out == *"Input/output error"* ]] || { echo "call $i: ${out:-succeeded}"; return 1; }
  done
  ms_since "$start"
}
sleep $((E2E_ATTR_TIMEOUT + 1))  # cached listings need revalidation from now on
check "with the circuit open, 10 more mkdirs fail with EIO at once (a second each before it)" \
  eval "took=\$(fail_fast 10 stopped); echo \"\$took ms\"; [[ \$took =~ ^[0-9]+\$ ]] && ((took < 3000))"
sed 's/^/  10 mkdirs: /' "$E2E_TMP/.out"

# works_within SECONDS CMD...: CMD succeeds within SECONDS (tried every 0.1 s).
works_within() {
  local end=$(($(ms_now) + $1 * 1000))
  shift
  until "$@"; do
    (($(ms_now) < end)) || return 1
    sleep 0.1
  done
}

section "Azurite back: the same mount works again"
run "start Azurite (same data directory)" azurite start
t0=$(ms_now)
check "a new directory, within 2 s" works_within 2 mkdir "$M/newdir"
echo "  (mkdir succeeded $(ms_since "$t0") ms after Azurite answered)"
check "the file committed before the outage reads whole" cmp "$E2E_TMP/before" "$M/before"
touch "$E2E_TMP/go.2"
E2E_TIMEOUT=90 check "the next fsync commits the journaled data" \
  eval "until [[ -e '$E2E_TMP/result.2' ]]; do sleep 0.2; done; grep -q 'fsync ok' '$E2E_TMP/result.2'"
sed 's/^/  writer: /' "$E2E_TMP/result.2"
touch "$E2E_TMP/go.3"
E2E_TIMEOUT=90 check "close succeeds" \
  eval "until [[ -e '$E2E_TMP/result.3' ]]; do sleep 0.2; done; grep -q 'close ok' '$E2E_TMP/result.3'"
wait "$WRITER"
check "the blob holds every byte written before the outage" \
  eval "'$E2E_INSPECT' cat '$E2E_CONTAINER' dirty | cmp - '$E2E_TMP/dirty'"
check "and the mount reads it back" cmp "$E2E_TMP/dirty" "$M/dirty"
check "ls of the root" eval "ls '$M' | sort | tr '\n' ' ' | grep -qx 'before dirty newdir '"

section "Azurite frozen (SIGSTOP: connections accepted, never answered)"
AZ_PID=$(cat "$AZURITE_DIR/azurite.pid")
D=$M/kd
run "a directory with three files" \
  eval "mkdir '$D' && for i in 0 1 2; do head -c 100000 /dev/urandom >'$D/f'\$i; done"
sleep $((E2E_ATTR_TIMEOUT + 1))  # cached listings need revalidation from now on
run "freeze Azurite" kill -STOP "$AZ_PID"
# Twelve processes (more than libfuse's default of 10 worker threads) call
# into $D in a loop until they are killed: each is blocked in one call.
cat >"$E2E_TMP/caller.py" <<'PYEOF'
import itertools, os, sys
mode, d = sys.argv[1:3]
for i in itertools.count():
    name = os.path.join(d, "%s-%d-%d" % (mode, os.getpid(), i))
    try:
        if mode == "stat":
            os.stat(name)
        elif mode == "ls":
            os.listdir(d)
        elif mode == "cat":
            with open(os.path.join(d, "f%d" % (i % 3)), "rb") as f:
                f.read()
        else:
            os.close(os.open(name, os.O_CREAT | os.O_WRONLY, 0o644))
    except OSError:
        pass
PYEOF
KIDS=()
for mode in stat ls cat create stat ls cat create stat ls cat create; do
  "$PY" "$E2E_TMP/caller.py" "$mode" "$D" </dev/null >/dev/null 2>&1 &
  KIDS+=($!)
  disown  # no "Killed" job report
done
sleep 2
# gone PID: exited (a zombie until reaped counts as gone).
gone() { [[ ! -e /proc/$1/stat ]] || [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) == Z ]]; }
states=""
for pid in "${KIDS[@]}"; do states+="$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) "; done
echo "  (states of the 12 processes before the kill: $states)"
t0=$(ms_now)
kill -KILL "${KIDS[@]}" 2>/dev/null
left=${#KIDS[@]}
while ((left > 0 && $(ms_now) - t0 < 120000)); do
  left=0
  for pid in "${KIDS[@]}"; do gone "$pid" || left=$((left + 1)); done
  ((left > 0)) && sleep 0.05
done
took=$(ms_since "$t0")
check "12 processes SIGKILLed while blocked in one directory are gone within 5 s, not after the 45 s deadline (${took} ms, $left left)" \
  eval "((left == 0 && took <= 5000))"
t0=$(ms_now)
timed lookup2 stat "$M/frozen-unknown" &
p1=$!
timed mkdir2 mkdir "$M/frozen-dir" &
p2=$!
wait "$p1" "$p2"  # (not inside check: a subshell cannot wait for them)
took=$(ms_since "$t0")
# (Before the aborted requests counted, the circuit stayed closed and these
# waited the 45 s request deadline.)
check "the calls after the kill return within 10 s: the aborted requests opened the circuit (${took} ms)" \
  eval "((took <= 10000))"
check "a lookup answers from the cache (ENOENT)" grep -q "No such file or directory" "$E2E_TMP/lookup2.txt"
sed 's/^/  lookup: /' "$E2E_TMP/lookup2.txt"
check "mkdir fails with EIO" grep -q "Input/output error" "$E2E_TMP/mkdir2.txt"
sed 's/^/  mkdir: /' "$E2E_TMP/mkdir2.txt"
check "then, with the circuit open, 10 mkdirs fail with EIO within seconds (45 s each before it)" \
  eval "took=\$(fail_fast 10 frozen); echo \"\$took ms\"; [[ \$took =~ ^[0-9]+\$ ]] && ((took < 10000))"
sed 's/^/  10 mkdirs: /' "$E2E_TMP/.out"
run "thaw Azurite" kill -CONT "$AZ_PID"
t0=$(ms_now)
check "the same mount works again within 2 s: mkdir" works_within 2 mkdir "$M/frozen-dir"
echo "  (mkdir succeeded $(ms_since "$t0") ms after the thaw)"
check "a lookup" eval "! stat '$M/frozen-unknown' 2>&1 | grep -q 'Input/output'"
check "and a write" eval "echo after >'$M/frozen-dir/f' && [[ \$(cat '$M/frozen-dir/f') == after ]]"

section "Azurite stopped mid-copy and restarted"
# A directory rename copies every file's blob (one server-side copy each):
# Azurite is stopped while the copies run, then started again. The rename
# fails with EIO or finishes; after a remount (its start rolls unfinished
# renames forward) the tree is wholly at one name, every file intact.
N=300
run "$N files in a directory" eval "mkdir '$E2E_TMP/src' && cd '$E2E_TMP/src' &&
  for i in \$(seq $N); do head -c \$((1000 + i * 13)) /dev/urandom >f\$i; done &&
  sha256sum f* >'$E2E_TMP/tree.sums' && cp -r '$E2E_TMP/src' '$M/tree'"
mv -T "$M/tree" "$M/tree2" 2>"$E2E_TMP/mv.err" &
MV=$!
copies() { "$E2E_INSPECT" blobs "$E2E_CONTAINER" 2>/dev/null | grep -c '^tree2/'; }
for _ in $(seq 600); do
  n=$(copies)
  ((n > 0)) && break
  kill -0 "$MV" 2>/dev/null || break
  sleep 0.05
done
run "stop Azurite while the rename copies blobs" azurite stop
echo "  (blobs copied when the stop began: ${n:-0} of $N)"
wait "$MV"
mv_rc=$?
echo "  (mv: status $mv_rc $(tail -1 "$E2E_TMP/mv.err"))"
check "mv finished or failed with EIO" \
  eval "[[ $mv_rc == 0 ]] || grep -q 'Input/output error' '$E2E_TMP/mv.err'"
run "start Azurite (same data directory)" azurite start
check "the mount works again" works_within 2 ls "$M"
e2e_remount keep
# one_place: the tree is wholly at one name, nothing at the other.
one_place() {
  local at
  if [[ -e $M/tree2 ]]; then at=tree2; else at=tree; fi
  echo "at $at"
  [[ $at == tree || ! -e $M/tree ]] || { echo "both names exist"; return 1; }
  [[ $(ls "$M/$at" | wc -l) == "$N" ]] || { echo "$(ls "$M/$at" | wc -l) files, not $N"; return 1; }
  (cd "$M/$at" && sha256sum --quiet -c "$E2E_TMP/tree.sums")
}
check "after the remount the tree is wholly at one name, every file intact (by content hash)" one_place
sed 's/^/  /' "$E2E_TMP/.out"
e2e_unmount
E2E_TIMEOUT=300 check "fsck: clean" eval "'$E2E_STAMPFS' fsck '$E2E_CONTAINER' >'$E2E_TMP/fsck.out' 2>&1"
sed 's/^/  fsck: /' "$E2E_TMP/fsck.out"

e2e_daemon_check
e2e_finish
