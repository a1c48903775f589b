#!/usr/bin/env bash
# e2e: -o commit=async (the default) on a real mount (issue 13). Checks:
#   - files closed by a shell loop are in the container within commit_delay
#     (plus the pipeline's work), each new small file costing one Put Blob
#     and a share of one entity group transaction;
#   - another mount sees a closed file after commit_delay + attr_timeout;
#   - fsync returns only when the file is in the container;
#   - kill -9 with commits queued loses nothing closed: the next mount on
#     the same cache directory commits it (modes included, and a
#     directory's chmod and utimens, which wait in the journal too);
#   - rsync's temporary names are never uploaded, and git works;
#   - stampfs stat shows the queue; unmount drains it.
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2317
source "$(dirname "$0")/lib.bash" "$@"

E2E_MOUNT_OPTS="commit=async,commit_delay=2"
M2=$E2E_TMP/mnt2

# The blob names the container holds (not what a mount shows).
blob_names() { "$E2E_INSPECT" blobs "$E2E_CONTAINER" | cut -f1 | sort; }
blob_exists() { blob_names | grep -qx -- "$1"; }
wait_for() { # wait_for SECONDS CMD...: until CMD succeeds
  local limit=$1
  shift
  local end=$((SECONDS + limit))
  until "$@"; do
    ((SECONDS < end)) || return 1
    sleep 0.2
  done
}

e2e_mount
first_cache=$E2E_CACHE

section "close is local; the pipeline commits within commit_delay"
mkdir -p "$M/loop"
t0=$SECONDS
put0=$(e2e_stat_value "$M" requests.blob.put)
batch0=$(e2e_stat_value "$M" requests.table.batch)
for i in $(seq 1 100); do printf 'file %d\n' "$i" >"$M/loop/f$i"; done
check "the loop's files are readable at once" grep -qx 'file 77' "$M/loop/f77"
check "stampfs stat shows commits queued" eval '(( $(e2e_stat_value "$M" commits.queued) > 0 ))'
# (Only when the loop took less than commit_delay: then nothing is due yet.)
check "nothing is uploaded before commit_delay" \
  eval '(( $(e2e_stat_value "$M" requests.blob.put) == put0 || SECONDS - t0 >= 2 ))'
check "all 100 are in the container within 30 s" \
  wait_for 30 eval '[[ $(blob_names | grep -c "^loop/f") == 100 ]]'
check "the queue drained" wait_for 10 eval '[[ $(e2e_stat_value "$M" commits.queued) == 0 ]]'
puts=$(($(e2e_stat_value "$M" requests.blob.put) - put0))
batches=$(($(e2e_stat_value "$M" requests.table.batch) - batch0))
echo "100 files: $puts Put Blob, $batches batches"
check "one Put Blob per file" test "$puts" -eq 100
check "entity group transactions shared (fewer than one per file)" test "$batches" -lt 100

section "another mount sees a closed file after commit_delay + attr_timeout"
E2E_MOUNT_OPTS="commit=async,commit_delay=2" e2e_new_cache
e2e_mount "$M2"
printf 'seen\n' >"$M/visible"
check "mount two sees it within commit_delay + TTL + 5 s" \
  wait_for 8 grep -qx seen "$M2/visible"

section "fsync returns when the file is committed"
python3 - "$M/synced" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
os.write(fd, b"durable\n")
os.fsync(fd)
os.close(fd)
EOF
check "the blob exists right after fsync" blob_exists synced
printf 'dir\n' >"$M/loop/dirsynced"
check "sync of the directory (fsyncdir) commits what is queued" sync "$M/loop"
check "the blob exists right after sync DIR" blob_exists loop/dirsynced

section "kill -9 with commits queued loses nothing closed"
e2e_unmount "$M2"
# A delay no load can outlast: the files are still queued at the kill.
e2e_unmount "$M"
E2E_MOUNT_OPTS="commit=async,commit_delay=60" E2E_CACHE=$first_cache
e2e_mount
for i in 1 2 3; do printf 'killed %d\n' "$i" >"$M/k$i"; done
chmod 600 "$M/k2"
mkdir -p "$M/kd" && printf 'nested\n' >"$M/kd/n"
# A directory's chmod and utimens wait in the journal too (rsync, tar).
mkdir "$M/kt"
chmod 751 "$M/kt"
touch -m -d @1500000000 "$M/kt"
check_eq "the mount shows kt's change at once" "751 1500000000" stat -c '%a %Y' "$M/kt"
check "queued before the kill" eval '(( $(e2e_stat_value "$M" commits.queued) >= 5 ))'
kt_entry() { "$E2E_INSPECT" entities "$E2E_CONTAINER" "$("$E2E_INSPECT" key /)" | grep -P '^\S+\tkt\t'; }
check "kt's change is not in the table yet" eval '! kt_entry | grep -q "mode=040751"'
e2e_kill9
check "nothing of them reached the container yet" eval '! blob_names | grep -qx k1'
E2E_CACHE=$first_cache
E2E_MOUNT_OPTS="commit=async,commit_delay=2"
e2e_mount
check "k1 back after the remount" grep -qx 'killed 1' "$M/k1"
check "kd/n back" grep -qx nested "$M/kd/n"
check_eq "k2 keeps its mode" 600 stat -c %a "$M/k2"
check "and in the container" wait_for 15 blob_exists kd/n
check "kt's mode and mtime are in the table after the remount" \
  eval 'kt_entry | grep -q "mode=040751" && kt_entry | grep -q "mtime=1500000000000000000"'
check_eq "and the mount shows them" "751 1500000000" stat -c '%a %Y' "$M/kt"

section "rsync's temporary names never reach the container"
mkdir -p "$E2E_TMP/src/sub"
for i in $(seq 1 30); do head -c 3000 /dev/urandom >"$E2E_TMP/src/sub/r$i"; done
check "rsync -a into the mount" rsync -a "$E2E_TMP/src/" "$M/rs/"
check "diff -r" diff -r "$E2E_TMP/src" "$M/rs"
check "every file committed" wait_for 30 eval '[[ $(blob_names | grep -c "^rs/sub/r") == 30 ]]'
check "no temporary name was uploaded" eval '! blob_names | grep -q "^rs/sub/\.r"'
check "git init, commit and fsck" eval 'cd "$M" && git init -q g && cd g &&
  for i in 1 2 3; do echo $i >f$i; done && git add . &&
  git -c user.email=e@x -c user.name=e commit -qm one && git fsck --full'

section "unmount drains the queue"
for i in 1 2 3 4 5; do printf 'late %d\n' "$i" >"$M/late$i"; done
e2e_unmount
check "every late file is in the container after unmount" \
  eval '[[ $(blob_names | grep -c "^late") == 5 ]]'

e2e_daemon_check
e2e_finish
