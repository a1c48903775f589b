#!/usr/bin/env bash
# e2e: a container written without stampfs (tests/e2e/tools/stampfs_populate,
# straight through the storage client) is imported and mounts as exactly the
# tree its blob names describe; fsck finds it clean, finds damage made to the
# table on purpose, repairs it, and finds it clean again; a first mount of a
# container with blobs and no table imports by itself.
#
#   bash tests/e2e/import_fsck.sh BUILD_DIR
source "$(dirname "$0")/lib.bash" "$@"

POPULATE=$E2E_BUILD_DIR/tests/stampfs_populate
[[ -x $POPULATE ]] || e2e_fatal "stampfs_populate" "$POPULATE is not built (cmake target stampfs_populate)"
[[ -x $E2E_INSPECT ]] || e2e_fatal "stampfs_inspect" "$E2E_INSPECT is not built"
C=$E2E_CONTAINER
BULK=5000

populate() { "$POPULATE" "$@"; }
stampfs() { "$E2E_STAMPFS" "$@"; }

# name<TAB>contents of every file blob (markers are listed apart).
FILES=$E2E_TMP/files.tsv
cat >"$FILES" <<'EOF'
docs/readme.txt	read me first
docs/deep/er/notes.md	notes
top.bin	0123456789
a#b/c%d/e f?.txt	escaping: # % space ?
uni/été/日本語.txt	unicode
withkids/k.txt	kid
clash/inner	the directory wins over the file "clash"
EOF
# stampfs keeps a '\' of a file name as U+F05C in blob names (the service
# reads '\' as '/'): this blob is the file docs/back\slash.txt.
printf 'docs/back\xef\x81\x9cslash.txt\tbackslash\n' >>"$FILES"
# The file name a blob name stands for.
fsname() { printf '%s' "${1//$'\xef\x81\x9c'/\\}"; }

# The tree a mount must show: every file, every directory above one, the
# marker directories; sorted as find prints it.
expected_tree() {
  {
    while IFS=$'\t' read -r name _; do fsname "$name"; echo; done <"$FILES"
    printf 'emptydir\nwithkids\nslashdir\n'
    for i in $(seq 0 $((BULK - 1))); do printf 'bulk/f%05d\n' "$i"; done
  } | awk -F/ '{ p = ""; for (i = 1; i <= NF; i++) { p = (i == 1 ? $1 : p "/" $i); print "./" p } }' |
    LC_ALL=C sort -u
}

# expect_status STATUS REGEX... -- CMD...: runs CMD, requires its exit status
# and a line matching every REGEX in its output (printed for the log).
expect_status() {
  local want=$1 out rc re
  shift
  local res=()
  while [[ $1 != -- ]]; do res+=("$1"); shift; done
  shift
  out=$("$@" 2>&1)
  rc=$?
  echo "$out"
  if [[ $rc != "$want" ]]; then
    echo "exit status $rc, expected $want"
    return 1
  fi
  for re in "${res[@]}"; do
    grep -Eq -- "$re" <<<"$out" || { echo "no line matches /$re/"; return 1; }
  done
}
# fsck_expect STATUS REGEX...: stampfs fsck $FSCK_ARGS $C
fsck_expect() {
  local want=$1
  shift
  # shellcheck disable=SC2086
  expect_status "$want" "$@" -- stampfs fsck $FSCK_ARGS "$C"
}

# ---------------------------------------------------------------------------
section "populate the container through the storage client, not stampfs"
run "create the container" populate create "$C"
while IFS=$'\t' read -r name text; do
  run "put blob $name" populate put "$C" "$name" "$text"
done <"$FILES"
run "put blob clash (a file where blobs need a directory)" populate put "$C" clash "a file"
run "put a blob with stampfs metadata" \
  populate put "$C" meta/mine.sh '#!/bin/sh' mode=33261 uid=1234 gid=2345 mtime=1600000000123456789
echo "meta/mine.sh	#!/bin/sh" >>"$FILES"
run "blobfuse marker emptydir (hdi_isfolder=true)" populate marker "$C" emptydir
run "blobfuse marker withkids" populate marker "$C" withkids
run "zero-length 'slashdir/' marker" populate put "$C" slashdir/
for odd in 'odd//empty-component' 'odd/./dot' 'odd/../dotdot'; do
  run "put blob $odd (a name no file system path can have)" populate put "$C" "$odd" x
done
E2E_TIMEOUT=600 run "upload $BULK blobs under bulk/ in parallel" populate many "$C" bulk "$BULK" 32
check_eq "the container holds every blob" "$((BULK + 16))" eval '"$E2E_INSPECT" blobs "$C" | wc -l'

# ---------------------------------------------------------------------------
section "stampfs import"
E2E_TIMEOUT=600 check "import: every file and directory, and the blobs it cannot map (exit 1)" \
  expect_status 1 "^not imported: clash: a directory of the same name holds other blobs" \
  "^not imported: odd//empty-component: empty path component" \
  "^not imported: odd/\./dot: path component \"\.\"" \
  "^not imported: odd/\.\./dotdot: path component \"\.\.\"" \
  "^import $C: $((BULK + 16)) blobs; created $((BULK + 9)) files and 13 directories; 0 entries unchanged; 4 blobs not imported$" \
  -- stampfs import "$C"
"$E2E_INSPECT" entities "$C" | grep -v '^~fs' >"$E2E_TMP/entities.1"
E2E_TIMEOUT=600 check "a second import creates nothing" \
  expect_status 1 "created 0 files and 0 directories; $((BULK + 22)) entries unchanged; 4 blobs not imported$" \
  -- stampfs import "$C"
"$E2E_INSPECT" entities "$C" | grep -v '^~fs' >"$E2E_TMP/entities.2"
check "the second import changed no row (not even a \".\" row's touched time)" \
  cmp "$E2E_TMP/entities.1" "$E2E_TMP/entities.2"
check "the folder marker's directory has a \".\" row" \
  eval '"$E2E_INSPECT" entities "$C" %2Femptydir | grep -q "^%2Femptydir	\.	"'

# ---------------------------------------------------------------------------
section "the mount shows exactly that tree"
e2e_mount
# A mount checks each directory it reads against its blobs (foreign_ttl):
# the prefix odd/ is a directory there, empty, as its blobs map to no path.
check_eq "find lists every imported name and nothing else" "$( (expected_tree; echo ./odd) | LC_ALL=C sort)" \
  eval 'cd "$M" && find . -mindepth 1 | LC_ALL=C sort'
while IFS=$'\t' read -r name text; do
  check_eq "contents of $(fsname "$name")" "$text" cat "$M/$(fsname "$name")"
done <"$FILES"
check_eq "contents of bulk/f01250" "f01250" cat "$M/bulk/f01250"
# (stampfs_populate many: every 50th holds its name, the others are empty.)
check_eq "all $BULK bulk files have the size of their blobs" "$(printf '%s 0\n%s 7' $((BULK - BULK / 50)) $((BULK / 50)))" \
  eval 'stat -c %s "$M"/bulk/f* | sort -n | uniq -c | awk "{ print \$1, \$2 }"'
E2E_TIMEOUT=300 check "every 50th bulk file holds its name" eval '
  for i in $(seq 0 50 $((BULK - 1))); do
    f=$(printf "f%05d" "$i")
    [[ $(cat "$M/bulk/$f") == "$f" ]] || { echo "bulk/$f: wrong contents"; exit 1; }
  done'
check_eq "stampfs metadata restored mode, owner and mtime" "755 1234 2345 1600000000.123456789" \
  stat -c '%a %u %g %.9Y' "$M/meta/mine.sh"
check_eq "a blob without metadata is 0644" "644" stat -c %a "$M/top.bin"
check_eq "marker directories are empty directories" "" eval 'ls -A "$M/emptydir" && ls -A "$M/slashdir"'
check "a new file in an imported directory" eval 'echo new >"$M/docs/new.txt"'
e2e_unmount

# ---------------------------------------------------------------------------
section "fsck"
FSCK_ARGS="" E2E_TIMEOUT=300 check "fsck reports the blobs import could not map (exit 1)" \
  fsck_expect 1 "^blob-without-entry: clash: " "^blob-without-entry: odd//empty-component: " \
  "4 problems, 0 repaired, 4 left"
for odd in clash 'odd//empty-component' 'odd/./dot' 'odd/../dotdot'; do
  run "remove the blob $odd" populate delete "$C" "$odd"
done
FSCK_ARGS="" E2E_TIMEOUT=300 check "fsck: clean (exit 0)" fsck_expect 0 "files: clean$"
run "damage: delete the entry of docs/readme.txt" populate delete-row "$C" %2Fdocs readme.txt
run "damage: change the betag of bulk/f00050" \
  populate set-string "$C" %2Fbulk f00050 betag '"0x8D0000000000BAD"'
FSCK_ARGS="" E2E_TIMEOUT=300 check "fsck reports both (exit 1)" fsck_expect 1 \
  "^blob-without-entry: docs/readme.txt: " "^etag-mismatch: /bulk/f00050: " \
  "2 problems, 0 repaired, 2 left"
FSCK_ARGS=--repair E2E_TIMEOUT=300 check "fsck --repair repairs both (exit 0)" fsck_expect 0 \
  "^blob-without-entry: docs/readme.txt: .* -> repaired: imported" \
  "^etag-mismatch: /bulk/f00050: .* -> repaired: adopted" "2 problems, 2 repaired, 0 left"
FSCK_ARGS="" E2E_TIMEOUT=300 check "fsck: clean again" fsck_expect 0 "files: clean$"
e2e_new_cache
e2e_mount
check_eq "the repaired entry reads" "read me first" cat "$M/docs/readme.txt"
check_eq "the adopted entry reads" "f00050" cat "$M/bulk/f00050"
check_eq "the file written through the mount survived" "new" cat "$M/docs/new.txt"
e2e_unmount
check "fsck of a container that does not exist: exit 2" \
  expect_status 2 "container nosuch-$$-container does not exist" -- stampfs fsck "nosuch-$$-container"
unreachable() {
  AZURE_STORAGE_CONNECTION_STRING="DefaultEndpointsProtocol=http;AccountName=nobody;AccountKey=AAAA;BlobEndpoint=http://127.0.0.1:9/nobody;TableEndpoint=http://127.0.0.1:9/nobody" \
    "$@"
}
check "fsck with an unreachable endpoint: exit 2" \
  expect_status 2 "Transport: .*127.0.0.1 port 9" -- unreachable stampfs fsck "$C"
check "import with an unreachable endpoint: exit 2" \
  expect_status 2 "Transport: .*127.0.0.1 port 9" -- unreachable stampfs import "$C"

# ---------------------------------------------------------------------------
section "a first mount of a filled container adopts each directory as it reads it"
C2=$C-auto
run "create a second container" populate create "$C2"
run "put a nested blob" populate put "$C2" 'deep/er/file one.txt' "auto"
run "put a marker" populate marker "$C2" empty
M2=$E2E_TMP/mnt2
e2e_new_cache  # a cache dir belongs to one container
E2E_CONTAINER=$C2 e2e_mount "$M2"
check_eq "the mount shows the imported tree" "$(printf './deep\n./deep/er\n./deep/er/file one.txt\n./empty')" \
  eval 'cd "$M2" && find . -mindepth 1 | LC_ALL=C sort'
check_eq "and its contents" "auto" cat "$M2/deep/er/file one.txt"
e2e_unmount "$M2"
check "nothing was imported up front" grep -q "each directory is adopted when it is first read" \
  "${E2E_LOG[$M2]}"
check "fsck of the adopted container: clean" expect_status 0 "files: clean$" -- stampfs fsck "$C2"
run "a third container" populate create "$C2-up"
run "put a blob into it" populate put "$C2-up" 'a/b.txt' "up front"
e2e_new_cache
E2E_CONTAINER=$C2-up E2E_MOUNT_OPTS=foreign_ttl=0 e2e_mount "$M2"
check_eq "with foreign_ttl=0 a first mount imports the whole container" "up front" cat "$M2/a/b.txt"
e2e_unmount "$M2"
check "the import was logged" grep -q "import $C2-up: 1 blobs; created 1 files and 1 directories" \
  "${E2E_LOG[$M2]}"
[[ ${E2E_KEEP:-0} == 1 ]] || "$E2E_INSPECT" drop "$C2-up" >/dev/null
[[ ${E2E_KEEP:-0} == 1 ]] || "$E2E_INSPECT" drop "$C2" >/dev/null

# ---------------------------------------------------------------------------
# Issue 15: blob metadata "mtime" in the RFC 3339 form rclone reads and
# writes (stampfs wrote decimal ns: rclone showed 0001-01-01 for every file).
section "rclone reads stampfs's modification times, and import reads rclone's"
if command -v rclone >/dev/null; then
  export RCLONE_CONFIG=$E2E_TMP/rclone.conf
  : >"$RCLONE_CONFIG"
  blob_endpoint=$(sed -n 's/.*BlobEndpoint=\([^;]*\).*/\1/p' <<<"${AZURE_STORAGE_CONNECTION_STRING:-}")
  export RCLONE_CONFIG_E2E_TYPE=azureblob
  RCLONE_CONFIG_E2E_SAS_URL="${blob_endpoint:-http://127.0.0.1:10000/devstoreaccount1}?$("$E2E_BUILD_DIR/tests/stampfs_bench" sas)"
  export RCLONE_CONFIG_E2E_SAS_URL
  e2e_new_cache
  e2e_mount
  echo "written through stampfs" >"$M/by-stampfs"
  stamp=$(stat -c %y "$M/by-stampfs" | cut -d' ' -f1,2)
  e2e_unmount
  check_eq "rclone lsl shows the file's mtime to the nanosecond" "$stamp by-stampfs" \
    eval "rclone lsl 'e2e:$C/by-stampfs' | awk '{print \$2, \$3, \$4}'"
  echo "written through rclone" >"$E2E_TMP/by-rclone"
  touch -d '2021-05-06 07:08:09.123456789' "$E2E_TMP/by-rclone"
  run "rclone copyto a file into the container" rclone copyto "$E2E_TMP/by-rclone" "e2e:$C/by-rclone"
  check "stampfs import --refresh" stampfs import "$C" --refresh
  e2e_mount
  check_eq "the imported file keeps rclone's mtime" "2021-05-06 07:08:09.123456789" \
    eval "stat -c %y '$M/by-rclone' | cut -d' ' -f1,2"
  check_eq "and its content" "written through rclone" cat "$M/by-rclone"
  e2e_unmount

  # Issue 15: what other tools need besides times. A directory made with
  # -o dir_markers has blobfuse's marker blob; a block-list blob (over the
  # 8 MiB single Put Blob limit) carries a Content-MD5; a time set after
  # the last close reaches the blob's metadata.
  E2E_MOUNT_OPTS=dir_markers e2e_mount
  mkdir -p "$M/marked/empty inside"
  head -c $((20 * 1024 * 1024 + 123)) /dev/urandom >"$E2E_TMP/large.bin"
  cp "$E2E_TMP/large.bin" "$M/large.bin"
  touch -d '2020-02-03 04:05:06.789' "$M/large.bin"
  chmod 0600 "$M/large.bin"
  e2e_unmount
  # rclone 1.60 (Debian 12) lists a directory when a blob is below it and
  # skips hdi_isfolder markers themselves: "marked" holds only an empty
  # directory, so only its marker makes it visible.
  check_eq "rclone lsf --dirs-only sees a directory made on the mount that holds no file" \
    "marked/" eval "rclone lsf --dirs-only 'e2e:$C' | grep '^marked'"
  check_eq "rclone md5sum of the block-list blob equals md5sum of the local copy" \
    "$(md5sum <"$E2E_TMP/large.bin" | cut -d' ' -f1)" \
    eval "rclone md5sum 'e2e:$C/large.bin' | cut -d' ' -f1"
  mkdir -p "$E2E_TMP/check" && cp "$E2E_TMP/large.bin" "$E2E_TMP/check/"
  check "rclone check against the local copy: every hash matches" \
    rclone check --one-way "$E2E_TMP/check" "e2e:$C"
  check_eq "rclone lsl shows the touch -d time set after the file was closed" \
    "2020-02-03 04:05:06.789000000 large.bin" \
    eval "rclone lsl 'e2e:$C/large.bin' | awk '{print \$2, \$3, \$4}'"
  E2E_MOUNT_OPTS=dir_markers e2e_mount
  rmdir "$M/marked/empty inside"
  mv "$M/marked" "$M/moved"
  check_eq "mtime and mode after a remount" "2020-02-03 04:05:06.789000000 600" \
    eval "stat -c '%y %a' '$M/large.bin' | sed 's/ +0000//'"
  e2e_unmount
  check_eq "rmdir removed the marker that made marked/ visible" "" \
    eval "rclone lsf --dirs-only 'e2e:$C' | grep -E '^(marked|moved)/' || true"
  check "fsck --dir-markers: directories made without the option have no marker" \
    expect_status 1 "^missing-marker: /docs: no directory marker blob" -- \
    stampfs fsck "$C" --dir-markers
  check "fsck --dir-markers: /moved has its marker" \
    bash -c "! stampfs fsck '$C' --dir-markers | grep '^missing-marker: /moved'"
else
  echo "  SKIP  rclone is not installed (scripts/setup installs it)"
fi

e2e_daemon_check
e2e_finish
