#!/usr/bin/env bash
# e2e: file data through a real mount (issue 4).
#
#   bash tests/e2e/data_path.sh BUILD_DIR
#
# Files of 0 B, 1 B, one block, one block + 1 and 300 MiB written and read
# back by checksum, also after a remount with an empty and with a warm cache,
# and read with the storage client directly (byte-identical blobs); random
# 4 KiB writes into a 64 MiB file against a local model; truncate up/down;
# appends from two processes; a sparse file; rsync in and out; tar x of many
# small files; SQLite integrity_check; git clone + fsck; two mounts writing
# one file (one committed version, one conflict copy); kill -9 of the daemon
# after fsync (nothing lost) and before (the journal replays).
# Prints the throughput of the 300 MiB write and cold read next to raw
# Put/Get with the storage client (information, never a failure).
source "$(dirname "$0")/lib.bash" "$@"

PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3
BLOBRW=$E2E_BUILD_DIR/tests/stampfs_blobrw
L=$E2E_TMP/local
mkdir -p "$L"
BLOCK=$((4 * 1024 * 1024))

# Same checksum on both sides.
same_sum() {
  local a b
  a=$(sha256sum <"$1" | cut -d' ' -f1) || return 1
  b=$(sha256sum <"$2" | cut -d' ' -f1) || return 1
  [[ $a == "$b" ]] || { echo "$1: $a, $2: $b"; return 1; }
}

# The blob as the storage client reads it (no mount) equals the local file.
blob_is() {
  e2e_sync
  "$E2E_INSPECT" cat "$E2E_CONTAINER" "$1" | cmp - "$2"
}

now() { date +%s.%N; }
# Peak resident memory of the daemon of $M, in MiB.
peak_rss_mib() { awk '/^VmHWM:/ { print int($2 / 1024) }' "/proc/${E2E_PID[$M]}/status"; }
rss_bounded() {
  local rss
  rss=$(peak_rss_mib)
  echo "peak RSS ${rss} MiB"
  ((rss > 0 && rss <= 256))
}
mibps() { awk -v b="$1" -v t0="$2" -v t1="$3" 'BEGIN { printf "%.1f", b / 1048576 / (t1 - t0) }'; }

ROOT=$(cd "$(dirname "$0")/../.." && pwd)

e2e_mount

# ---------------------------------------------------------------------------
section "sizes: 0 B, 1 B, one block, one block + 1, 300 MiB"
: >"$L/zero"
printf 'x' >"$L/one"
head -c $BLOCK /dev/urandom >"$L/block"
head -c $((BLOCK + 1)) /dev/urandom >"$L/blockplus"
head -c $((300 * 1024 * 1024)) /dev/urandom >"$L/big"
for f in zero one block blockplus; do
  check "write $f" cp "$L/$f" "$M/$f"
  check "read $f back" same_sum "$L/$f" "$M/$f"
done
t0=$(now)
E2E_TIMEOUT=300 check "write 300 MiB (dd, fsync)" dd if="$L/big" of="$M/big" bs=1M conv=fsync status=none
t1=$(now)
MOUNT_WRITE=$(mibps $((300 * 1024 * 1024)) "$t0" "$t1")
check_eq "size of the 300 MiB file" $((300 * 1024 * 1024)) stat -c %s "$M/big"
for f in zero one block blockplus big; do
  E2E_TIMEOUT=300 check "blob $f is byte-identical (storage client)" blob_is "$f" "$L/$f"
done
check "the daemon's peak RSS after writing 300 MiB is at most 256 MiB" rss_bounded
RSS_WRITE=$(peak_rss_mib)

e2e_remount fresh
t0=$(now)
E2E_TIMEOUT=300 check "cold read of 300 MiB" eval "cat '$M/big' >/dev/null"
t1=$(now)
MOUNT_READ=$(mibps $((300 * 1024 * 1024)) "$t0" "$t1")
check "the daemon's peak RSS after reading 300 MiB is at most 256 MiB" rss_bounded
RSS_READ=$(peak_rss_mib)
for f in zero one block blockplus big; do
  E2E_TIMEOUT=300 check "$f after a remount with an empty cache" same_sum "$L/$f" "$M/$f"
done
e2e_remount keep
t0=$(now)
for f in zero one block blockplus big; do
  E2E_TIMEOUT=300 check "$f after a remount with a warm cache" same_sum "$L/$f" "$M/$f"
done
t1=$(now)
MOUNT_WARM=$(mibps $((300 * 1024 * 1024)) "$t0" "$t1")

section "throughput (information): 300 MiB through the mount vs the storage client"
raw() {
  E2E_TIMEOUT=300 _e2e_run "$E2E_TMP/.raw" "$E2E_TMP/.rawerr" "$BLOBRW" "$@" &&
    awk '{ print $(NF-1) }' "$E2E_TMP/.raw" || echo "?"
}
RAW_PUT=$(raw put "$E2E_CONTAINER" zz-raw-put "$L/big")
RAW_PUTB=$(raw putblocks "$E2E_CONTAINER" zz-raw-blocks "$L/big" 4 4)
RAW_GET=$(raw get "$E2E_CONTAINER" zz-raw-put "$E2E_TMP/raw.get")
RAW_GETR=$(raw getranges "$E2E_CONTAINER" zz-raw-blocks "$E2E_TMP/raw.get" 4 4)
rm -f "$E2E_TMP/raw.get"
echo "  throughput MiB/s: mount write $MOUNT_WRITE (dd bs=1M + fsync) | raw Put Blob $RAW_PUT | raw 4x4 MiB Put Block $RAW_PUTB"
echo "  throughput MiB/s: mount cold read $MOUNT_READ (cat) | raw Get Blob $RAW_GET | raw 4x4 MiB ranged GET $RAW_GETR | mount warm read ${MOUNT_WARM} (sha256 of all)"
echo "  daemon peak RSS: ${RSS_WRITE} MiB writing, ${RSS_READ} MiB reading 300 MiB"
rm -f "$L/block" "$L/blockplus"

# ---------------------------------------------------------------------------
section "a file three times larger than the cache (cache_size=32M)"
e2e_unmount
e2e_new_cache
E2E_MOUNT_OPTS=cache_size=32M e2e_mount
head -c $((96 * 1024 * 1024)) "$L/big" >"$L/over"
E2E_TIMEOUT=300 check "write 96 MiB through a 32 MiB cache" dd if="$L/over" of="$M/over" bs=1M conv=fsync status=none
cache_mib() { du -sm "$E2E_CACHE" | cut -f1; }
check "the cache stays near its cap (du <= 48 MiB)" eval '(( $(cache_mib) <= 48 ))'
E2E_TIMEOUT=300 check "the blob is byte-identical" blob_is over "$L/over"
E2E_TIMEOUT=300 check "read it back through the small cache" cmp "$L/over" "$M/over"
check "still near the cap after reading (du <= 48 MiB)" eval '(( $(cache_mib) <= 48 ))'
e2e_remount keep
rm -f "$L/over"

# ---------------------------------------------------------------------------
section "random 4 KiB writes into a 64 MiB file vs a local model"
head -c $((64 * 1024 * 1024)) /dev/urandom >"$L/rand"
check "copy the 64 MiB file in" cp "$L/rand" "$M/rand"
random_writes() {
  "$PY" - "$L/rand" "$M/rand" <<'EOF'
import os, random, sys
rng = random.Random(4242)
fds = [os.open(p, os.O_RDWR) for p in sys.argv[1:]]
size = 64 * 1024 * 1024
for i in range(1500):
    off = rng.randrange(0, size + 8192)  # some land past the end: the file grows
    data = rng.randbytes(4096)
    for fd in fds:
        assert os.pwrite(fd, data, off) == 4096
for fd in fds:
    os.close(fd)
EOF
}
E2E_TIMEOUT=300 check "1500 random 4 KiB writes (same ops on the model)" random_writes
check "the file equals the model" cmp "$L/rand" "$M/rand"
E2E_TIMEOUT=300 check "the blob equals the model" blob_is rand "$L/rand"

# ---------------------------------------------------------------------------
section "truncate up and down"
truncate_both() {
  truncate -s "$1" "$L/rand" && truncate -s "$1" "$M/rand" && cmp "$L/rand" "$M/rand"
}
check "shrink into the middle of a block" truncate_both $((10 * BLOCK + 12345))
check "grow with a hole" truncate_both $((20 * BLOCK + 7))
check "shrink to one byte" truncate_both 1
check "grow again" truncate_both 100000
ftruncate_py() {
  "$PY" -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDWR); os.ftruncate(fd, 3000); os.write(fd, b"after"); os.close(fd)' "$1"
}
check "ftruncate on an open file, then write" eval "ftruncate_py '$L/rand' && ftruncate_py '$M/rand' && cmp '$L/rand' '$M/rand'"

# ---------------------------------------------------------------------------
section "append from two processes on one mount"
appender() {
  local i
  for ((i = 1; i <= 300; i++)); do echo "$1 line $i of the $1 writer" >>"$M/appended"; done
}
check "two appenders" eval 'appender A & appender B & wait'
check_eq "600 whole lines" 600 eval "grep -cE '^(A|B) line [0-9]+ of the (A|B) writer\$' '$M/appended'"
check_eq "300 from each" "300 A
300 B" eval "cut -d' ' -f1 '$M/appended' | sort | uniq -c | awk '{print \$1, \$2}'"

# ---------------------------------------------------------------------------
section "sparse file"
sparse_make() {
  truncate -s 40M "$1" && printf 'middle' | dd of="$1" bs=1 seek=$((20 * 1024 * 1024 + 3)) conv=notrunc status=none &&
    printf 'end' | dd of="$1" bs=1 seek=$((40 * 1024 * 1024)) conv=notrunc status=none
}
check "make the sparse file" eval "sparse_make '$L/sparse' && sparse_make '$M/sparse'"
check "holes read as zeros" cmp "$L/sparse" "$M/sparse"
e2e_remount fresh
check "the sparse file after a remount with an empty cache" cmp "$L/sparse" "$M/sparse"
check "the random-write file after a remount with an empty cache" cmp "$L/rand" "$M/rand"

# ---------------------------------------------------------------------------
section "rsync -a in and back out"
SRC=$E2E_TMP/src
mkdir -p "$SRC"
cp -a "$ROOT/fs" "$ROOT/storage" "$ROOT/cache" "$SRC"/
mkdir -p "$SRC/modes" && echo x >"$SRC/modes/ro" && chmod 0444 "$SRC/modes/ro" && ln -s ../fs "$SRC/modes/link"
E2E_TIMEOUT=300 check "rsync -a into the mount" rsync -a "$SRC/" "$M/rs/"
E2E_TIMEOUT=300 check "rsync -a back out" rsync -a "$M/rs/" "$E2E_TMP/back/"
check "diff -r source and round trip" diff -r "$SRC" "$E2E_TMP/back"
# Files only: directory times are the namespace's (tests/e2e/namespace.sh).
check "an rsync again transfers no file" eval "[[ -z \$(rsync -ai '$SRC/' '$M/rs/' | grep -v '^\.d') ]]"

# ---------------------------------------------------------------------------
section "tar x of many small files"
TARSRC=$E2E_TMP/tarsrc
make_tree() {
  local d i
  for d in $(seq 1 10); do
    mkdir -p "$TARSRC/d$d"
    for i in $(seq 1 80); do echo "file $d/$i $RANDOM" >"$TARSRC/d$d/f$i.txt"; done
  done
  tar cf "$E2E_TMP/small.tar" -C "$TARSRC" .
}
run "build an archive of 800 small files" make_tree
E2E_TIMEOUT=300 check "tar x onto the mount" eval "mkdir '$M/tarx' && tar xf '$E2E_TMP/small.tar' -C '$M/tarx'"
check "diff -r archive source and extraction" diff -r "$TARSRC" "$M/tarx"

# ---------------------------------------------------------------------------
section "SQLite database on the mount"
sqlite_work() {
  local i sql="CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);"
  for ((i = 0; i < 20; i++)); do
    sql+="BEGIN; INSERT INTO t(v) SELECT hex(randomblob(100)) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<200) SELECT x FROM c); COMMIT;"
  done
  sql+="DELETE FROM t WHERE id % 3 = 0; VACUUM;"
  sqlite3 "$M/db.sqlite" "$sql"
}
E2E_TIMEOUT=300 check "create, fill (20 transactions), delete, vacuum" sqlite_work
check_eq "PRAGMA integrity_check" ok sqlite3 "$M/db.sqlite" "PRAGMA integrity_check"
check_eq "row count" 2667 sqlite3 "$M/db.sqlite" "SELECT count(*) FROM t"

# ---------------------------------------------------------------------------
section "git clone onto the mount"
REPO=$E2E_TMP/repo
make_repo() {
  git init -q "$REPO" && cp -a "$SRC/fs" "$REPO/" && git -C "$REPO" add -A &&
    git -C "$REPO" -c user.name=t -c user.email=t@e commit -qm one &&
    echo more >>"$REPO/fs/daemon/main.cc" && git -C "$REPO" -c user.name=t -c user.email=t@e commit -qam two
}
run "a local repository" make_repo
E2E_TIMEOUT=300 check "git clone onto the mount" git clone -q "file://$REPO" "$M/clone"
E2E_TIMEOUT=300 check "git fsck --full" git -C "$M/clone" fsck --full --no-progress
check_eq "a clean work tree" "" git -C "$M/clone" status --porcelain

e2e_remount fresh
check_eq "PRAGMA integrity_check after a remount with an empty cache" ok sqlite3 "$M/db.sqlite" "PRAGMA integrity_check"
E2E_TIMEOUT=300 check "git fsck after a remount with an empty cache" git -C "$M/clone" fsck --full --no-progress

# ---------------------------------------------------------------------------
section "two mounts write one file: one committed version, one conflict copy"
M2=$E2E_TMP/mnt2
saved_cache=$E2E_CACHE
e2e_new_cache
e2e_mount "$M2"
E2E_CACHE=$saved_cache
check "a file both mounts see" eval "echo base >'$M/shared.txt' && sleep 1.5 && [[ \$(cat '$M2/shared.txt') == base ]]"
two_writers() {
  "$PY" - "$M/shared.txt" "$M2/shared.txt" <<'EOF'
import errno, os, sys
one = os.open(sys.argv[1], os.O_RDWR | os.O_TRUNC)
two = os.open(sys.argv[2], os.O_RDWR | os.O_TRUNC)
os.write(one, b"written through mount one\n")
os.write(two, b"written through mount two\n")
os.fsync(two)  # commits first (with commit=async only fsync reports a conflict)
try:
    os.fsync(one)
    sys.exit("syncing the second writer succeeded; expected EIO")
except OSError as e:
    if e.errno != errno.EIO:
        raise
os.close(two)
os.close(one)
print("EIO")
EOF
}
check_eq "the later fsync reports EIO" EIO two_writers
check_eq "the committed version is the first committer's" "written through mount two" cat "$M2/shared.txt"
check_eq "the blob holds it" "written through mount two" "$E2E_INSPECT" cat "$E2E_CONTAINER" shared.txt
conflict_copy() { ls "$M" | grep -E '^shared\.txt\.conflict-.+-[0-9]{8}T[0-9]{6}Z$'; }
check_eq "one conflict copy" 1 eval "conflict_copy | wc -l"
check_eq "it holds the other writer's data" "written through mount one" eval "cat \"$M/\$(conflict_copy)\""
check_eq "the other mount sees the copy too" "written through mount one" eval "sleep 1.5; cat \"$M2/\$(conflict_copy)\""
e2e_unmount "$M2"

# ---------------------------------------------------------------------------
section "kill -9 of the daemon"
head -c $((6 * 1024 * 1024 + 99)) /dev/urandom >"$L/synced"
head -c $((5 * 1024 * 1024 + 7)) /dev/urandom >"$L/unsynced"
cp "$L/synced" "$L/patched"
check "a committed file to patch later" cp "$L/patched" "$M/patched"
# Writes, fsyncs or not, then waits (the file stays open) to be killed.
# exec: the background pid is Python itself, so kill -KILL ends it (a sleeping
# child left behind holds ctest's output pipe open for ten minutes).
writer() {
  exec "$PY" - "$@" <<'EOF'
import os, sys, time
src, dst, mode, flag = sys.argv[1:5]
data = open(src, "rb").read()
if mode == "patch":
    fd = os.open(dst, os.O_RDWR)
    os.pwrite(fd, data[4096:8192], 5 * 1024 * 1024 + 11)  # a partial block of a committed file
else:
    fd = os.open(dst, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, data)
if mode == "fsync":
    os.fsync(fd)
open(flag, "w").close()
time.sleep(600)
EOF
}
"$PY" -c 'import sys; d=open(sys.argv[1],"rb").read(); b=bytearray(d); b[5*1024*1024+11:5*1024*1024+11+4096]=d[4096:8192]; open(sys.argv[1],"wb").write(b)' "$L/patched"
writer "$L/synced" "$M/synced" fsync "$E2E_TMP/flag.synced" &
w1=$!
writer "$L/unsynced" "$M/unsynced" none "$E2E_TMP/flag.unsynced" &
w2=$!
writer "$L/synced" "$M/patched" patch "$E2E_TMP/flag.patched" &
w3=$!
check "the writers wrote" eval "for i in \$(seq 300); do [[ -e '$E2E_TMP/flag.synced' && -e '$E2E_TMP/flag.unsynced' && -e '$E2E_TMP/flag.patched' ]] && exit 0; sleep 0.1; done; exit 1"
e2e_kill9
kill -KILL $w1 $w2 $w3 2>/dev/null
wait $w1 $w2 $w3 2>/dev/null
check "fsynced data is in the blob (storage client, before any remount)" blob_is synced "$L/synced"
e2e_mount
check "the replay is logged" grep -q "dirty journal: committed" "${E2E_LOG[$M]}"
check "fsynced data survived" cmp "$L/synced" "$M/synced"
check "unsynced data was replayed from the journal" cmp "$L/unsynced" "$M/unsynced"
check "an unsynced partial overwrite was replayed" cmp "$L/patched" "$M/patched"
check "the replay reached the blobs" eval "blob_is unsynced '$L/unsynced' && blob_is patched '$L/patched'"
e2e_remount keep
check "nothing replays twice" eval "! grep -q 'dirty journal' '${E2E_LOG[$M]}'"
e2e_remount fresh
check "after an empty-cache remount too" eval "cmp '$L/unsynced' '$M/unsynced' && cmp '$L/patched' '$M/patched' && cmp '$L/synced' '$M/synced'"

# ---------------------------------------------------------------------------
# Issue 12, defect 12: a full cache disk gave EIO for write, fsync and close,
# and the new file vanished. It is ENOSPC, and what was written before stays.
section "the cache's disk is full: ENOSPC, nothing written before is lost"
e2e_unmount
e2e_new_cache
mkdir -p "$E2E_CACHE"
if mount -t tmpfs -o size=32m stampfs-e2e-full "$E2E_CACHE" 2>/dev/null; then
  e2e_mount
  head -c $((64 * 1024 * 1024)) /dev/urandom >"$L/full.src"
  full_disk() {
    local out rc=0
    out=$(dd if="$L/full.src" of="$M/full" bs=1M 2>&1) || rc=$?
    ((rc != 0)) || { echo "dd wrote 64 MiB into a 32 MiB cache disk"; return 1; }
    grep -q "No space left on device" <<<"$out" || { echo "dd: $out"; return 1; }
    local bytes
    bytes=$(sed -n 's/^\([0-9]*\) bytes.*/\1/p' <<<"$out" | tail -1)
    echo "dd stopped after $bytes bytes"
    ((bytes > 0)) || return 1
    [[ -e $M/full ]] || { echo "the file is gone from its directory"; return 1; }
    head -c "$bytes" "$L/full.src" >"$L/full.expected"
    cmp -n "$bytes" "$L/full.expected" "$M/full" || return 1
    rm -f "$M/full" && ! ls "$M" | grep -qx full
  }
  E2E_TIMEOUT=300 check "dd into a full cache disk fails with ENOSPC, keeps what it wrote, and rm works" full_disk
  e2e_unmount
  umount "$E2E_CACHE" 2>/dev/null || umount -l "$E2E_CACHE"
  rm -f "$L/full.expected" "$L/full.src"
else
  echo "  SKIP  cannot mount a tmpfs for the cache (not root?)"
fi

e2e_daemon_check
e2e_finish
