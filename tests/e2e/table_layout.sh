#!/usr/bin/env bash
# e2e: what a mount writes to Azure, read back directly with the storage
# library (tests/e2e/tools/stampfs_inspect), not through the mount.
#
#   bash tests/e2e/table_layout.sh BUILD_DIR
#
# The table holds one entity per directory entry, keyed by directory
# (PartitionKey = escaped parent path, RowKey = escaped name), each directory
# has a "." row in its own partition, names escape '#', '%', '?', '\' and a
# leading '~' as %XX and too-long keys are hashed; file data is in blobs named
# by path. Renames, unlinks and rmdirs leave no stale rows or blobs.
source "$(dirname "$0")/lib.bash" "$@"

[[ -x $E2E_INSPECT ]] || e2e_fatal "stampfs_inspect" "$E2E_INSPECT is not built (cmake target stampfs_inspect)"
C=$E2E_CONTAINER

inspect() { "$E2E_INSPECT" "$@"; }
# All entities, or one partition's: PK<TAB>RK<TAB>name=value...
entities() { inspect entities "$C" "$@"; }
blobs() { inspect blobs "$C"; }

# prop PK RK NAME: the value of property NAME of entity (PK, RK); fails when
# the entity or the property is missing.
prop() {
  entities "$1" | PK=$1 RK=$2 NAME=$3 awk -F'\t' '
    $1 == ENVIRON["PK"] && $2 == ENVIRON["RK"] {
      found = 1
      for (i = 3; i <= NF; i++) {
        eq = index($i, "=")
        if (substr($i, 1, eq - 1) == ENVIRON["NAME"]) { print substr($i, eq + 1); has = 1 }
      }
    }
    END {
      if (!found) { print "no entity (" ENVIRON["PK"] ", " ENVIRON["RK"] ")" > "/dev/stderr"; exit 1 }
      if (!has) { print "entity has no property " ENVIRON["NAME"] > "/dev/stderr"; exit 2 }
    }'
}
# has_entity PK RK / no_entity PK RK
has_entity() {
  entities "$1" | PK=$1 RK=$2 awk -F'\t' '$1 == ENVIRON["PK"] && $2 == ENVIRON["RK"] { f = 1 } END { exit !f }'
}
no_entity() {
  if has_entity "$@"; then
    echo "entity ($1, $2) still exists:"
    entities "$1" | grep -F "$2"
    return 1
  fi
}
# Row keys of a partition, one per line.
row_keys() { entities "$1" | cut -f2; }
# Partition keys of the whole table, sorted, unique.
partitions() { entities | cut -f1 | sort -u; }
# blob_field NAME COLUMN (2 = size, 3 = etag); fails when the blob is missing.
blob_field() {
  blobs | B=$1 COL=$2 awk -F'\t' '$1 == ENVIRON["B"] { print $ENVIRON["COL"]; f = 1 } END { exit !f }'
}
blob_names() { blobs | cut -f1 | sort; }
# Nanosecond mtime of a path as stat shows it.
mtime_ns() {
  local t
  t=$(stat -c %.9Y "$1") || return 1
  echo "${t/./}"
}

e2e_mount

# ---------------------------------------------------------------------------
section "the tool and the key escaping it reports"
check "the default table name is a valid table name" eval '[[ $(inspect table "$C") =~ ^fs[A-Za-z0-9]{1,61}$ ]]'
check_eq "KeyFor(/d1/d2)" "%2Fd1%2Fd2" inspect key /d1/d2
check_eq "KeyFor(/)" "%2F" inspect key /
check_eq "KeyFor(a#b%c?d\\e)" "a%23b%25c%3Fd%5Ce" inspect key 'a#b%c?d\e'
check_eq "KeyFor(~x)" "%7Ex" inspect key '~x'

section "filesystem rows and the root"
check "the ~fs partition has the format row" has_entity "~fs" format
check "the ~fs partition has the inode counter" has_entity "~fs" ino-counter
check "the root has its \".\" row in partition %2F" has_entity "%2F" .

# ---------------------------------------------------------------------------
section "entities keyed by directory"
mkdir -p "$M/d1/d2"
printf 'hello table\n' >"$M/d1/d2/file.txt"
chmod 640 "$M/d1/d2/file.txt"
chown 1000:2000 "$M/d1/d2/file.txt"
head -c 300000 /dev/urandom >"$E2E_TMP/big.bin"
cp "$E2E_TMP/big.bin" "$M/d1/big.bin"
echo hash >"$M/d1/a#b"
echo pct >"$M/d1/100%"
echo q >"$M/d1/what?"
echo bs >"$M/d1/back\\slash"
echo tilde >"$M/d1/~tilde"
echo jp >"$M/d1/日本.txt"
long_pct=$(printf '%%%.0s' $(seq 255))
echo long >"$M/d1/$long_pct"
mkdir "$M/d1/dir #%"
echo inner >"$M/d1/dir #%/inner"
ln -s d2/file.txt "$M/d1/link"
: >"$M/d1/empty"
setfattr -n user.k -v v "$M/d1/big.bin"
e2e_sync
mkdir "$M/d1/gone-dir"

check_eq "partition %2F holds \".\" and d1" ". d1" eval 'echo $(row_keys %2F)'
check_eq "d1's entry is a directory" 040755 prop %2F d1 mode
check "d1's \".\" row is in its own partition %2Fd1" has_entity %2Fd1 .
check_eq "d1's \".\" row names d1's inode" "$(stat -c %i "$M/d1")" prop %2Fd1 . ino
check_eq "d2's entry is in partition %2Fd1" 040755 prop %2Fd1 d2 mode
check "d2's \".\" row is in partition %2Fd1%2Fd2" has_entity %2Fd1%2Fd2 .
check_eq "partition %2Fd1%2Fd2 holds \".\" and file.txt" ". file.txt" eval 'echo $(row_keys %2Fd1%2Fd2)'
F=(%2Fd1%2Fd2 file.txt)
check_eq "file.txt: PartitionKey %2Fd1%2Fd2, RowKey file.txt, inode as stat shows it" "$(stat -c %i "$M/d1/d2/file.txt")" prop "${F[@]}" ino
check_eq "file.txt: mode" 0100640 prop "${F[@]}" mode
check_eq "file.txt: uid" 1000 prop "${F[@]}" uid
check_eq "file.txt: gid" 2000 prop "${F[@]}" gid
check_eq "file.txt: size" 12 prop "${F[@]}" size
check_eq "file.txt: mtime in ns as stat shows it" "$(mtime_ns "$M/d1/d2/file.txt")" prop "${F[@]}" mtime
check_eq "file.txt: blob name" d1/d2/file.txt prop "${F[@]}" blob
check_eq "file.txt: the entity's blob ETag is the blob's" "$(blob_field d1/d2/file.txt 3)" prop "${F[@]}" betag
check_eq "'a#b' has RowKey a%23b" hash eval 'prop %2Fd1 a%23b blob >/dev/null && cat "$M/d1/a#b"'
check_eq "'a#b' entity's blob" "d1/a#b" prop %2Fd1 a%23b blob
check "'100%' has RowKey 100%25" has_entity %2Fd1 100%25
check "'what?' has RowKey what%3F" has_entity %2Fd1 what%3F
check "'back\\slash' has RowKey back%5Cslash" has_entity %2Fd1 back%5Cslash
check "'~tilde' has RowKey %7Etilde" has_entity %2Fd1 %7Etilde
check "'日本.txt' keeps its unicode RowKey" has_entity %2Fd1 日本.txt
# Row keys of d1 (but "." and hashed keys) with a raw '#', '?', '\', a leading
# '~' or a '%' not followed by two hex digits.
raw_chars_in_keys() {
  row_keys %2Fd1 | grep -v -e '^~h' -e '^\.$' | grep -E '[#?\\]|^~|%([^0-9A-F]|[0-9A-F][^0-9A-F]|[0-9A-F]?$)'
}
check "no RowKey holds a raw # ? \\, a leading ~ or a bare %" eval '! raw_chars_in_keys'
long_rk=$(row_keys %2Fd1 | grep '^~h' || true)
check "the 255-'%' name (765 characters escaped) has a hashed RowKey" eval '[[ $long_rk =~ ^~h[0-9a-f]{64}$ ]] || { echo "row keys: $(row_keys %2Fd1)"; false; }'
check_eq "the hashed entry keeps the name in a property" "$long_pct" prop %2Fd1 "$long_rk" name
check_eq "the hashed entry's blob is named by path" "d1/$long_pct" prop %2Fd1 "$long_rk" blob
check_eq "'dir #%' has RowKey 'dir %23%25'" 040755 prop %2Fd1 "dir %23%25" mode
check_eq "'dir #%' has its \".\" row and children in partition '%2Fd1%2Fdir %23%25'" ". inner" eval 'echo $(row_keys "%2Fd1%2Fdir %23%25")'
check_eq "the symlink's entity holds its target" d2/file.txt prop %2Fd1 link target
check_eq "the symlink's entity is a link" 0120777 prop %2Fd1 link mode
check "the symlink has no blob" eval '! prop %2Fd1 link blob 2>/dev/null'
check "a directory has no blob property" eval '! prop %2Fd1 d2 blob 2>/dev/null'
check_eq "the xattr is in the entity" "hex:06000000757365722e6b0100000076" prop %2Fd1 big.bin xattr
check_eq "the table has exactly the expected partitions" "$(printf '%s\n' "%2F" "%2Fd1" "%2Fd1%2Fd2" "%2Fd1%2Fdir %23%25" "%2Fd1%2Fgone-dir" "~fs" | sort)" partitions

# ---------------------------------------------------------------------------
section "blobs named by path"
expected_blobs() {
  printf '%s\n' "d1/d2/file.txt" "d1/big.bin" "d1/a#b" "d1/100%" "d1/what?" "d1/~tilde" \
    "d1/日本.txt" "d1/$long_pct" "d1/dir #%/inner" "d1/empty" | sort
}
# The blob of 'back\slash' is checked on its own below.
# A '\' in a file name is stored as U+F05C in its blob name (the service reads '\' as '/').
bs_blob=$'d1/back\xef\x81\x9cslash'
blob_names_but_backslash() { blob_names | grep -v -x -F -e 'd1/back\\slash' -e 'd1/back/slash' -e "$bs_blob"; }
check_eq "the container holds exactly one blob per file (no directories, no symlinks)" "$(expected_blobs)" blob_names_but_backslash
# The Blob service turns '\' in a blob name into '/': a blob named
# "d1/back\slash" is stored as "d1/back/slash", the path of file "slash" in a
# directory "back". The entity must name a blob that really exists under
# that name, and no other path's.
backslash_blob=$(prop %2Fd1 back%5Cslash blob)
# (Both listings print a backslash as two.)
check "the blob named in the entity of 'back\\slash' exists under that name" eval 'blobs | cut -f1 | grep -qxF -- "$backslash_blob" || {
  echo "the entity names blob $backslash_blob; the container has: $(blobs | cut -f1 | grep back)"; false; }'
check "the blob of 'back\\slash' is not the blob of the path d1/back/slash" eval '! blobs | cut -f1 | grep -qxF d1/back/slash'

check_eq "blob d1/d2/file.txt has the file's size" 12 blob_field d1/d2/file.txt 2
check "blob d1/d2/file.txt holds the file's content" eval 'inspect cat "$C" d1/d2/file.txt | cmp - "$M/d1/d2/file.txt" &&
  [[ $(inspect cat "$C" d1/d2/file.txt) == "hello table" ]]'
check_eq "blob d1/big.bin has the file's size" 300000 blob_field d1/big.bin 2
check "blob d1/big.bin holds the file's content" eval 'inspect cat "$C" d1/big.bin | cmp - "$E2E_TMP/big.bin"'
check_eq "blob 'd1/dir #%/inner' holds its content" inner inspect cat "$C" "d1/dir #%/inner"
check_eq "the blob of 'back\\slash' is named with U+F05C" "$bs_blob" echo "$backslash_blob"
check_eq "blob 'd1/back\\slash' holds its content" bs inspect cat "$C" "$bs_blob"
check_eq "blob of the 255-'%' name holds its content" long inspect cat "$C" "d1/$long_pct"
check_eq "an empty file has an empty blob" 0 blob_field d1/empty 2
check_eq "the blob's metadata carries (at least) mode, uid, gid, mtime" "meta:gid meta:mode meta:mtime meta:uid" \
  eval 'blobs | awk -F"\t" "\$1 == \"d1/big.bin\"" | cut -f4- | tr "\t" "\n" | cut -d= -f1 | grep -x -e meta:gid -e meta:mode -e meta:mtime -e meta:uid | sort | xargs'
# RFC 3339 with nanoseconds, the form rclone reads (issue 15).
rfc3339_of_ns() { printf '%s.%09dZ' "$(date -u -d "@$(($1 / 1000000000))" +%Y-%m-%dT%H:%M:%S)" $(($1 % 1000000000)); }
check_eq "the blob's mtime metadata is the file's mtime (RFC 3339)" "$(rfc3339_of_ns "$(mtime_ns "$M/d1/big.bin")")" \
  eval 'blobs | awk -F"\t" "\$1 == \"d1/big.bin\"" | tr "\t" "\n" | sed -n "s/^meta:mtime=//p"'

# ---------------------------------------------------------------------------
section "the \".\" row changes with every entry change"
touched_before=$(prop %2Fd1%2Fd2 . touched)
check "create in d2" eval 'echo new >"$M/d1/d2/new.txt" && e2e_sync'
check "d2's \".\" row was merged by the create" eval '[[ $(prop %2Fd1%2Fd2 . touched) != "$touched_before" ]]'

# ---------------------------------------------------------------------------
section "rename, unlink, rmdir leave no stale rows or blobs"
ino=$(stat -c %i "$M/d1/d2/file.txt")
check "mv d1/d2/file.txt d1/moved.txt" mv "$M/d1/d2/file.txt" "$M/d1/moved.txt"
check "the old entity is gone" no_entity %2Fd1%2Fd2 file.txt
check_eq "the new entity is in %2Fd1 with the same inode" "$ino" prop %2Fd1 moved.txt ino
check_eq "the new entity names the new blob" d1/moved.txt prop %2Fd1 moved.txt blob
check_eq "the new entity's blob ETag is the new blob's" "$(blob_field d1/moved.txt 3)" prop %2Fd1 moved.txt betag
check "the old blob is gone" eval '! blob_field d1/d2/file.txt 2 >/dev/null'
check_eq "the new blob holds the content" "hello table" inspect cat "$C" d1/moved.txt
check "mv 'd1/dir #%' d1/renamed (a directory with a child)" mv "$M/d1/dir #%" "$M/d1/renamed"
check_eq "the old directory's partition is empty (no \".\" row either)" "" entities "%2Fd1%2Fdir %23%25"
check "the old directory's entry is gone" no_entity %2Fd1 "dir %23%25"
check_eq "the new partition %2Fd1%2Frenamed holds \".\" and the child" ". inner" eval 'echo $(row_keys %2Fd1%2Frenamed)'
check_eq "the child's entity names its new blob" d1/renamed/inner prop %2Fd1%2Frenamed inner blob
check "the child's old blob is gone" eval '! blob_field "d1/dir #%/inner" 2 >/dev/null'
check_eq "the child's new blob holds its content" inner inspect cat "$C" d1/renamed/inner
check "rm d1/100%" rm "$M/d1/100%"
check "the unlinked file's entity is gone" no_entity %2Fd1 100%25
check "the unlinked file's blob is gone" eval '! blob_field "d1/100%" 2 >/dev/null'
check "rmdir d1/gone-dir" rmdir "$M/d1/gone-dir"
check "the removed directory's entry is gone" no_entity %2Fd1 gone-dir
check_eq "the removed directory's \".\" row is gone" "" entities %2Fd1%2Fgone-dir
check "overwrite moved.txt" eval 'printf "rewritten\n" >"$M/d1/moved.txt" && e2e_sync'
check_eq "the overwritten blob holds the new content" rewritten inspect cat "$C" d1/moved.txt
check_eq "the entity's size follows the overwrite" 10 prop %2Fd1 moved.txt size
check_eq "the entity's blob ETag follows the overwrite" "$(blob_field d1/moved.txt 3)" prop %2Fd1 moved.txt betag
check "setfattr -x removes the xattr property" eval 'setfattr -x user.k "$M/d1/big.bin" && ! prop %2Fd1 big.bin xattr 2>/dev/null'
check_eq "the table has exactly the expected partitions after the changes" "$(printf '%s\n' "%2F" "%2Fd1" "%2Fd1%2Fd2" "%2Fd1%2Frenamed" "~fs" | sort)" partitions
expected_blobs_after() {
  printf '%s\n' "d1/moved.txt" "d1/d2/new.txt" "d1/big.bin" "d1/a#b" "d1/what?" "d1/~tilde" \
    "d1/日本.txt" "d1/$long_pct" "d1/renamed/inner" "d1/empty" | sort
}
check_eq "the container holds exactly the expected blobs after the changes" "$(expected_blobs_after)" blob_names_but_backslash

# ---------------------------------------------------------------------------
section "a fresh mount reads the same table"
e2e_remount fresh
check_eq "moved.txt through a fresh mount" rewritten cat "$M/d1/moved.txt"
check_eq "the renamed directory through a fresh mount" inner cat "$M/d1/renamed/inner"
check_eq "the hashed-key file through a fresh mount" long cat "$M/d1/$long_pct"
check_eq "d1 lists what the table holds" "$(printf '%s\n' "a#b" 'back\slash' big.bin d2 empty link moved.txt renamed "what?" 日本.txt "~tilde" "$long_pct" | sort)" \
  eval 'ls -A "$M/d1" | sort'

e2e_daemon_check
e2e_finish
