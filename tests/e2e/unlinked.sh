# e2e: files unlinked while open, a new file of the same name, and renames
# over a name being opened (issue 14).
#
#   bash tests/e2e/unlinked.sh BUILD_DIR
#
# Checks, on a real mount (as root), with -o commit=async and commit=close:
#   - a build tool's temporary file: open, unlink, read, fstat (st_nlink 0),
#     write, ftruncate, fsync, close through the descriptor; its blob is gone
#     after the close and nothing written after the unlink reached the
#     container; fgetxattr, fsetxattr, flistxattr and fremovexattr through
#     it work (in memory);
#   - the same, then the name created again while the old file is open: both
#     closes succeed, the new file holds its data, no conflict copy;
#   - the same for a hard-linked file opened through one of its three names,
#     every name unlinked (st_nlink 2, 1, 0 through the descriptor): its blob
#     and inode record are gone after the close, fsck is clean;
#   - SQLite in WAL mode with a concurrent reader process (python3's sqlite3)
#     that holds descriptors of the -wal SQLite unlinks and creates again,
#     3 runs: no SQLite error, no conflict copy, every row there;
#   - a rename over `target` (os.replace of an fsynced file) 200 times while
#     another process opens `target` in a loop: no open fails.
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2317
source "$(dirname "$0")/lib.bash" "$@"

POSIX=$E2E_BUILD_DIR/tests/stampfs_posix
if [[ ! -x $POSIX ]]; then
  echo "e2e: $POSIX not found (build first: scripts/build)" >&2
  exit 2
fi
command -v python3 >/dev/null || { echo "e2e: python3 is missing" >&2; exit 77; }

REF=$E2E_TMP/ref
head -c 3000000 /dev/urandom >"$REF"

blob_count() {
  "$E2E_INSPECT" blobs "$E2E_CONTAINER" 2>/dev/null | grep -Ec "^$1(\s|$)" || true
}

conflict_copies() {
  find "$M" -name '*.conflict-*' | wc -l
}

# Writer and reader processes of one database in WAL mode, each opening and
# closing its connection around every transaction: the last close of a
# connection unlinks -shm (while it still holds it open) and -wal, the next
# open creates both again (strace of python3's sqlite3). The reader is forked
# while the writer's first connection is open, as by any program that forks
# a helper while holding a database, so it keeps descriptors of that -wal and
# -shm: every later unlink of them hits a file open on the mount, and the
# next create of the name follows while it is still open (the issue's
# report: "unable to open database file" / "disk I/O error" and a
# db-wal.conflict-... copy; this fails so on the code before the
# open-unlinked work, and passes with it).
sqlite_wal_run() {
  python3 - "$1" <<'EOF'
import multiprocessing, sqlite3, sys, time
db = sys.argv[1]

def connect():
    c = sqlite3.connect(db, timeout=30)
    c.execute("PRAGMA journal_mode=WAL")
    return c

def writer(n):
    for i in range(n):
        c = connect()
        with c:
            c.execute("INSERT INTO t(v) VALUES (?)", (i,))
        c.close()

def reader(stop):
    while not stop.is_set():
        c = connect()
        c.execute("SELECT count(*) FROM t").fetchone()
        c.close()

c = connect()
c.execute("CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, v)")
c.commit()
fork = multiprocessing.get_context("fork")  # the descriptors are inherited
stop = fork.Event()
r = fork.Process(target=reader, args=(stop,))
r.start()  # forked: it inherits this connection's -wal and -shm descriptors
c.close()
try:
    writer(60)
finally:
    stop.set()
    r.join()
if r.exitcode != 0:
    sys.exit("the reader failed")
c = connect()
print(c.execute("SELECT count(*) FROM t").fetchone()[0])
c.close()
EOF
}

# fsetxattr, fgetxattr, flistxattr, fremovexattr and fstat through the
# descriptor of a file unlinked while open; prints what they saw.
unlinked_xattrs() {
  python3 - "$1" <<'EOF'
import os, sys
path = sys.argv[1]
with open(path, "w") as f:
    f.write("data")
os.setxattr(path, "user.before", b"kept")
fd = os.open(path, os.O_RDWR)
os.unlink(path)
seen = [os.getxattr(fd, "user.before").decode()]
os.setxattr(fd, "user.after", b"local")
seen.append(os.getxattr(fd, "user.after").decode())
os.removexattr(fd, "user.before")
seen.append(",".join(sorted(n for n in os.listxattr(fd) if n.startswith("user."))))
seen.append(str(os.fstat(fd).st_nlink))
os.close(fd)
print(" ".join(seen))
EOF
}

# os.replace of an fsynced temporary file over `target` 200 times while a
# reader opens `target` in a loop; prints the number of failed opens.
rename_over_race() {
  python3 - "$1" <<'EOF'
import multiprocessing, os, sys
d = sys.argv[1]
target = os.path.join(d, "target")

def replace_loop():
    for i in range(200):
        tmp = os.path.join(d, "tmp.%d" % i)
        with open(tmp, "w") as f:
            f.write("version %d\n" % i)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)

with open(target, "w") as f:
    f.write("version start\n")
w = multiprocessing.Process(target=replace_loop)
w.start()
opens = failures = 0
errors = {}
while w.is_alive():
    opens += 1
    try:
        with open(target) as f:
            f.read()
    except OSError as e:
        failures += 1
        errors[e.strerror] = errors.get(e.strerror, 0) + 1
w.join()
if w.exitcode != 0:
    sys.exit("the replacing process failed")
print(failures if failures == 0 else "%d of %d opens failed: %s" % (failures, opens, errors))
EOF
}

for mode in async close; do
  E2E_MOUNT_OPTS=commit=$mode
  e2e_new_cache
  e2e_mount

  section "commit=$mode: a file unlinked while open"
  run "a committed file" eval 'cp "$REF" "$M/$mode-1" && cp "$REF" "$M/$mode-2" && sync "$M/$mode-1" "$M/$mode-2"'
  check "open, unlink, pread, fstat st_nlink 0, pwrite, ftruncate, fsync, close" \
    "$POSIX" unlinked "$M/$mode-1" "$REF"
  check_eq "its blob is gone after the close" "0" blob_count "$mode-1"
  check "... unlinked, then the name created again while it is open: every call succeeds" \
    "$POSIX" unlinked "$M/$mode-2" "$REF" recreate
  check_eq "the new file holds its data" "new file" cat "$M/$mode-2"
  e2e_sync
  e2e_remount fresh
  check_eq "... also in the container after a cold remount" "new file" cat "$M/$mode-2"
  check_eq "no conflict copy" "0" conflict_copies
  check_eq "xattrs through the descriptor of an unlinked file" "kept local user.after 0" \
    unlinked_xattrs "$M/$mode-xattrs"

  section "commit=$mode: a hard-linked file unlinked while open"
  run "a committed file with three names" eval 'cp "$REF" "$M/$mode-l1" && sync "$M/$mode-l1" &&
    ln "$M/$mode-l1" "$M/$mode-l2" && ln "$M/$mode-l1" "$M/$mode-l3"'
  check "open through one name, unlink each (st_nlink 2, 1, 0), pread, pwrite, ftruncate, fsync, close" \
    "$POSIX" unlinked-links "$M/$mode-l2" "$REF" "$M/$mode-l1" "$M/$mode-l3"
  check_eq "its blob is gone after the close" "0" eval 'blob_count "$mode-l[123]"'
  check_eq "no conflict copy" "0" conflict_copies
  e2e_sync
  check "fsck is clean (no inode record left)" "$E2E_STAMPFS" fsck "$E2E_CONTAINER"

  section "commit=$mode: SQLite in WAL mode with a concurrent reader"
  for run_no in 1 2 3; do
    check_eq "run $run_no: every row is there" "60" sqlite_wal_run "$M/$mode-db$run_no"
  done
  check_eq "no conflict copy" "0" conflict_copies

  section "commit=$mode: a rename over a name being opened"
  run "a directory" mkdir "$M/race-$mode"
  check_eq "200 os.replace over target while another process opens it: no open fails" "0" \
    timeout 120 bash -c "$(declare -f rename_over_race); rename_over_race $M/race-$mode"
  check_eq "target holds the last version" "version 199" cat "$M/race-$mode/target"
  check_eq "no conflict copy" "0" conflict_copies

  e2e_unmount
done

e2e_finish
