#!/usr/bin/env bash
# e2e: hard links (docs/design.md "Hard links").
#
#   bash tests/e2e/hard_links.sh BUILD_DIR
#
# Checks, on a real mount: ln within and across directories (one inode,
# st_nlink on every name), a write through one name read through another at
# once and from a second mount after the TTL, unlink of the name the blob is
# named by (the blob moves to a surviving name), rename over a linked name,
# cp -al of a tree and rsync -aH in and back out with link counts compared;
# ln of a symlink, a FIFO and a device, cp -al and rsync -aH of trees holding
# symlinks and FIFOs (counts and types as on local disk); a directory rename
# above linked names (the blob moves along, the record's paths follow, a new
# file at the old path commits cleanly); counts after a cold remount, fsck clean; kill -9 at each link crash point
# (builds with -DSTAMPFS_FAULT_POINTS=ON) leaves every name readable (the
# last name's unlink: the name gone, and fsck --repair does not bring it back) and fsck
# --repair a clean table; the same ln in commit=close mode.
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/lib.bash" "$@"

M2=$E2E_TMP/mnt2
blob_names() { "$E2E_INSPECT" blobs "$E2E_CONTAINER" | cut -f1 | sort; }
# "LINKS PATH" of every file under $1, sorted by path.
link_counts() { (cd "$1" && find . -type f -printf '%n %p\n' | sort -k2); }
# The groups of names sharing an inode under $1: one line per inode, names sorted.
link_groups() {
  (cd "$1" && find . -type f -printf '%i %p\n' | sort -k2 |
    awk '{g[$1] = g[$1] " " $2} END {for (i in g) print g[i]}' | sort)
}

e2e_mount

section "ln within and across directories"
L=$M/ln
mkdir -p "$L/a" "$L/b"
echo "first version" >"$L/a/f"
run "ln in one directory" ln "$L/a/f" "$L/a/g"
run "ln across directories" ln "$L/a/f" "$L/b/h"
check_eq "st_nlink on every name" "3 3 3" eval 'echo $(stat -c %h "$L/a/f" "$L/a/g" "$L/b/h")'
check_eq "one inode" 1 eval 'stat -c %i "$L/a/f" "$L/a/g" "$L/b/h" | sort -u | wc -l'
check_eq "ls -l shows the count" 3 eval 'ls -l "$L/b" | awk "/ h\$/ {print \$2}"'
check_eq "the data through another name" "first version" cat "$L/b/h"
run "write through one name" eval 'echo "second version" >"$L/b/h"'
check_eq "read through another name at once" "second version" cat "$L/a/g"
check_eq "sizes agree" "15 15 15" eval 'echo $(stat -c %s "$L/a/f" "$L/a/g" "$L/b/h")'
run "chmod through one name" chmod 0600 "$L/a/g"
check_eq "mode on another name" 600 stat -c %a "$L/b/h"
e2e_sync
check_eq "one blob, named by the first name" "ln/a/f" eval 'blob_names | grep "^ln/"'

section "a second mount"
first_cache=$E2E_CACHE
e2e_new_cache
e2e_mount "$M2"
check_eq "the second mount sees the count" "3 3 3" eval 'echo $(stat -c %h "$M2/ln/a/f" "$M2/ln/a/g" "$M2/ln/b/h")'
run "write through the second mount" eval 'echo "third version" >"$M2/ln/a/f"'
e2e_sync "$M2"
sleep 2  # the first mount's attribute TTL
check_eq "the first mount reads it through another name after the TTL" "third version" cat "$L/b/h"
e2e_unmount "$M2"
E2E_CACHE=$first_cache

section "unlink and rename"
run "rm of the name the blob is named by" rm "$L/a/f"
check_eq "the other names keep the data" "third version|third version" eval 'echo "$(cat "$L/a/g")|$(cat "$L/b/h")"'
check_eq "their count drops" "2 2" eval 'echo $(stat -c %h "$L/a/g" "$L/b/h")'
check "the blob moved to a surviving name" eval 'b=$(blob_names | grep "^ln/"); [[ $b == ln/a/g || $b == ln/b/h ]]'
echo "other file" >"$L/other"
e2e_sync
run "mv of another file over a linked name" mv "$L/other" "$L/a/g"
check_eq "the replaced name has the new file" "other file" cat "$L/a/g"
check_eq "the remaining name keeps its data" "third version" cat "$L/b/h"
check_eq "its count is 1" 1 stat -c %h "$L/b/h"
run "mv of a linked name across directories" eval 'ln "$L/b/h" "$L/b/h2" && mv "$L/b/h" "$L/a/moved"'
check_eq "renamed link: data and count" "third version 2" eval 'echo "$(cat "$L/a/moved") $(stat -c %h "$L/b/h2")"'
run "rm of the last names" rm "$L/a/moved" "$L/b/h2"
e2e_sync
check_eq "no blob is left" "ln/a/g" eval 'blob_names | grep "^ln/"'

section "cp -al of a tree"
SRC=$M/src
mkdir -p "$SRC/d1/d2" "$SRC/e"
for i in 1 2 3; do echo "file $i" >"$SRC/d1/f$i"; done
echo deep >"$SRC/d1/d2/deep"
echo top >"$SRC/top"
e2e_sync
run "cp -al" cp -al "$SRC" "$M/snap"
check_eq "every file has two names" "2" eval 'find "$M/snap" -type f -printf "%n\n" | sort -u'
check_eq "the snapshot's names share the source's inodes" "$(cd "$SRC" && find . -type f -printf '%i %p\n' | sort -k2)" \
  eval 'cd "$M/snap" && find . -type f -printf "%i %p\n" | sort -k2'
run "rm -r of the source" rm -r "$SRC"
check_eq "the snapshot keeps every file" "file 1 file 2 file 3 deep top" \
  eval 'echo $(cat "$M/snap/d1/f1" "$M/snap/d1/f2" "$M/snap/d1/f3" "$M/snap/d1/d2/deep" "$M/snap/top")'
check_eq "with one link each" "1" eval 'find "$M/snap" -type f -printf "%n\n" | sort -u'

section "rsync -aH in and back out"
LOC=$E2E_TMP/local
mkdir -p "$LOC/x/y" "$LOC/z"
echo one >"$LOC/x/one"
ln "$LOC/x/one" "$LOC/x/y/one-again"
ln "$LOC/x/one" "$LOC/z/one-thrice"
echo two >"$LOC/z/two"
ln "$LOC/z/two" "$LOC/two-top"
echo single >"$LOC/single"
run "rsync -aH into the mount" rsync -aH "$LOC/" "$M/rs/"
check_eq "link counts on the mount" "$(link_counts "$LOC")" link_counts "$M/rs"
check_eq "the same names share inodes" "$(link_groups "$LOC")" link_groups "$M/rs"
run "rsync -aH back out" rsync -aH "$M/rs/" "$E2E_TMP/back/"
check_eq "link counts back out" "$(link_counts "$LOC")" link_counts "$E2E_TMP/back"
check_eq "groups back out" "$(link_groups "$LOC")" link_groups "$E2E_TMP/back"
check "the data back out" diff -r "$LOC" "$E2E_TMP/back"

section "links of symlinks, FIFOs and devices"
# "TYPE LINKS PATH" / inode groups of everything under $1 but directories.
node_counts() { (cd "$1" && find . ! -type d -printf '%y %n %p\n' | sort -k3); }
node_groups() {
  (cd "$1" && find . ! -type d -printf '%i %p\n' | sort -k2 |
    awk '{g[$1] = g[$1] " " $2} END {for (i in g) print g[i]}' | sort)
}
S=$M/sp
mkdir -p "$S/a" "$S/b"
ln -s "target of sl" "$S/a/sl"
mkfifo -m 0640 "$S/a/fifo"
mknod -m 0600 "$S/a/null" c 1 3
run "ln of a symlink" ln -P "$S/a/sl" "$S/b/sl2"
check_eq "both names: a symlink, one inode, st_nlink 2" "symbolic link 2 1" \
  eval 'echo "$(stat -c %F "$S/b/sl2") $(stat -c %h "$S/a/sl") $(stat -c %i "$S/a/sl" "$S/b/sl2" | sort -u | wc -l)"'
check_eq "readlink through the new name" "target of sl" readlink "$S/b/sl2"
run "ln of a FIFO" ln "$S/a/fifo" "$S/b/fifo2"
check_eq "both names: a FIFO, mode 640, st_nlink 2" "fifo 640 2|fifo 640 2" \
  eval 'echo "$(stat -c "%F %a %h" "$S/a/fifo")|$(stat -c "%F %a %h" "$S/b/fifo2")"'
check_eq "the FIFO carries data from one name to the other" "through the fifo" \
  eval 'timeout 10 cat "$S/b/fifo2" & sleep 0.2; echo "through the fifo" >"$S/a/fifo"; wait'
run "ln of a character device" ln "$S/a/null" "$S/b/null2"
check_eq "the device number and count through the new name" "1,3 2" stat -c "%t,%T %h" "$S/b/null2"
run "rm of the first symlink name" rm "$S/a/sl"
check_eq "the other name keeps the target, st_nlink 1" "target of sl 1" \
  eval 'echo "$(readlink "$S/b/sl2") $(stat -c %h "$S/b/sl2")"'
run "mv of a linked FIFO name across directories" mv "$S/b/fifo2" "$S/fifo3"
check_eq "both names after the mv" "2 2" eval 'echo $(stat -c %h "$S/a/fifo" "$S/fifo3")'

section "cp -al and rsync -aH of trees holding symlinks and FIFOs"
# mk_nodes DIR: files, symlinks and a FIFO, some hard-linked.
mk_nodes() {
  mkdir -p "$1/x/y" "$1/z"
  echo data >"$1/x/f"
  ln -s f "$1/x/sl"
  ln -s ../x/f "$1/z/rel"
  ln -P "$1/x/sl" "$1/x/y/sl-again"
  mkfifo "$1/z/fifo"
  ln "$1/z/fifo" "$1/x/fifo-again"
  ln "$1/x/f" "$1/z/f-again"
}
mk_nodes "$E2E_TMP/nodes"
cp -al "$E2E_TMP/nodes" "$E2E_TMP/nodes-snap"
mk_nodes "$M/nodes"
run "cp -al on the mount" cp -al "$M/nodes" "$M/nodes-snap"
check_eq "link counts and types as on local disk" "$(node_counts "$E2E_TMP/nodes-snap")" node_counts "$M/nodes-snap"
check_eq "the snapshot's names share the source's inodes" "$(cd "$M/nodes" && find . ! -type d -printf '%i %p\n' | sort -k2)" \
  eval 'cd "$M/nodes-snap" && find . ! -type d -printf "%i %p\n" | sort -k2'
rm -rf "$E2E_TMP/nodes-snap"
run "rsync -aH into the mount" rsync -aH "$E2E_TMP/nodes/" "$M/rs-nodes/"
check_eq "link counts and types on the mount" "$(node_counts "$E2E_TMP/nodes")" node_counts "$M/rs-nodes"
check_eq "the same names share inodes" "$(node_groups "$E2E_TMP/nodes")" node_groups "$M/rs-nodes"
run "rsync -aH back out" rsync -aH "$M/rs-nodes/" "$E2E_TMP/nodes-back/"
check_eq "link counts and types back out" "$(node_counts "$E2E_TMP/nodes")" node_counts "$E2E_TMP/nodes-back"
check_eq "groups back out" "$(node_groups "$E2E_TMP/nodes")" node_groups "$E2E_TMP/nodes-back"
check_eq "symlink targets back out" "f|../x/f|f" \
  eval 'echo "$(readlink "$E2E_TMP/nodes-back/x/sl")|$(readlink "$E2E_TMP/nodes-back/z/rel")|$(readlink "$E2E_TMP/nodes-back/x/y/sl-again")"'

section "a directory rename above linked names"
mkdir -p "$M/dr/a" "$M/dr/b"
echo "linked data" >"$M/dr/a/f"
ln "$M/dr/a/f" "$M/dr/b/g"
e2e_sync
run "mv of the directory holding the blob's name" mv "$M/dr/a" "$M/dr/a2"
check_eq "the blob moved along" "dr/a2/f" eval 'blob_names | grep "^dr/"'
run "a new file at the old path" eval 'mkdir "$M/dr/a" && echo "new file" >"$M/dr/a/f" && sync "$M/dr/a/f"'
check_eq "its data, and no conflict copy" "new file 0" \
  eval 'echo "$(cat "$M/dr/a/f") $(find "$M/dr" -name "*.conflict-*" | wc -l)"'
run "mv of the other name's directory, then rm of the blob's name" \
  eval 'mv "$M/dr/b" "$M/dr/b2" && rm "$M/dr/a2/f"'
e2e_sync
check_eq "the blob moved to the surviving name's new path" "dr/a/f dr/b2/g" eval 'echo $(blob_names | grep "^dr/")'
check_eq "it reads the data, st_nlink 1" "linked data 1" eval 'echo "$(cat "$M/dr/b2/g") $(stat -c %h "$M/dr/b2/g")"'

section "cold remount and fsck"
before=$(link_counts "$M")
nodes_before=$(node_counts "$M/sp")$(node_counts "$M/nodes-snap")$(node_counts "$M/rs-nodes")
e2e_remount fresh
check_eq "link counts after a cold remount" "$before" link_counts "$M"
check_eq "symlink and special file counts after a cold remount" "$nodes_before" \
  eval 'echo "$(node_counts "$M/sp")$(node_counts "$M/nodes-snap")$(node_counts "$M/rs-nodes")"'
check_eq "the symlink's target after a cold remount" "target of sl" readlink "$M/sp/b/sl2"
check_eq "data after a cold remount" "one" cat "$M/rs/z/one-thrice"
e2e_unmount
check "fsck is clean" "$E2E_STAMPFS" fsck "$E2E_CONTAINER"

section "kill -9 at the link crash points, then remount and fsck --repair"
# names_readable COUNTS DATA PATH...: every name of the file that is left
# reads DATA; with COUNTS=counts, st_nlink on each is the number of names
# (before fsck --repair a crash may leave it one too high: docs/semantics.md).
names_readable() {
  local counts=$1 want=$2 n=0 p
  shift 2
  for p in "$@"; do
    [[ -e $p ]] || continue
    n=$((n + 1))
    [[ $(cat "$p") == "$want" ]] || { echo "$p: $(cat "$p")"; return 1; }
  done
  ((n > 0)) || { echo "no name left"; return 1; }
  [[ $counts == counts ]] || return 0
  for p in "$@"; do
    [[ ! -e $p || $(stat -c %h "$p") == "$n" ]] || { echo "$p: nlink $(stat -c %h "$p"), names $n"; return 1; }
  done
}
e2e_mount
mkdir -p "$M/k/a" "$M/k/b"
for point in link.after_record link.after_mark link.after_blob_copy link.after_blob_record link.after_unlink_name; do
  echo "data at $point" >"$M/k/a/$point"
  case $point in
    link.after_record | link.after_mark) op="ln '$M/k/a/$point' '$M/k/b/$point'" ;;
    *) ln "$M/k/a/$point" "$M/k/b/$point"; op="rm '$M/k/a/$point'" ;;
  esac
  e2e_crash_at "$point" "$op"
  [[ $(cat "$E2E_TMP/crash.out") == skipped ]] && { echo "  (crash points skipped: no -DSTAMPFS_FAULT_POINTS=ON)"; break; }
  check_eq "$point: the daemon died there" killed cat "$E2E_TMP/crash.out"
  check "$point: every name left reads the data" names_readable data-only "data at $point" "$M/k/a/$point" "$M/k/b/$point"
done
# The last name, killed after its count went to 0, before its blob and
# record were deleted: the name is gone, and fsck --repair removes the rest
# without bringing the file back (below).
last=link.after_last_count
echo "data at $last" >"$M/k/a/$last" && ln "$M/k/a/$last" "$M/k/b/$last" && rm "$M/k/a/$last"
e2e_crash_at "$last" "rm '$M/k/b/$last'"
if [[ $(cat "$E2E_TMP/crash.out") != skipped ]]; then
  check_eq "$last: the daemon died there" killed cat "$E2E_TMP/crash.out"
  check_fails "$last: the last name is gone" "No such file" stat "$M/k/b/$last"
fi
e2e_unmount
check "fsck --repair" "$E2E_STAMPFS" fsck --repair "$E2E_CONTAINER"
check "fsck is clean after the repair" "$E2E_STAMPFS" fsck "$E2E_CONTAINER"
e2e_mount
# The repair is another process's change: the restarted mount's cached
# records (the last point's was read just before) show it after the TTL.
sleep $((E2E_ATTR_TIMEOUT + 1))
for point in link.after_record link.after_mark link.after_blob_copy link.after_blob_record link.after_unlink_name; do
  check "$point: after the repair every name reads the data with the right count" \
    names_readable counts "data at $point" "$M/k/a/$point" "$M/k/b/$point"
done
check_fails "$last: fsck --repair did not bring the file back" "No such file" ls "$M/k/a/$last" "$M/k/b/$last"
check_eq "$last: ... nor leave its blob" "0" \
  eval '"$E2E_INSPECT" blobs "$E2E_CONTAINER" 2>/dev/null | grep -c "$last" || true'
e2e_unmount

section "commit=close"
E2E_MOUNT_OPTS="commit=close" e2e_mount
run "write, ln, write through the new name" eval 'echo a >"$M/cc" && ln "$M/cc" "$M/cc2" && echo b >>"$M/cc2"'
check_eq "both names" "a b|a b|2" eval 'echo "$(echo $(cat "$M/cc"))|$(echo $(cat "$M/cc2"))|$(stat -c %h "$M/cc")"'
e2e_unmount
check "fsck is clean" "$E2E_STAMPFS" fsck "$E2E_CONTAINER"

e2e_finish
