#!/usr/bin/env bash
# e2e: reading many small files (issue 13), counted with stampfs stat.
#   - a cold `cat DIR/*` gets the directory's small files fetched ahead
#     (readahead.files), each fetched once;
#   - a file renamed after it was read keeps its cached data: reading it
#     under the new name makes no GET (the rename's copy has a new ETag).
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2317
source "$(dirname "$0")/lib.bash" "$@"

E2E_MOUNT_OPTS="commit=close"
N=60

e2e_mount
run "write $N small files and one to rename" bash -c '
  mkdir -p "$1/many" && for i in $(seq -w 1 "$2"); do head -c 4096 /dev/urandom >"$1/many/f$i"; done
  head -c 5000 /dev/urandom >"$1/r.tmp"' _ "$M" "$N"
run "keep a copy of what was written" cp -r "$M/many" "$M/r.tmp" "$E2E_TMP/"
e2e_remount fresh

get() { e2e_stat_value "$M" requests.blob.get; }

section "a cold cat of a directory's files fetches them ahead, each once"
run "list the directory" ls "$M/many"
g0=$(get)
check "cat of every file reads what was written" \
  eval 'cat "$M"/many/* | cmp - <(cat "$E2E_TMP"/many/*)'
sleep 0.5  # fetches ahead still under way end
ahead=$(e2e_stat_value "$M" readahead.files)
gets=$(($(get) - g0))
echo "$N files: $gets GETs, $ahead fetched ahead"
check "most files were fetched ahead of the reader" test "$ahead" -ge $((N - 10))
check "no file was fetched twice" test "$gets" -le "$N"

section "a renamed file keeps its cached data"
check "read it under its first name" cmp "$M/r.tmp" "$E2E_TMP/r.tmp"
run "rename it" mv "$M/r.tmp" "$M/r"
run "drop the kernel's caches" sh -c 'echo 3 >/proc/sys/vm/drop_caches'
g0=$(get)
m0=$(e2e_stat_value "$M" cache.misses)
check "it reads the same bytes under the new name" cmp "$M/r" "$E2E_TMP/r.tmp"
check "with no GET" test "$(get)" -eq "$g0"
check "and no cache miss" test "$(e2e_stat_value "$M" cache.misses)" -eq "$m0"

e2e_finish
