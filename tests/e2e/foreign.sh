#!/usr/bin/env bash
# Other tools write the container while it is mounted (issue 30;
# docs/semantics.md, "Other tools' changes"): blobs put, overwritten and
# deleted with the storage library (tests/e2e/tools/stampfs_populate.cc, no
# stampfs metadata) show up in a mount with default options plus a short
# foreign_ttl, when a directory is listed, a name in it is looked up, or a
# file in it is opened: new files and directories, overwrites read whole
# (grown or shrunk: never the new bytes cut to the old size), deletes gone
# and the name free for a new file (no conflict copy). A loop of reads while
# another tool overwrites a file sees only whole versions and no error. An
# idle mount makes no requests, and fsck finds the adopted tree clean. A
# read-only mount (-o ro) shows the same changes, kept over the table it
# cannot write.
# Then -o events=QUEUE alone (foreign_ttl=0): blob events posted to a
# storage queue the way Event Grid delivers them (stampfs_populate event,
# both schemas) make puts, overwrites and deletes visible within about a
# second, with no listing; stale, forged and foreign events change nothing,
# garbage goes to QUEUE-poison, and an idle mount polls at most every 5 s.
# About 90 seconds.
#
#   bash tests/e2e/foreign.sh BUILD_DIR
source "$(dirname "$0")/lib.bash" "$@"

TTL=2
E2E_MOUNT_OPTS="foreign_ttl=$TTL${E2E_MOUNT_OPTS:+,$E2E_MOUNT_OPTS}"
POPULATE=$E2E_BUILD_DIR/tests/stampfs_populate
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3
BOUND=$((TTL + E2E_ATTR_TIMEOUT + 3))
put() { "$POPULATE" put "$E2E_CONTAINER" "$1" "$2" >/dev/null; }
del() { "$POPULATE" delete "$E2E_CONTAINER" "$1" >/dev/null; }
within() {
  local limit=$1 t0=$SECONDS
  shift
  until eval "$*" 2>/dev/null; do
    ((SECONDS - t0 > limit)) && { echo "not within ${limit}s"; return 1; }
    sleep 0.2
  done
}
# settles FILE OLD NEW: cat FILE until it reads NEW (within BOUND); every
# read before must be OLD whole, and none may fail.
settles() {
  local file=$1 old=$2 new=$3 t0=$SECONDS got
  while true; do
    got=$(cat "$file") || { echo "cat failed"; return 1; }
    [[ $got == "$new" ]] && return 0
    [[ $got == "$old" ]] || { echo "read neither version: '$got'"; return 1; }
    ((SECONDS - t0 > BOUND)) && { echo "still the old version after ${BOUND}s"; return 1; }
    sleep 0.1
  done
}

e2e_mount
run "a directory of the mount's own" mkdir "$M/own"

# ---------------------------------------------------------------------------
section "new blobs and directories"
check "a blob put into a new directory is listed" \
  eval "put in/a.txt 'from another tool' && within $BOUND \"ls '$M/in' | grep -qx a.txt\""
check_eq "and reads whole" "from another tool" cat "$M/in/a.txt"
check "a blob put deeper: its directories appear as they are listed" \
  eval "put in/deep/er/b.txt deeper && within $BOUND \"[[ \\\$(cat '$M/in/deep/er/b.txt') == deeper ]]\""
check "opened by name, never listed" \
  eval "ls '$M/own' >/dev/null; put own/by-name.txt named &&
        within $BOUND \"[[ \\\$(cat '$M/own/by-name.txt') == named ]]\""

# ---------------------------------------------------------------------------
section "overwrites read whole"
run "a small file, read once (cached)" eval "put in/grow.txt 'fourteen bytes' &&
  within $BOUND \"[[ \\\$(cat '$M/in/grow.txt') == 'fourteen bytes' ]]\""
check "grown by another tool: the new version whole, never cut to the old size" \
  eval "put in/grow.txt 'twenty-six bytes, longer!!' &&
        settles '$M/in/grow.txt' 'fourteen bytes' 'twenty-six bytes, longer!!'"
check_eq "stat shows its new size" 26 stat -c %s "$M/in/grow.txt"
check "shrunk: the new version whole" \
  eval "put in/grow.txt tiny && settles '$M/in/grow.txt' 'twenty-six bytes, longer!!' tiny"
run "a file never read here" eval "put in/cold.txt 'old content' &&
  within $BOUND \"[[ \\\$(stat -c %s '$M/in/cold.txt') == 11 ]]\""
check "overwritten before its first read: the new version whole" \
  eval "put in/cold.txt 'the content after the overwrite' &&
        settles '$M/in/cold.txt' 'old content' 'the content after the overwrite'"

# ---------------------------------------------------------------------------
section "deletes"
run "a file to delete" eval "put in/gone.txt 'soon gone' &&
  within $BOUND \"[[ \\\$(cat '$M/in/gone.txt') == 'soon gone' ]]\""
check "deleted by another tool: gone from the listing" \
  eval "del in/gone.txt && within $BOUND \"! ls '$M/in' | grep -qx gone.txt\""
check "writing its name creates the file again" eval "echo again >'$M/in/gone.txt'"
check_eq "it reads back" again cat "$M/in/gone.txt"
check "no conflict copy" eval "! ls '$M/in' | grep -q conflict"
e2e_sync

# ---------------------------------------------------------------------------
section "reads while another tool overwrites"
run "the file" eval "put in/busy.txt v0 && within $BOUND \"[[ -f '$M/in/busy.txt' ]]\""
check "every read is one whole version, none fails" "$PY" - "$POPULATE" "$E2E_CONTAINER" \
  "$M/in/busy.txt" <<'PYEOF'
import subprocess, sys, threading, time
populate, container, path = sys.argv[1:4]
versions = {b"v0"}
def version(k):
    # Lengths change every time: a cut or mixed read cannot pass for one.
    return (b"version %d|" % k) * (1 + (k * 37) % 400)
stop = threading.Event()
def writer():
    k = 1
    while not stop.is_set() and k <= 40:
        data = version(k)
        versions.add(data)
        subprocess.run([populate, "put", container, "in/busy.txt", data.decode()],
                       check=True, stdout=subprocess.DEVNULL)
        k += 1
        time.sleep(0.25)
    stop.set()
t = threading.Thread(target=writer)
t.start()
reads = bad = errors = 0
seen = set()
while not stop.is_set():
    try:
        with open(path, "rb") as f:
            got = f.read()
    except OSError as e:
        errors += 1
        print("read failed:", e)
        continue
    reads += 1
    if got not in versions:
        bad += 1
        print("not a version written: %d bytes, starts %r" % (len(got), got[:24]))
    seen.add(got)
    time.sleep(0.02)
t.join()
print("%d reads, %d versions seen, %d not whole, %d errors" % (reads, len(seen), bad, errors))
sys.exit(1 if bad or errors or len(seen) < 3 else 0)
PYEOF

# ---------------------------------------------------------------------------
section "a read-only mount sees them too"
M2=$E2E_TMP/mnt2
saved_cache=$E2E_CACHE
e2e_new_cache
E2E_MOUNT_OPTS="ro,$E2E_MOUNT_OPTS" e2e_mount "$M2"
E2E_CACHE=$saved_cache
check "a new blob is listed and reads whole" \
  eval "put ro/new.txt 'seen read-only' && within $BOUND \"[[ \\\$(cat '$M2/ro/new.txt') == 'seen read-only' ]]\""
check "an overwrite reads whole" \
  eval "put ro/new.txt 'overwritten, read-only mount' &&
        settles '$M2/ro/new.txt' 'seen read-only' 'overwritten, read-only mount'"
check "a delete disappears" eval "del ro/new.txt && within $BOUND \"[[ ! -e '$M2/ro/new.txt' ]]\""
check_fails "and the mount still writes nothing" "Read-only file system" touch "$M2/ro/mine"
e2e_unmount "$M2"

# ---------------------------------------------------------------------------
section "between mounts"
e2e_unmount
run "a blob put while unmounted" put in/while-away.txt "written while unmounted"
e2e_mount
check_eq "shows at the next mount" "written while unmounted" cat "$M/in/while-away.txt"
check "an idle mount makes no requests" eval '
  before=$(e2e_stat_value "$M" requests.total); sleep $((TTL * 3))
  after=$(e2e_stat_value "$M" requests.total); echo "$before -> $after"; ((after == before))'
e2e_unmount
check "fsck finds the adopted tree clean" "$E2E_STAMPFS" fsck "$E2E_CONTAINER"

# ---------------------------------------------------------------------------
section "change events (-o events, no directory checks)"
Q=${E2E_CONTAINER:0:50}-ev
Q=${Q//--/-}
run "the events queue" "$POPULATE" queue "$Q"
event() { "$POPULATE" event "$Q" "$@" >/dev/null; }
E2E_MOUNT_OPTS="foreign_ttl=0,events=$Q" e2e_mount
check "the mount made QUEUE-poison" "$POPULATE" count "$Q-poison"
lists0=$(e2e_stat_value "$M" requests.blob.list)
# visible FILE TEXT: seconds until cat FILE reads TEXT (fails after 10 s).
visible() {
  local t0 now
  t0=$(date +%s.%N)
  until [[ $(cat "$1" 2>/dev/null) == "$2" ]]; do
    now=$(date +%s.%N)
    awk -v a="$t0" -v b="$now" 'BEGIN { exit !(b - a > 10) }' && return 1
    sleep 0.05
  done
  now=$(date +%s.%N)
  awk -v a="$t0" -v b="$now" 'BEGIN { printf "%.2f\n", b - a }'
}
check "20 new files, each visible within 2 s of its event (median)" eval '
  : >"$E2E_TMP/latency"
  for i in $(seq 1 20); do
    put "ev/n$i.txt" "event $i" && event created "$E2E_CONTAINER" "ev/n$i.txt" || exit 1
    visible "$M/ev/n$i.txt" "event $i" >>"$E2E_TMP/latency" || { echo "n$i: not visible in 10 s"; exit 1; }
  done
  median=$(sort -n "$E2E_TMP/latency" | sed -n 10p)
  echo "median ${median}s, max $(sort -n "$E2E_TMP/latency" | tail -1)s"
  awk -v m="$median" "BEGIN { exit !(m <= 2) }"'
check "an overwrite (CloudEvents schema) reads whole" eval '
  put ev/n1.txt "the first file, overwritten" &&
  event created "$E2E_CONTAINER" ev/n1.txt "" cloud &&
  settles "$M/ev/n1.txt" "event 1" "the first file, overwritten"'
check "a delete disappears" eval '
  del ev/n2.txt && event deleted "$E2E_CONTAINER" ev/n2.txt &&
  within 10 "[[ ! -e \"$M/ev/n2.txt\" ]]"'
check "a forged created event for a blob that is not there changes nothing" eval '
  event deleted "$E2E_CONTAINER" ev/n3.txt 0 &&
  "$POPULATE" message "$Q" "$(printf %s "{\"eventType\":\"Microsoft.Storage.BlobCreated\",\"subject\":\"/blobServices/default/containers/$E2E_CONTAINER/blobs/ev/forged.txt\",\"id\":\"f1\",\"data\":{\"api\":\"PutBlob\",\"sequencer\":\"1\"}}" | base64 -w0)" &&
  sleep 2 && [[ ! -e "$M/ev/forged.txt" ]] && [[ $(cat "$M/ev/n3.txt") == "event 3" ]]'
OTHER=${E2E_CONTAINER:0:55}-other
check "events about another container change nothing" eval '
  "$POPULATE" create "$OTHER" && "$POPULATE" put "$OTHER" ev/other.txt x &&
  event created "$OTHER" ev/other.txt && sleep 2 && ! ls "$M/ev" | grep -qx other.txt'
[[ ${E2E_KEEP:-0} == 1 ]] || "$E2E_INSPECT" drop "$OTHER" >/dev/null
check "a message that is no event goes to $Q-poison" eval '
  "$POPULATE" message "$Q" "not an event" &&
  within 10 "[[ \$(\"$POPULATE\" count \"$Q-poison\") -ge 1 ]]"'
check "no listing was needed" eval '(( $(e2e_stat_value "$M" requests.blob.list) == lists0 ))'
check "an idle mount polls the queue at most every 5 s" eval '
  sleep 8; before=$(e2e_stat_value "$M" requests.total); sleep 20
  after=$(e2e_stat_value "$M" requests.total); echo "$((after - before)) requests in 20 s"
  ((after - before <= 5))'
e2e_unmount
check "fsck: clean" "$E2E_STAMPFS" fsck "$E2E_CONTAINER"

e2e_finish
