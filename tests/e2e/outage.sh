#!/usr/bin/env bash
# The backend goes away and comes back, with no remount: an Azurite of this
# script's own (ports 31000-31002, data on disk, so a restart keeps it) is
# stopped under a mount. Operations fail with EIO after the request deadline
# and retries (no hang; a process waiting in the file system can be killed);
# data written and not committed stays in the dirty journal; once Azurite is
# back the same mount works and commits it. Then Azurite is frozen
# (SIGSTOP): calls fail with EIO after the 45 s request deadline, and after
# SIGCONT the mount works. (Not checked: a process killed while its call
# waits lingers until the daemon answers; FUSE interrupts are not handled.)
# About 60 s (the failing calls run in parallel).
#
#   bash tests/e2e/outage.sh BUILD_DIR
#   OUTAGE_PORT_BASE=N (default 31000): blob N, queue N+1, table N+2
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BASE=${OUTAGE_PORT_BASE:-31000}
export AZURITE_BLOB_PORT=$BASE AZURITE_QUEUE_PORT=$((BASE + 1)) AZURITE_TABLE_PORT=$((BASE + 2))
export AZURITE_DIR
AZURITE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/stampfs-outage-azurite.XXXXXX")
export AZURITE_IN_MEMORY=0
key="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="  # the emulator's public key
export AZURE_STORAGE_CONNECTION_STRING="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=$key;BlobEndpoint=http://127.0.0.1:$AZURITE_BLOB_PORT/devstoreaccount1;TableEndpoint=http://127.0.0.1:$AZURITE_TABLE_PORT/devstoreaccount1"
azurite() { "$ROOT/scripts/azurite" "$@"; }
azurite start >/dev/null || { echo "outage: cannot start Azurite on ports $BASE-$((BASE + 2))" >&2; exit 2; }
# Stops this Azurite when the script ends, whatever way it ends (after the
# lib's EXIT trap has deleted the container).
bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; "$2" stop >/dev/null 2>&1; rm -rf "$AZURITE_DIR"' \
  outage-guard $$ "$ROOT/scripts/azurite" </dev/null >/dev/null 2>&1 &

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
t0=$SECONDS
# The failing calls run in parallel, each timed.
timed() {  # timed NAME CMD...: stderr and the time taken to $E2E_TMP/NAME.txt
  local name=$1 start=$SECONDS
  shift
  "$@" >/dev/null 2>"$E2E_TMP/$name.err"
  echo "status $? after $((SECONDS - start))s: $(tail -1 "$E2E_TMP/$name.err")" >"$E2E_TMP/$name.txt"
}
timed lookup stat "$M/never-seen" &
p1=$!
timed mkdir mkdir "$M/newdir" &
p2=$!
touch "$E2E_TMP/go.1"
wait "$p1" "$p2"  # (not inside check: a subshell cannot wait for them)
echo "  (the failing calls returned after $((SECONDS - t0))s)"
check "a lookup fails with EIO (not ENOENT: the name may exist)" grep -q "Input/output error" "$E2E_TMP/lookup.txt"
cat "$E2E_TMP/lookup.txt" | sed 's/^/  lookup: /'
check "mkdir fails with EIO" grep -q "Input/output error" "$E2E_TMP/mkdir.txt"
cat "$E2E_TMP/mkdir.txt" | sed 's/^/  mkdir: /'
E2E_TIMEOUT=150 check "fsync of the written file fails with EIO" \
  eval "until [[ -e '$E2E_TMP/result.1' ]]; do sleep 0.2; done; grep -q 'fsync Input/output error' '$E2E_TMP/result.1'"
sed 's/^/  writer: /' "$E2E_TMP/result.1"
check "the data is still in the dirty journal" \
  eval "sqlite3 '$E2E_CACHE'/blocks/*/index.db 'select count(*) from blocks where state >= 2' | grep -qv '^0$'"

section "Azurite back: the same mount works again"
run "start Azurite (same data directory)" azurite start
check "a new directory" mkdir "$M/newdir"
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
sleep $((E2E_ATTR_TIMEOUT + 1))  # cached listings need revalidation from now on
run "freeze Azurite" kill -STOP "$AZ_PID"
t0=$SECONDS
timed lookup2 stat "$M/frozen-unknown" &
p1=$!
timed mkdir2 mkdir "$M/frozen-dir" &
p2=$!
wait "$p1" "$p2"  # (not inside check: a subshell cannot wait for them)
took=$((SECONDS - t0))
check "calls return after the request deadline (45 s), not never (${took}s)" \
  eval "(($took >= 20 && $took <= 75))"
check "a lookup fails with EIO" grep -q "Input/output error" "$E2E_TMP/lookup2.txt"
sed 's/^/  lookup: /' "$E2E_TMP/lookup2.txt"
check "mkdir fails with EIO" grep -q "Input/output error" "$E2E_TMP/mkdir2.txt"
sed 's/^/  mkdir: /' "$E2E_TMP/mkdir2.txt"
run "thaw Azurite" kill -CONT "$AZ_PID"
check "the same mount works again: lookup" eval "! stat '$M/frozen-unknown' 2>&1 | grep -q 'Input/output'"
check "mkdir" mkdir "$M/frozen-dir"
check "and a write" eval "echo after >'$M/frozen-dir/f' && [[ \$(cat '$M/frozen-dir/f') == after ]]"

e2e_finish
