# tests/bench/small_files.sh: the small-file workloads of tests/bench/run
# (issue 13), sourced by it (its functions and variables: want, timed, record,
# fresh_azurite, stampfs_mount, rclone_mount, requests, drop_caches, az, ...).
#
# At each RTT of $RTTS (0: Azurite itself; else a stampfs_latency_proxy, RTT/2
# each way, in front of its blob port and one in front of its table port, and
# raw, stampfs and rclone all pointed at the proxies), $SF_REPS repetitions:
#   loop     for f in ...; do cat src > DIR/$f; done      $NSMALL files of 4 KiB
#   cp       for f in ...; do cp src DIR/$f; done         the same with cp
#   untar4k  tar -xf of those $NSMALL files (one directory)
#   rsync    rsync -a of a source-like tree of about $NSMALL files (mostly small;
#            50 a directory)
#   catcold  cat DIR/* > /dev/null of $NSMALL 4 KiB files, fresh mount, empty cache
#   lsR      ls -lR of that directory, fresh mount, empty cache
# Writes start each system on a fresh Azurite (--quick: each repetition) and
# are timed until every file is
# in the container: its blob listed with its size and, for stampfs, its table
# entry naming that blob's ETag (stampfs_bench wait-tree ... committed, polled
# every 100 ms on a direct connection). `returned` is when the command itself
# returned. Systems: raw1 (the storage client, one request at a time: 1 Put Blob
# or Get Blob per file, 1 List Blobs per 5,000 names), stampfs in each mode of
# $STAMPFS_BENCH_MODES ("stampfs-async", "stampfs-close"; "stampfs" for the
# reads, which do not depend on it), rclone (requests not counted: n/a).

PROXY_BLOB_PORT=${BENCH_PROXY_BLOB_PORT:-$((AZURITE_BLOB_PORT + 10))}
PROXY_TABLE_PORT=${BENCH_PROXY_TABLE_PORT:-$((AZURITE_TABLE_PORT + 10))}
SF_DURABLE="every file's blob listed with its size and (stampfs) its table entry naming the blob's ETag, polled every 100 ms on a direct connection to Azurite"
SF_MODES_NOTE="not probed"
PROXY_PIDS=()

stop_proxies() {
  local p
  for p in "${PROXY_PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  PROXY_PIDS=()
}

# start_proxy LISTEN_PORT TARGET_PORT DELAY_MS
start_proxy() {
  local log=$W/proxy.$1.log i
  "$PROXY" "$1" "127.0.0.1:$2" "$3" >"$log" 2>&1 </dev/null &
  PROXY_PIDS+=($!)
  for i in $(seq 100); do
    grep -qs "127.0.0.1:$1 ->" "$log" && return 0
    kill -0 "${PROXY_PIDS[-1]}" 2>/dev/null || break
    sleep 0.05
  done
  cat "$log" >&2
  die "latency proxy on port $1 did not start"
}

# set_rtt MS: every system's endpoints at this round trip from now on.
set_rtt() {
  local bp=$AZURITE_BLOB_PORT tp=$AZURITE_TABLE_PORT
  stop_proxies
  RTT_MS=$1
  if [[ $1 != 0 ]]; then
    local d
    d=$(awk -v r="$1" 'BEGIN { print r / 2 }')
    start_proxy "$PROXY_BLOB_PORT" "$AZURITE_BLOB_PORT" "$d"
    start_proxy "$PROXY_TABLE_PORT" "$AZURITE_TABLE_PORT" "$d"
    bp=$PROXY_BLOB_PORT tp=$PROXY_TABLE_PORT
  fi
  AZURE_STORAGE_CONNECTION_STRING=$(conn_string "$bp" "$tp")
  RCLONE_CONFIG_BENCHAZ_SAS_URL="http://127.0.0.1:$bp/devstoreaccount1?$SAS"
}

# The stampfs systems of the writes: one per -o commit= mode this build
# accepts, probed by mounting once with commit=close.
probe_commit_modes() {
  local c pid i
  c=$(new_cache)
  "$STAMPFS" mount -f -o "cache_dir=$c,commit=close" "$CS" "$SM" >"$W/probe.log" 2>&1 </dev/null &
  pid=$!
  for i in $(seq 600); do
    is_mounted "$SM" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  if is_mounted "$SM"; then
    SPID=$pid SCACHE=$c
    stampfs_unmount
    SF_STAMPFS=""
    for i in ${STAMPFS_BENCH_MODES:-async close}; do SF_STAMPFS+=" stampfs-$i"; done
    SF_MODES_NOTE="${STAMPFS_BENCH_MODES:-async close}"
  else
    wait "$pid" 2>/dev/null || true
    grep -q "unknown option commit" "$W/probe.log" ||
      { cat "$W/probe.log" >&2; die "stampfs mount with commit=close failed (not as an unknown option)"; }
    SF_STAMPFS="stampfs"
    SF_MODES_NOTE="commit= not supported by this build: its default mode only"
    log "commit= not supported by this build: stampfs runs in its default mode only"
  fi
  retire "$c"
}

# loop_files cat|cp DIR: the shell loop, one command per file.
loop_files() {
  local i f
  for ((i = 0; i < NSMALL; i++)); do
    printf -v f 'f%05d' "$i"
    if [[ $1 == cat ]]; then
      cat "$SMALL_SRC" >"$2/$f" || return 1
    else
      cp "$SMALL_SRC" "$2/$f" || return 1
    fi
  done
}
sf_do_loop() { loop_files cat "$1"; }
sf_do_cp() { loop_files cp "$1"; }
sf_do_untar4k() { tar -C "$1" -xf "$W/small.tar"; }
sf_do_rsync() { rsync -a "$W/rtree/" "$1/"; }
sf_tree() { [[ $1 == rsync ]] && echo "$W/rtree" || echo "$W/small"; }

# sf_durable SYSTEM WORKLOAD REP CONTAINER DIR: runs the workload into the
# mounted DIR (its prefix in CONTAINER: WORKLOAD.REP.SYSTEM/), then waits until it is
# all in the container; T is the whole time, TR the workload's own. A system
# that fails the workload or never gets it all there (rclone loses files that
# rsync renames while it uploads them) gets T=failed, and the run goes on.
sf_durable() {
  local sys=$1 w=$2 r=$3 c=$4 dir=$5 t0 committed=""
  [[ $sys == stampfs* ]] && committed=committed
  t0=$EPOCHREALTIME
  TR=""
  if ! "sf_do_$w" "$dir"; then
    log "$sys: $w into $dir FAILED"
    T=failed
    return
  fi
  TR=$(seconds_since "$t0")
  if ! az "$TOOL" wait-tree "$c" "$w.$r.$sys/" "$(sf_tree "$w")" 900 $committed; then
    log "$sys: $w never all in the container: FAILED (logs: $W/stampfs.log, $W/rclone.log)"
    T=failed
    return
  fi
  T=$(seconds_since "$t0")
}

# sf_fresh FIRST: a fresh Azurite for the next system's write; --quick gives
# one to each repetition (FIRST=1) and lets its systems share it (different
# containers; a few hundred files do not slow Azurite down), which saves a
# restart per system.
sf_fresh() { if [[ $1 == 1 || $QUICK == 0 ]]; then fresh_azurite; fi; }

# A timed write, each system on a fresh Azurite (but see sf_fresh).
sf_write() {
  local w=$1 r sys q0 q1 n tree
  tree=$(sf_tree "$w")
  n=$(find "$tree" -type f | wc -l)
  for r in $(seq "$SF_REPS"); do
    sf_fresh 1
    if [[ $w == rsync ]]; then
      timed "$TOOL" put-tree $CRAW "$w.$r.raw1/" "$tree" 1
    else
      timed "$TOOL" put-many $CRAW "$w.$r.raw1/" "$NSMALL" "$FILE_BYTES" 1
    fi
    record "$w" raw1 "$r" "$n" files "$n"

    for sys in $SF_STAMPFS; do
      sf_fresh 0
      stampfs_mount "$(new_cache)" "$([[ $sys == stampfs-* ]] && echo "commit=${sys#stampfs-}")"
      mkdir "$SM/$w.$r.$sys"
      q0=$(requests)
      sf_durable "$sys" "$w" "$r" $CS "$SM/$w.$r.$sys"
      q1=$(requests)
      record "$w" "$sys" "$r" "$n" files "$(delta "$q0" "$q1")" "$(peak_rss)"
      stampfs_unmount
      retire "$SCACHE"
    done

    sf_fresh 0
    rclone_mount "$(new_cache)"
    mkdir "$RM/$w.$r.rclone"
    sf_durable rclone "$w" "$r" $CRC "$RM/$w.$r.rclone"
    record "$w" rclone "$r" "$n" files n/a
    rclone_unmount
    retire "$RCACHE"
  done
}

# The directory the reads use: $NSMALL blobs of 4 KiB under cat/ in every
# container, written directly (untimed); stampfs's imported.
sf_read_input() {
  fresh_azurite
  az "$TOOL" create $CS
  local c
  for c in $CRAW $CS $CRC; do az "$TOOL" put-many $c cat/ "$NSMALL" "$FILE_BYTES" 16; done
  az "$STAMPFS" import $CS >/dev/null
}

# sf_read WORKLOAD: catcold or lsR, each repetition on fresh mounts.
sf_read() {
  local w=$1 r q0 q1 cmd
  if [[ $w == catcold ]]; then cmd='cat "$0"/cat/* >/dev/null'; else cmd='ls -lR "$0"/cat >/dev/null'; fi
  for r in $(seq "$SF_REPS"); do
    if [[ $w == catcold ]]; then
      timed "$TOOL" get-many $CRAW cat/ "$NSMALL" 1
      record "$w" raw1 "$r" "$NSMALL" files "$NSMALL"
    else
      timed "$TOOL" list $CRAW cat/ >/dev/null
      record "$w" raw1 "$r" "$NSMALL" files $(((NSMALL + 4999) / 5000))
    fi

    stampfs_mount "$(new_cache)"
    drop_caches
    q0=$(requests)
    timed bash -c "$cmd" "$SM"
    q1=$(requests)
    record "$w" stampfs "$r" "$NSMALL" files "$(delta "$q0" "$q1")" "$(peak_rss)"
    stampfs_unmount
    retire "$SCACHE"

    rclone_mount "$(new_cache)"
    drop_caches
    timed bash -c "$cmd" "$RM"
    record "$w" rclone "$r" "$NSMALL" files n/a
    rclone_unmount
    retire "$RCACHE"
  done
}

small_files() {
  local rtt w any=0
  for w in $SMALL_WORKLOADS; do want "$w" && any=1; done
  ((any)) || return 0
  log "== small files: $NSMALL files of $FILE_BYTES bytes, RTT $RTTS ms, $SF_REPS reps (t=$((SECONDS - START)) s)"
  mkdir -p "$W/small"
  python3 - "$W/small" "$NSMALL" "$FILE_BYTES" <<'EOF'
import os, random, sys
root, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(13)
for i in range(n):
    with open(os.path.join(root, "f%05d" % i), "wb") as f:
        f.write(rng.randbytes(size))
EOF
  (cd "$W/small" && find . -type f -printf '%P\n' | sort | tar -cf "$W/small.tar" -T -)
  local dirs=$(((NSMALL + 49) / 50))
  make_tree "$W/rtree" "$dirs" $(((NSMALL + dirs - 1) / dirs))
  SMALL_SRC=$W/small/f00000
  fresh_azurite
  probe_commit_modes
  for rtt in $RTTS; do
    set_rtt "$rtt"
    for w in loop cp untar4k rsync; do
      want "$w" || continue
      log "== $w at RTT $rtt ms (t=$((SECONDS - START)) s, load $(cut -d' ' -f1 /proc/loadavg))"
      sf_write "$w"
    done
    if want catcold || want lsR; then
      sf_read_input
      for w in catcold lsR; do
        want "$w" || continue
        log "== $w at RTT $rtt ms (t=$((SECONDS - START)) s, load $(cut -d' ' -f1 /proc/loadavg))"
        sf_read "$w"
      done
    fi
  done
  set_rtt 0
}
