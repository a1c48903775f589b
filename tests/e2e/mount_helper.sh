#!/usr/bin/env bash
# e2e: stampfs through mount(8), /etc/fstab-style tables and systemd units.
#
#   bash tests/e2e/mount_helper.sh BUILD_DIR     (as root; Azurite running)
#
# For the run, /sbin/mount.stampfs is a symlink to mount_helpers/mount.stampfs
# (whatever was there is put back at exit) and STAMPFS_BIN names
# BUILD_DIR/stampfs. Checks:
#   - the helper finds the daemon by its documented rule and turns mount(8)'s
#     arguments into `stampfs mount`'s (with a stand-in daemon);
#   - mount -t stampfs: the mount is fuse.stampfs, a file written reads back,
#     umount unmounts and the daemon exits; mount -f mounts nothing;
#   - a fstab-style table: mount -a -T FILE, mount -T FILE DIR (the file from
#     the first mount is there), -o ro on top of the table's options;
#   - a bad option, a missing connection string file and a refused secret
#     option make mount fail, mount nothing, and never echo the secret;
#   - systemd-analyze verify passes on systemd/*.service and *.mount;
#   - stampfs@.service's Exec* lines, expanded as systemd would from an
#     example config and run under the unit's NoNewPrivileges= and
#     CapabilityBoundingSet= (systemd itself cannot run here): ExecStart
#     mounts, ExecStop unmounts and the daemon exits 0; after a SIGKILL,
#     ExecStopPost clears the dead mount and ExecStart mounts again.
# Uses tests/e2e/lib.bash (checks, a unique container, the temp dir, the
# summary). Not concurrent-safe with another run of itself (one
# /sbin/mount.stampfs); /usr/local/bin/stampfs is a symlink to the build's
# during the run when it did not exist.
# shellcheck source-path=SCRIPTDIR
# SC2317: functions run through check; SC2016: the stand-in daemon's script
# is single-quoted.
# shellcheck disable=SC2317,SC2016
source "$(dirname "$0")/lib.bash" "$@"

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HELPER=$ROOT/mount_helpers/mount.stampfs
SBIN_HELPER=/sbin/mount.stampfs
UNIT_BIN=/usr/local/bin/stampfs # the ExecStart= path in systemd/stampfs@.service
C=$E2E_CONTAINER
export STAMPFS_BIN=$E2E_STAMPFS

if [[ $(id -u) != 0 ]]; then
  e2e_fatal "running as root" "mount(8) helpers and /sbin need root"
fi

# ---------------------------------------------------------------- setup and cleanup

HELPER_MOUNTS=()   # mountpoints this script may leave mounted
SAVED_HELPER=""
MADE_UNIT_BIN=false
SAVED_UNIT_BIN=""

# The pids of stampfs daemons serving DIR (their command line ends with it).
daemon_pids() {
  pgrep -f -- "stampfs mount .* $1\$"
}

# Unmounts DIR if mounted and waits up to 30s for its daemons to exit.
unmount_and_wait() {
  local dir=$1 pids
  pids=$(daemon_pids "$dir")
  if findmnt -rn --mountpoint "$dir" >/dev/null; then
    timeout 30 umount "$dir" || return 1
  fi
  for _ in $(seq 300); do
    pids=$(for p in $pids; do kill -0 "$p" 2>/dev/null && echo "$p"; done)
    [[ -z $pids ]] && return 0
    sleep 0.1
  done
  echo "stampfs daemon(s) $pids still running 30s after unmounting $dir" >&2
  return 1
}

helper_cleanup() {
  local dir
  for dir in "${HELPER_MOUNTS[@]}"; do
    if ! unmount_and_wait "$dir" 2>/dev/null; then
      # shellcheck disable=SC2046
      kill -KILL $(daemon_pids "$dir") 2>/dev/null
      timeout 10 umount -l "$dir" 2>/dev/null
    fi
  done
  if [[ -n ${UNIT_PID:-} ]]; then kill -KILL "$UNIT_PID" 2>/dev/null; fi
  if [[ -L $SBIN_HELPER && $(readlink "$SBIN_HELPER") == "$HELPER" ]]; then rm -f "$SBIN_HELPER"; fi
  if [[ -n $SAVED_HELPER ]]; then mv -f "$SAVED_HELPER" "$SBIN_HELPER"; fi
  if $MADE_UNIT_BIN && [[ -L $UNIT_BIN ]]; then rm -f "$UNIT_BIN"; fi
  if [[ -n $SAVED_UNIT_BIN ]]; then mv -f "$SAVED_UNIT_BIN" "$UNIT_BIN"; fi
}

# Runs helper_cleanup, then lib.bash's exit handler with the exit status kept;
# only in this shell: a subshell that inherited the trap (once seen: the
# watchdog of a check, killed early) must not unmount or delete anything.
MAIN_PID=$BASHPID
_lib_exit_trap=$(trap -p EXIT | sed -e "s/^trap -- '//" -e "s/' EXIT\$//")
# shellcheck disable=SC2154
trap '_rc=$?; if [[ $BASHPID == "$MAIN_PID" ]]; then helper_cleanup; (exit $_rc); eval "$_lib_exit_trap"; fi' EXIT

if [[ -e $SBIN_HELPER || -L $SBIN_HELPER ]]; then
  SAVED_HELPER=$E2E_TMP/mount.stampfs.saved
  mv "$SBIN_HELPER" "$SAVED_HELPER" || e2e_fatal "set aside the existing $SBIN_HELPER"
fi
ln -s "$HELPER" "$SBIN_HELPER" || e2e_fatal "install $SBIN_HELPER"

printf 'UseDevelopmentStorage=true\n' >"$E2E_TMP/connection"
chmod 600 "$E2E_TMP/connection"
if [[ -n ${AZURE_STORAGE_CONNECTION_STRING:-} ]]; then
  printf '%s\n' "$AZURE_STORAGE_CONNECTION_STRING" >"$E2E_TMP/connection"
fi

is_mounted() { findmnt -rn --mountpoint "$1" >/dev/null; }
not_mounted() { ! is_mounted "$1"; }

# ---------------------------------------------------------------- the helper alone

section "mount.stampfs: finding the daemon, translating arguments"
L=$E2E_TMP/layout
mkdir -p "$L/mount_helpers" "$L/build" "$L/sbin" "$L/beside"
cp "$HELPER" "$L/mount_helpers/mount.stampfs"
printf '#!/bin/sh\necho "$0 $*"\n' >"$L/build/stampfs"
chmod +x "$L/build/stampfs"
ln -s "$L/mount_helpers/mount.stampfs" "$L/sbin/mount.stampfs"
check_eq "through a symlink, ../build/stampfs from the real path; -sfnv, -t, user= dropped" \
  "$L/build/stampfs mount -o ro,cache_dir=/c demo /mnt/x" \
  env -u STAMPFS_BIN "$L/sbin/mount.stampfs" demo /mnt/x -sv -o ro,user=alice,,cache_dir=/c -t stampfs
check_eq "\$STAMPFS_BIN comes first" "$L/build/stampfs mount demo /mnt/x" \
  env STAMPFS_BIN="$L/build/stampfs" "$HELPER" demo /mnt/x
cp "$L/build/stampfs" "$L/mount_helpers/stampfs"
check_eq "stampfs beside the helper comes before ../build" "$L/mount_helpers/stampfs mount demo /mnt/x" \
  env -u STAMPFS_BIN "$L/sbin/mount.stampfs" demo /mnt/x
check_eq "-f (fake) runs nothing" "" env STAMPFS_BIN="$L/build/stampfs" "$HELPER" demo /mnt/x -f
check_fails "an unknown flag is refused" "unknown flag --bogus" "$HELPER" demo /mnt/x --bogus
check_fails "a missing DIR is a usage error" "usage" "$HELPER" demo

# ---------------------------------------------------------------- mount -t stampfs

section "mount -t stampfs / umount"
D=$E2E_TMP/direct
mkdir -p "$D"
HELPER_MOUNTS+=("$D")
run "mount -t stampfs $C $D" mount -t stampfs "$C" "$D" -o "cache_dir=$E2E_TMP/cache.direct,attr_timeout=1"
check_eq "findmnt shows fuse.stampfs" "fuse.stampfs stampfs:$C" findmnt -rn -o FSTYPE,SOURCE --mountpoint "$D"
check "write a file" eval "printf 'hello through mount(8)\n' >'$D/greeting.txt'"
check_eq "read it back" "hello through mount(8)" cat "$D/greeting.txt"
check "umount $D (the daemon exits)" unmount_and_wait "$D"
check "nothing mounted at $D after umount" not_mounted "$D"
check "mount -f (fake) succeeds" mount -f -t stampfs "$C" "$D" -o "cache_dir=$E2E_TMP/cache.fake"
check "nothing mounted after mount -f" not_mounted "$D"

# ---------------------------------------------------------------- fstab

section "fstab: mount -a -T, mount -T DIR"
F=$E2E_TMP/fstab
T=$E2E_TMP/fstab-mnt
mkdir -p "$T"
HELPER_MOUNTS+=("$T")
cat >"$F" <<EOF
# a test fstab: the line an /etc/fstab would hold
$C $T stampfs _netdev,nofail,attr_timeout=1,cache_dir=$E2E_TMP/cache.fstab,connection_string_file=$E2E_TMP/connection 0 0
EOF
check "mount -a -T FILE" mount -a -T "$F"
check_eq "mounted as fuse.stampfs" "fuse.stampfs stampfs:$C" findmnt -rn -o FSTYPE,SOURCE --mountpoint "$T"
check_eq "the file written through the first mount is there" "hello through mount(8)" cat "$T/greeting.txt"
check "umount (fstab mount)" unmount_and_wait "$T"
check "mount -T FILE DIR" mount -T "$F" "$T"
check "write through the fstab mount" eval "echo second >'$T/second.txt'"
check "umount" unmount_and_wait "$T"
check "mount -T FILE -o ro DIR" mount -T "$F" -o ro "$T"
check_eq "ro added to the table's options: mounted read-only" "ro" \
  eval "findmnt -rn -o OPTIONS --mountpoint '$T' | tr , '\n' | grep -x ro"
check_fails "writing to the ro mount fails" "Read-only file system" eval "echo x >'$T/third.txt'"
check_eq "files of both earlier mounts are listed" "$(printf 'greeting.txt\nsecond.txt')" ls "$T"
check "umount (ro)" unmount_and_wait "$T"
check "nothing mounted at $T" not_mounted "$T"

# ---------------------------------------------------------------- failures

section "failures: non-zero exit, nothing mounted, no secret echoed"
check_fails "a bad option fails" "unknown option bogus_option" \
  mount -t stampfs "$C" "$D" -o "cache_dir=$E2E_TMP/cache.bad,bogus_option=1"
check "nothing mounted after the bad option" not_mounted "$D"
check_fails "a missing connection string file fails" "cannot read connection string file" \
  mount -t stampfs "$C" "$D" -o "cache_dir=$E2E_TMP/cache.bad,connection_string_file=$E2E_TMP/absent"
check "nothing mounted after the missing file" not_mounted "$D"
secret=e2eSecret$RANDOM$RANDOM
refuses_secret_quietly() {
  local out
  out=$(mount -t stampfs "$C" "$D" -o "cache_dir=$E2E_TMP/cache.bad,connection_string=AccountKey=$secret" 2>&1) &&
    { echo "mount succeeded"; return 1; }
  echo "$out"
  grep -q "connection_string is refused" <<<"$out" || { echo "not refused as a secret"; return 1; }
  if grep -q "$secret" <<<"$out"; then echo "the secret was echoed"; return 1; fi
}
check "a secret on the command line is refused and not echoed" refuses_secret_quietly
check "nothing mounted after the refused secret" not_mounted "$D"

# ---------------------------------------------------------------- systemd units

section "systemd-analyze verify"
units=("$ROOT"/systemd/*.service "$ROOT"/systemd/*.mount)
if ! command -v systemd-analyze >/dev/null; then
  e2e_fatal "systemd-analyze" "not installed (scripts/setup installs the systemd package)"
fi
printf '[Service]\nExecStart=/bin/true\n' >"$E2E_TMP/e2e-probe.service"
if ! timeout 60 systemd-analyze verify "$E2E_TMP/e2e-probe.service" >"$E2E_TMP/probe.out" 2>&1; then
  echo "  SKIP  systemd-analyze verify cannot run here (a trivial unit fails too):"
  sed 's/^/        | /' "$E2E_TMP/probe.out"
else
  # verify requires ExecStart's binary to exist: lend it the build's for the run
  # (a dangling link, left by a removed build, is set aside and restored).
  if [[ -L $UNIT_BIN && ! -e $UNIT_BIN ]]; then
    SAVED_UNIT_BIN=$E2E_TMP/stampfs.saved
    mv "$UNIT_BIN" "$SAVED_UNIT_BIN" || e2e_fatal "set aside the dangling $UNIT_BIN"
  fi
  if [[ ! -e $UNIT_BIN && ! -L $UNIT_BIN ]]; then
    mkdir -p "$(dirname "$UNIT_BIN")" && ln -s "$E2E_STAMPFS" "$UNIT_BIN" && MADE_UNIT_BIN=true
  fi
  verify_clean() { # verify must pass and print nothing (warnings count)
    local out
    out=$(systemd-analyze verify "$1" 2>&1)
    local rc=$?
    echo "$out"
    [[ $rc == 0 && -z $out ]]
  }
  for unit in "${units[@]}"; do
    E2E_TIMEOUT=60 check "systemd-analyze verify $(basename "$unit")" verify_clean "$unit"
  done
fi

# ---------------------------------------------------------------- stampfs@.service's commands

section "stampfs@.service: ExecStart/ExecStop as systemd expands them"
S=$E2E_TMP/unit-mnt
cat >"$E2E_TMP/unit.conf" <<EOF
MOUNTPOINT=$S
CONNECTION_STRING_FILE=$E2E_TMP/connection
OPTIONS=attr_timeout=1
EOF
# The lines of KEY= in the unit, words split on blanks, then in each word %i,
# %C (here a temp dir, not /var/cache) and ${VAR} from the config (one word
# each, as systemd does for ${VAR}); the /usr/local/bin/stampfs is the build's.
UNIT_PID=""      # the daemon ExecStart runs, while it runs
UNIT_LOG=""
UNIT_STARTS=0
unit_words() {
  local key=$1 line w var
  line=$(sed -n "s/^$key=//p" "$ROOT/systemd/stampfs@.service")
  [[ -n $line ]] || return 1
  line=${line#-}
  read -ra raw <<<"$line"
  WORDS=()
  for w in "${raw[@]}"; do
    w=${w//%i/$C}
    w=${w//%C/$E2E_TMP/unit-cache}
    for var in MOUNTPOINT CONNECTION_STRING_FILE OPTIONS; do
      w=${w//"\${$var}"/$(sed -n "s/^$var=//p" "$E2E_TMP/unit.conf")}
    done
    [[ $w == "$UNIT_BIN" ]] && w=$E2E_STAMPFS
    WORDS+=("$w")
  done
}
# The unit's hardening that applies to a plain process: no_new_privs and a
# capability bounding set of CAP_SYS_ADMIN alone.
# (An array, not a function: a function run with & is a subshell whose pid is
# not the daemon's.)
HARDENED=(setpriv --no-new-privs --bounding-set "-all,+sys_admin" --)

# Runs ExecStart hardened in the background, as the unit's main process, and
# waits up to 60s for the mount (or the daemon's exit).
start_unit() {
  unit_words ExecStart || return 1
  UNIT_STARTS=$((UNIT_STARTS + 1))
  UNIT_LOG=$E2E_TMP/unit.$UNIT_STARTS.log
  "${HARDENED[@]}" "${WORDS[@]}" >"$UNIT_LOG" 2>&1 </dev/null &
  UNIT_PID=$!
  for _ in $(seq 600); do
    is_mounted "$S" && return 0
    kill -0 "$UNIT_PID" 2>/dev/null || return 1
    sleep 0.1
  done
}

# Waits up to 30s for the unit's main process to end; sets MAIN_STATUS.
wait_main() {
  local pid=$UNIT_PID
  for _ in $(seq 300); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    MAIN_STATUS="still running"
    return
  fi
  wait "$pid" 2>/dev/null  # no "Killed" job notice after the SIGKILL check
  MAIN_STATUS=$?
  UNIT_PID=""
}

unit_words ExecStart || e2e_fatal "stampfs@.service has an ExecStart="
echo "  (ExecStart: ${WORDS[*]})"
unit_words ExecStartPre && check "ExecStartPre: ${WORDS[*]}" "${WORDS[@]}"
HELPER_MOUNTS+=("$S")
start_unit
if ! check_eq "ExecStart mounts (foreground daemon, hardened)" "fuse.stampfs" \
  findmnt -rn -o FSTYPE --mountpoint "$S"; then
  sed 's/^/        | /' "$UNIT_LOG"
else
  check_eq "the container's files are there" "hello through mount(8)" cat "$S/greeting.txt"
  check "the cache is %C/stampfs/%i" test -f "$E2E_TMP/unit-cache/stampfs/$C/meta.db"
  unit_words ExecStop
  check "ExecStop: ${WORDS[*]}" "${HARDENED[@]}" "${WORDS[@]}"
  wait_main
  check "the daemon exits 0 after ExecStop (Restart=on-failure does not fire)" test "$MAIN_STATUS" = 0

  # A crash: the dead mount stays until ExecStopPost detaches it; then the
  # restart mounts again.
  start_unit
  check "mounted again" is_mounted "$S"
  kill -KILL "$UNIT_PID"
  wait_main
  check_fails "after SIGKILL the mount is dead" "not connected" ls "$S"
  unit_words ExecStopPost
  check "ExecStopPost: ${WORDS[*]}" "${HARDENED[@]}" "${WORDS[@]}"
  check "nothing mounted after ExecStopPost" not_mounted "$S"
  unit_words ExecStartPre && check "ExecStartPre again" "${WORDS[@]}"
  start_unit
  check_eq "the restart mounts and serves the container" "hello through mount(8)" cat "$S/greeting.txt"
  unit_words ExecStop
  check "ExecStop" "${HARDENED[@]}" "${WORDS[@]}"
  wait_main
  check "the daemon exits 0" test "$MAIN_STATUS" = 0
  unit_words ExecStopPost
  check_fails "ExecStopPost with nothing mounted fails (its - prefix ignores that)" "." \
    "${HARDENED[@]}" "${WORDS[@]}"
fi

e2e_daemon_check
e2e_finish
