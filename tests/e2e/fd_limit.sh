#!/usr/bin/env bash
# e2e: a large untar into a daemon with a low descriptor limit (issue 27,
# defect 3). Every closed file waits in the commit queue with its cache file
# open, so the queue's bound (half the descriptor limit) must hold tar back
# at close(2) and create, never fail a create. The daemon runs under
# `prlimit --nofile=512:512` (a bound of 256 queued files); tar extracts
# FD_LIMIT_FILES small files (default 5,000: about 2.5 minutes; 20,000 with
# a limit of 1,024 took 9.5 minutes and passed, Dec 6) in directories of
# 1,000 with the defaults (commit=async). Checks: tar exits 0 with no error, the daemon
# never held more than the limit (no "Too many open files" in its log), and
# a mount with a new cache dir shows every file with its content (diff -r),
# fsck exits 0. (Before the fix the wait was at the release, after close(2)
# returned: tar was never slowed, closed files piled up, each holding a
# descriptor, and creates failed with EIO, leaving their names listed.)
#
#   bash tests/e2e/fd_limit.sh BUILD_DIR
#   FD_LIMIT_FILES=N (default 5000), FD_LIMIT_NOFILE=N (default 512)
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2317
source "$(dirname "$0")/lib.bash" "$@"
command -v prlimit >/dev/null || { echo "fd_limit: prlimit (util-linux) is missing: skipped" >&2; exit 77; }
NFILES=${FD_LIMIT_FILES:-5000}
NOFILE=${FD_LIMIT_NOFILE:-512}
PER_DIR=1000

# The daemon under the limit (soft and hard, so it cannot raise it).
cat >"$E2E_TMP/stampfs-limited" <<SH
#!/bin/sh
exec prlimit --nofile=$NOFILE:$NOFILE "$E2E_STAMPFS" "\$@"
SH
chmod +x "$E2E_TMP/stampfs-limited"
REAL_STAMPFS=$E2E_STAMPFS

SRC=$E2E_TMP/src
dirs=$(((NFILES + PER_DIR - 1) / PER_DIR))
python3 - "$SRC" "$NFILES" "$PER_DIR" <<'PY'
import os, sys
root, n, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(n):
    d = os.path.join(root, "d%03d" % (i // per))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%05d" % i), "w") as f:
        f.write("file %d\n" % i + "x" * (i % 200))
PY
tar -cf "$E2E_TMP/tree.tar" -C "$SRC" .

section "untar $NFILES files in $dirs directories into a daemon limited to $NOFILE descriptors"
E2E_STAMPFS=$E2E_TMP/stampfs-limited
e2e_mount
E2E_STAMPFS=$REAL_STAMPFS
LOG=${E2E_LOG[$M]}
check "the daemon runs with the limit" \
  eval "grep -q 'Max open files *$NOFILE *$NOFILE' /proc/${E2E_PID[$M]}/limits"
t0=$SECONDS
E2E_TIMEOUT=1200 check "tar extracts every file without an error" \
  eval "tar -xf '$E2E_TMP/tree.tar' -C '$M' 2>'$E2E_TMP/tar.err'"
head -n 5 "$E2E_TMP/tar.err" | sed 's/^/  tar: /'
echo "  (tar took $((SECONDS - t0)) s; $(e2e_stat_value "$M" commits.queued) commits still queued)"
check "no 'Too many open files' in the daemon's log" eval "! grep -m3 'Too many open files' '$LOG'"
check "the writing mount lists $NFILES files" eval "((\$(find '$M' -type f | wc -l) == NFILES))"
e2e_unmount && _e2e_pass "unmount commits everything"
check "nothing was left in the cache journal alone" eval "! grep -E 'shutdown: .*not committed' '$LOG'"
e2e_new_cache
e2e_mount
E2E_TIMEOUT=900 check "a mount with a new cache dir shows the tree as written (diff -r)" \
  diff -r "$SRC" "$M"
e2e_unmount
E2E_TIMEOUT=600 check "fsck: clean" "$E2E_STAMPFS" fsck "$E2E_CONTAINER"

e2e_finish
