# Shared helpers for the end-to-end tests (tests/e2e/*.sh). Sourced, not run:
# the name ends in .bash so the *.sh glob that registers tests skips it.
#
#   source "$(dirname "$0")/lib.bash" "$@"     # $1 = BUILD_DIR
#
# A real stampfs mount of a container of its own (unique per run) on Azurite
# (or $AZURE_STORAGE_CONNECTION_STRING), and real tools run against it.
#
# Provides
#   E2E_CONTAINER    the container of this run (its table: DefaultTableName)
#   M                the main mountpoint ($E2E_TMP/mnt)
#   E2E_TMP          a temp dir for the run (removed at exit)
#   E2E_STAMPFS, E2E_INSPECT   the binaries under test
#   e2e_mount [MNT]             mount with the current cache dir; fatal on failure
#   e2e_unmount [MNT]           unmount and wait for the daemon to exit
#   e2e_remount fresh|keep [MNT]   unmount, then mount with a new empty
#                               cache dir (fresh) or the same one (keep)
#   e2e_new_cache               switch to a new empty cache dir for the next mount
#   e2e_sync [MNT]              commit what the mount queued (commit=async)
#   e2e_kill9 [MNT]             kill -9 of the mount's daemon, then detach it
#   e2e_stat_value MNT KEY      one counter of stampfs stat --json
#   check DESC CMD...           CMD must succeed
#   check_fails DESC REGEX CMD...   CMD must fail and its output match REGEX (grep -E)
#   check_eq DESC EXPECTED CMD...   CMD must succeed and print exactly EXPECTED
#   run DESC CMD...             a setup step: like check, but a failure is fatal
#   section NAME                prints a heading with the elapsed time
#   e2e_finish                  at the end of a script: summary and exit status
#
# A watchdog ends a script that runs over $E2E_SCRIPT_TIMEOUT seconds (default
# 840, under ctest's 900): it kills the stampfs daemons, so calls hung in the
# file system fail, and the script reports and cleans up.
#
# Every CMD runs in a subshell of the script (functions and variables work,
# `eval 'code'` too) with stdin from /dev/null and a time limit of
# $E2E_TIMEOUT seconds (default 120; set it per call: E2E_TIMEOUT=300 check ...).
# A command that outlives it is killed with its children and the check fails.
# Everything mounted is unmounted at exit, also after a failure or a signal;
# the container and table are deleted unless E2E_KEEP=1. The exit status is 1
# when any check failed, and the last line reads "N passed, M failed".
#
# Mounts run `stampfs mount -f` in the background: the test knows the daemon's
# pid (to wait for its exit, or kill it if it hangs) and keeps its log
# ($E2E_TMP/stampfs.N.log, printed at exit when a check failed).

set -u
set -o pipefail
export LC_ALL=C.UTF-8 TZ=UTC

if [[ $# -lt 1 || ! -d $1 ]]; then
  echo "usage: bash $0 BUILD_DIR" >&2
  exit 2
fi
E2E_BUILD_DIR=$(cd "$1" && pwd)
E2E_STAMPFS=$E2E_BUILD_DIR/stampfs
E2E_INSPECT=$E2E_BUILD_DIR/tests/stampfs_inspect
E2E_SCRIPT=$(basename "$0" .sh)
E2E_TIMEOUT=${E2E_TIMEOUT:-120}
E2E_ATTR_TIMEOUT=${E2E_ATTR_TIMEOUT:-1}
E2E_MOUNT_TIMEOUT=${E2E_MOUNT_TIMEOUT:-60}

for _bin in "$E2E_STAMPFS" fusermount3; do
  if ! command -v "$_bin" >/dev/null; then
    echo "e2e: $_bin not found (build first: scripts/build)" >&2
    exit 2
  fi
done
if [[ ! -w /dev/fuse ]]; then
  echo "e2e: /dev/fuse is not accessible; these tests need FUSE" >&2
  exit 2
fi

# Container names: 3-63 of [a-z0-9-], no "--", alphanumeric at both ends.
_e2e_slug=$(printf '%s' "$E2E_SCRIPT" | tr 'A-Z' 'a-z' | tr -c 'a-z0-9' '-' | tr -s '-')
_e2e_slug=${_e2e_slug#-}
_e2e_slug=${_e2e_slug%-}
_e2e_slug=${_e2e_slug:0:24}
_e2e_slug=${_e2e_slug%-}
E2E_CONTAINER="e2e-${_e2e_slug}-$(date +%s)-$$-$((RANDOM % 1000))"
E2E_TMP=$(mktemp -d "${TMPDIR:-/tmp}/stampfs-e2e-${_e2e_slug}.XXXXXX")
M=$E2E_TMP/mnt
mkdir -p "$M"

E2E_PASSED=0
E2E_FAILED=0
E2E_FAILURES=()
E2E_FINISHED=false
E2E_MOUNTS=()          # mountpoints this run mounted (and may still hold)
declare -A E2E_PID     # mountpoint -> pid of its stampfs
declare -A E2E_LOG     # mountpoint -> log file of its current stampfs
declare -A E2E_DETACHED  # mountpoint -> 1 when its stampfs runs as a daemon (no -f)
E2E_LOGS=()
E2E_CACHE=""
E2E_CACHE_COUNT=0
E2E_START=$SECONDS

echo "e2e $E2E_SCRIPT: container $E2E_CONTAINER, temp $E2E_TMP, build $E2E_BUILD_DIR"

# ---------------------------------------------------------------- reporting

_e2e_pass() {
  E2E_PASSED=$((E2E_PASSED + 1))
  echo "  ok    $1"
}

# _e2e_fail DESC WHY [OUTFILE...]
_e2e_fail() {
  local desc=$1 why=$2 f
  shift 2
  E2E_FAILED=$((E2E_FAILED + 1))
  E2E_FAILURES+=("$desc")
  echo "  FAIL  $desc"
  echo "        $why"
  for f in "$@"; do
    if [[ -s $f ]]; then
      tail -n 25 "$f" | sed 's/^/        | /'
    fi
  done
  local mnt
  for mnt in "${!E2E_PID[@]}"; do
    if ! kill -0 "${E2E_PID[$mnt]}" 2>/dev/null; then
      echo "        (stampfs for $mnt, pid ${E2E_PID[$mnt]}, is no longer running; log ${E2E_LOG[$mnt]})"
    fi
  done
}

# Prints a failure and ends the script (the EXIT trap cleans up).
e2e_fatal() {
  _e2e_fail "$1" "${2:-fatal: the rest of this script cannot run}"
  exit 1
}

section() {
  echo "== $1 (t=$((SECONDS - E2E_START))s)"
}

# ---------------------------------------------------------------- running commands with a time limit

_e2e_descendants() {
  local c
  for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
    echo "$c"
    _e2e_descendants "$c"
  done
}

_e2e_kill_tree() {
  local pids
  pids="$(_e2e_descendants "$1") $1"
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null
}

# _e2e_run OUT ERR CMD...: runs CMD (stdout to OUT, stderr to ERR) with the
# time limit; returns its status, 124 when it was killed for taking too long.
# (The timer is an external sleep, killed with SIGKILL: a bash subshell
# signalled with TERM can run the script's EXIT trap.)
_e2e_run() {
  local out=$1 err=$2
  shift 2
  "$@" >"$out" 2>"$err" </dev/null &
  local pid=$!
  sleep "$E2E_TIMEOUT" &
  local timer=$! finished="" rc
  wait -n -p finished "$pid" "$timer"
  rc=$?
  if [[ $finished == "$pid" ]]; then
    kill -KILL "$timer" 2>/dev/null
    wait "$timer" 2>/dev/null
    return "$rc"
  fi
  _e2e_kill_tree "$pid"
  kill -KILL "$timer" 2>/dev/null
  echo "timed out after ${E2E_TIMEOUT}s (killed)" >>"$err"
  # Stuck in the file system and not even SIGKILL ends it: the daemon hangs.
  local i
  for i in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "command is stuck after SIGKILL: killing the stampfs daemons" >>"$err"
    _e2e_kill_daemons
  fi
  wait "$pid" 2>/dev/null
  wait "$timer" 2>/dev/null
  return 124
}

_e2e_describe_status() {
  if [[ $1 == 124 ]]; then
    echo "timed out after ${E2E_TIMEOUT}s: ${*:2}"
  else
    echo "exit status $1: ${*:2}"
  fi
}

check() {
  local desc=$1 out=$E2E_TMP/.out err=$E2E_TMP/.err
  shift
  _e2e_run "$out" "$err" "$@"
  local rc=$?
  if [[ $rc == 0 ]]; then
    _e2e_pass "$desc"
  else
    _e2e_fail "$desc" "$(_e2e_describe_status "$rc" "$@")" "$out" "$err"
  fi
  return "$rc"
}

check_fails() {
  local desc=$1 pattern=$2 out=$E2E_TMP/.out err=$E2E_TMP/.err
  shift 2
  _e2e_run "$out" "$err" "$@"
  local rc=$?
  if [[ $rc == 124 ]]; then
    _e2e_fail "$desc" "$(_e2e_describe_status "$rc" "$@")" "$out" "$err"
  elif [[ $rc == 0 ]]; then
    _e2e_fail "$desc" "expected a failure matching /$pattern/, but it succeeded: $*" "$out" "$err"
    return 1
  elif ! cat "$out" "$err" | grep -Eq -- "$pattern"; then
    _e2e_fail "$desc" "failed (status $rc) as expected, but the output does not match /$pattern/: $*" \
      "$out" "$err"
    return 1
  else
    _e2e_pass "$desc"
    return 0
  fi
  return 1
}

check_eq() {
  local desc=$1 expected=$2 out=$E2E_TMP/.out err=$E2E_TMP/.err
  shift 2
  _e2e_run "$out" "$err" "$@"
  local rc=$?
  if [[ $rc != 0 ]]; then
    _e2e_fail "$desc" "$(_e2e_describe_status "$rc" "$@")" "$out" "$err"
    return "$rc"
  fi
  local actual
  actual=$(cat "$out")
  if [[ $actual == "$expected" ]]; then
    _e2e_pass "$desc"
    return 0
  fi
  printf '%s\n' "$expected" >"$E2E_TMP/.expected"
  diff -u --label expected --label actual "$E2E_TMP/.expected" "$out" >"$E2E_TMP/.diff"
  _e2e_fail "$desc" "output differs: $*" "$E2E_TMP/.diff"
  return 1
}

# A setup step that later checks depend on: its failure ends the script.
run() {
  check "$@" || exit 1
}

# ---------------------------------------------------------------- mounts

_e2e_is_mounted() {
  awk -v m="$1" '$5 == m { found = 1 } END { exit !found }' /proc/self/mountinfo
}

# e2e_stat_value MNT KEY: one counter from stampfs stat --json.
e2e_stat_value() {
  "$E2E_STAMPFS" stat --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$2"
}

# e2e_kill9 [MNT]: kill -9 of the daemon of MNT (default $M); the dead mount
# is detached.
e2e_kill9() {
  local mnt=${1:-$M}
  local pid=${E2E_PID[$mnt]}
  kill -KILL "$pid"
  wait "$pid" 2>/dev/null
  timeout 30 fusermount3 -u -z "$mnt" 2>/dev/null
  unset "E2E_PID[$mnt]"
}

# e2e_crash_at POINT OP: runs OP (shell code) with the daemon armed to die at
# POINT, then remounts; "killed", "skipped" or what went wrong goes to
# $E2E_TMP/crash.out (it changes the mount table: not run inside check).
e2e_crash_at() {
  local point=$1 op=$2 log
  e2e_sync
  e2e_unmount
  STAMPFS_FAULT="$point:kill" e2e_mount
  log=${E2E_LOG[$M]}
  timeout 60 bash -c "$op" >/dev/null 2>&1
  if grep -q "STAMPFS_FAULT is ignored" "$log"; then
    echo skipped >"$E2E_TMP/crash.out"
    e2e_unmount
  elif grep -q "fault point $point: killing" "$log"; then
    echo killed >"$E2E_TMP/crash.out"
    e2e_kill9 2>/dev/null
  else
    echo "the daemon did not stop at $point" >"$E2E_TMP/crash.out"
    e2e_unmount
  fi
  e2e_mount
}
# e2e_sync [MNT]: every change of the mount committed to the container
# (`sync DIR` fsyncs the directory: stampfs commits what commit=async queued).
e2e_sync() { sync "${1:-$M}"; }

e2e_new_cache() {
  E2E_CACHE_COUNT=$((E2E_CACHE_COUNT + 1))
  E2E_CACHE=$E2E_TMP/cache.$E2E_CACHE_COUNT
}

# e2e_mount [MNT]: mounts E2E_CONTAINER at MNT (default $M) with the current
# cache dir and extra options from $E2E_MOUNT_OPTS. Waits until the mount
# answers; a failure is fatal.
e2e_mount() {
  local mnt=${1:-$M}
  [[ -n $E2E_CACHE ]] || e2e_new_cache
  mkdir -p "$mnt"
  if _e2e_is_mounted "$mnt"; then
    e2e_fatal "mount $mnt" "$mnt is already mounted"
  fi
  local log=$E2E_TMP/stampfs.$((${#E2E_LOGS[@]} + 1)).log
  E2E_LOGS+=("$log")
  local opts="cache_dir=$E2E_CACHE,attr_timeout=$E2E_ATTR_TIMEOUT${E2E_MOUNT_OPTS:+,$E2E_MOUNT_OPTS}"
  local pid
  if [[ ${E2E_DAEMON:-0} == 1 ]]; then
    # As fstab and mount(8) run it: returns once mounted, the daemon detached.
    echo "stampfs mount -o $opts $E2E_CONTAINER $mnt" >"$log"
    if ! timeout "$E2E_MOUNT_TIMEOUT" "$E2E_STAMPFS" mount -o "$opts" "$E2E_CONTAINER" "$mnt" >>"$log" 2>&1 </dev/null; then
      e2e_fatal "mount $mnt" "stampfs mount (daemon mode) failed; log $log:
$(tail -n 20 "$log")"
    fi
    _e2e_is_mounted "$mnt" || e2e_fatal "mount $mnt" "stampfs mount returned 0 but $mnt is not mounted"
    pid=$(pgrep -n -f -x -- "$E2E_STAMPFS mount -o $opts $E2E_CONTAINER $mnt")
    [[ -n $pid ]] || e2e_fatal "mount $mnt" "mounted, but no daemon process is running"
  else
    echo "stampfs mount -f -o $opts $E2E_CONTAINER $mnt" >"$log"
    "$E2E_STAMPFS" mount -f -o "$opts" "$E2E_CONTAINER" "$mnt" >>"$log" 2>&1 </dev/null &
    pid=$!
  fi
  E2E_PID[$mnt]=$pid
  E2E_DETACHED[$mnt]=${E2E_DAEMON:-0}
  E2E_LOG[$mnt]=$log
  E2E_MOUNTS+=("$mnt")
  _e2e_save_pids
  local deadline=$((SECONDS + E2E_MOUNT_TIMEOUT))
  until _e2e_is_mounted "$mnt"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      wait "$pid"
      local rc=$?
      unset "E2E_PID[$mnt]"
      e2e_fatal "mount $mnt" "stampfs exited with status $rc before mounting; log $log:
$(tail -n 20 "$log")"
    fi
    if ((SECONDS >= deadline)); then
      e2e_fatal "mount $mnt" "not mounted after ${E2E_MOUNT_TIMEOUT}s; log $log:
$(tail -n 20 "$log")"
    fi
    sleep 0.05
  done
  if ! timeout 30 stat "$mnt" >/dev/null 2>>"$log"; then
    e2e_fatal "mount $mnt" "mounted, but stat $mnt fails; log $log:
$(tail -n 20 "$log")"
  fi
  echo "  (mounted $mnt, pid $pid, cache $E2E_CACHE)"
}

# e2e_unmount [MNT]: unmounts (stampfs unmount, retried while busy, then a
# lazy fusermount3 -u -z) and waits for the daemon to exit. Records a failure
# when the unmount needed force or the daemon did not exit cleanly.
e2e_unmount() {
  local mnt=${1:-$M}
  local pid=${E2E_PID[$mnt]:-} log=${E2E_LOG[$mnt]:-/dev/null} problem="" i
  for i in $(seq 20); do
    _e2e_is_mounted "$mnt" || break
    timeout 30 "$E2E_STAMPFS" unmount "$mnt" >>"$log" 2>&1 && break
    sleep 0.5
  done
  if _e2e_is_mounted "$mnt"; then
    problem="stampfs unmount $mnt kept failing (busy?); used fusermount3 -u -z"
    timeout 30 fusermount3 -u -z "$mnt" >>"$log" 2>&1
  fi
  if [[ -n $pid ]]; then
    local deadline=$((SECONDS + 30))
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.05; done
    if kill -0 "$pid" 2>/dev/null; then
      problem+="${problem:+; }stampfs (pid $pid) did not exit within 30s of the unmount: killed"
      _e2e_kill_tree "$pid"
    fi
    local rc=0
    # A daemon (E2E_DAEMON=1) is not this shell's child: its status is not ours
    # to read (bash would report the status of an earlier child that had the
    # same pid, e.g. one this script SIGKILLed: 137).
    if [[ ${E2E_DETACHED[$mnt]:-0} != 1 ]]; then
      wait "$pid" 2>/dev/null || rc=$?
    fi
    [[ $rc == 127 ]] && rc=0
    if [[ $rc != 0 && -z $problem ]]; then
      problem="stampfs (pid $pid) exited with status $rc after the unmount"
    fi
    unset "E2E_PID[$mnt]"
    _e2e_save_pids
  fi
  if [[ -n $problem ]]; then
    _e2e_fail "unmount $mnt" "$problem" "$log"
    return 1
  fi
  echo "  (unmounted $mnt)"
  return 0
}

# e2e_daemon_check: the daemon mode every user of mount(8), fstab and the
# README runs (no -f): a mount at its own mount point with a fresh cache dir
# returns once mounted, takes a large write through a shell redirect (the
# upload workers must live in the daemon: forked after them, it had none and
# the write hung), reads it back, and the daemon exits after the unmount.
e2e_daemon_check() {
  local mnt=$E2E_TMP/daemon-mnt saved_cache=$E2E_CACHE
  section "daemon mode (no -f)"
  e2e_new_cache
  E2E_DAEMON=1 e2e_mount "$mnt"
  head -c 20000000 /dev/urandom >"$E2E_TMP/daemon-src"
  E2E_TIMEOUT=60 check "daemon mode: a 20 MB write through > finishes" \
    eval "cat '$E2E_TMP/daemon-src' > '$mnt/daemon-big'"
  check "daemon mode: the file reads back" cmp "$E2E_TMP/daemon-src" "$mnt/daemon-big"
  check "daemon mode: rm" rm "$mnt/daemon-big"
  # e2e_unmount records its own failure (forced unmount, a daemon left running).
  e2e_unmount "$mnt" && _e2e_pass "daemon mode: the daemon exits after the unmount"
  rm -f "$E2E_TMP/daemon-src"
  E2E_CACHE=$saved_cache
}

# e2e_remount fresh|keep [MNT]
e2e_remount() {
  local how=$1 mnt=${2:-$M}
  e2e_unmount "$mnt"
  case $how in
    fresh) e2e_new_cache ;;
    keep) ;;
    *) e2e_fatal "e2e_remount: unknown mode $how" ;;
  esac
  e2e_mount "$mnt"
}

# The daemons' pids, for the watchdog.
_e2e_save_pids() {
  printf '%s\n' "${E2E_PID[@]}" >"$E2E_TMP/.daemons"
}

# An external process (not a subshell: signals and traps stay simple) that
# exits with the script, or after E2E_SCRIPT_TIMEOUT kills the daemons.
_e2e_start_watchdog() {
  bash -c '
    main=$1 limit=$2 pids=$3
    end=$((SECONDS + limit))
    while kill -0 "$main" 2>/dev/null; do
      if ((SECONDS >= end)); then
        echo "e2e watchdog: the script ran over ${limit}s; killing its stampfs daemons so that hung calls return" >&2
        for p in $(cat "$pids" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
        exit 0
      fi
      sleep 2
    done' e2e-watchdog $$ "${E2E_SCRIPT_TIMEOUT:-840}" "$E2E_TMP/.daemons" </dev/null &
}

_e2e_kill_daemons() {
  local mnt
  for mnt in "${!E2E_PID[@]}"; do
    kill -KILL "${E2E_PID[$mnt]}" 2>/dev/null
    timeout 10 fusermount3 -u -z "$mnt" >/dev/null 2>&1
  done
}

# ---------------------------------------------------------------- the end

e2e_finish() {
  E2E_FINISHED=true
  exit 0
}

_e2e_on_exit() {
  local rc=$?
  trap - EXIT INT TERM
  if ! $E2E_FINISHED; then
    _e2e_fail "script completed" "the script stopped early (status $rc) before e2e_finish"
  fi
  local mnt
  for mnt in "${E2E_MOUNTS[@]}"; do
    if _e2e_is_mounted "$mnt" || [[ -n ${E2E_PID[$mnt]:-} ]]; then
      e2e_unmount "$mnt" >/dev/null
    fi
  done
  # Never delete through a mount that is still there.
  local leftover=false
  for mnt in "${E2E_MOUNTS[@]}"; do
    _e2e_is_mounted "$mnt" && leftover=true
  done
  if ((E2E_FAILED > 0)); then
    local log
    for log in "${E2E_LOGS[@]}"; do
      if grep -qv '^stampfs mount' "$log" 2>/dev/null; then
        echo "--- tail of $log"
        tail -n 15 "$log" | sed 's/^/    /'
      fi
    done
  fi
  if [[ ${E2E_KEEP:-0} == 1 ]]; then
    echo "E2E_KEEP=1: kept container $E2E_CONTAINER and $E2E_TMP"
  else
    if [[ -x $E2E_INSPECT ]]; then
      timeout 120 "$E2E_INSPECT" drop "$E2E_CONTAINER" >/dev/null ||
        echo "note: could not delete container $E2E_CONTAINER"
    fi
    if $leftover; then
      echo "note: $E2E_TMP kept: a mount under it could not be removed"
    else
      rm -rf --one-file-system "$E2E_TMP"
    fi
  fi
  echo "e2e $E2E_SCRIPT: $((SECONDS - E2E_START))s"
  if ((E2E_FAILED > 0)); then
    echo "failed checks:"
    printf '  - %s\n' "${E2E_FAILURES[@]}"
  fi
  echo "$E2E_PASSED passed, $E2E_FAILED failed"
  if ((E2E_FAILED > 0)); then exit 1; fi
  exit 0
}

trap _e2e_on_exit EXIT
_e2e_start_watchdog
trap 'echo "interrupted"; exit 130' INT
trap 'echo "terminated"; exit 143' TERM
