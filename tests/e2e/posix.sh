# e2e: the POSIX that backup tools use (issue 14).
#
#   bash tests/e2e/posix.sh BUILD_DIR
#
# Checks, on a real mount (as root):
#   - mkfifo, mknod c/b/p, mknod of a regular file and a unix socket made by
#     bind() (perl): their types, modes and st_rdev, also after a cold
#     remount; a FIFO carries data between two processes, and its reads are
#     the kernel's (the daemon counts no read);
#   - chmod/chown/touch/mv/rm of special files;
#   - tar --format=posix of a tree holding every file type, in and back out,
#     compared; rsync -a --devices --specials of it (with a socket too);
#   - renameat2 RENAME_NOREPLACE (EEXIST) and RENAME_EXCHANGE (swapped; EINVAL
#     for what is refused);
#   - the errno of refusals: RENAME_WHITEOUT (EINVAL), fallocate other than
#     mode 0 (EOPNOTSUPP), link of a directory (EPERM);
#   - a directory's st_nlink is 2 + its subdirectories, also after a cold
#     remount;
#   - ctime moves with chmod, chown, utimens, setfattr, an append, ftruncate,
#     rename, ln and the rm of another name, seen at once;
#   - a directory's mtime stays when a child's attributes or data change, and
#     stat answers the same before and after listing it;
#   - tar -cf of a tree right after a cold remount exits 0, also after chmod,
#     touch, xattrs and appends of children.
#   - a file 4,095 characters deep (over Azure's blob name limit) is written,
#     read after a cold remount, moved to the top and back; fsck is clean.
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2317
source "$(dirname "$0")/lib.bash" "$@"

POSIX=$E2E_BUILD_DIR/tests/stampfs_posix
if [[ ! -x $POSIX ]]; then
  echo "e2e: $POSIX not found (build first: scripts/build)" >&2
  exit 2
fi

# "TYPE MODE UID GID RDEV(major:minor, hex) NAME" of every entry under $1, sorted.
tree_listing() {
  (cd "$1" && find . -mindepth 1 -printf '%p\n' | sort | while read -r p; do
    stat -c '%F %a %u %g %t:%T %n' "$p"
  done)
}

reads() {
  "$E2E_STAMPFS" stat --json "$M" | perl -ne 'print "$1\n" if /"ops\.read"\s*:\s*(\d+)/' | head -1
}

# The errno name a failing call printed (stampfs_posix exits 1 then).
errno_of() {
  "$POSIX" "$@" || true
}

bind_socket() {
  perl -MSocket -e 'socket(my $s, PF_UNIX, SOCK_STREAM, 0) or die "socket: $!";
    bind($s, pack_sockaddr_un($ARGV[0])) or die "bind: $!"' "$1"
}

e2e_mount

section "special files"
run "mkfifo" mkfifo -m 0640 "$M/fifo"
run "mknod c" mknod -m 0600 "$M/null" c 1 3
run "mknod b" mknod -m 0660 "$M/loop" b 7 0
run "mknod p" mknod "$M/pipe" p
run "bind() of a unix socket" bind_socket "$M/sock"
run "mknod of a regular file" "$POSIX" mknod-reg "$M/plain"
check_eq "a FIFO's type and mode" "fifo 640" stat -c '%F %a' "$M/fifo"
check_eq "a character device's st_rdev" "character special file 1:3" stat -c '%F %t:%T' "$M/null"
check_eq "a block device's st_rdev" "block special file 7:0" stat -c '%F %t:%T' "$M/loop"
check_eq "a socket" "socket" stat -c '%F' "$M/sock"
check_eq "mknod S_IFREG is an empty regular file" "regular empty file 644 0" \
  stat -c '%F %a %s' "$M/plain"
check "a regular file made by mknod takes data" eval 'echo data > "$M/plain" && [[ $(cat "$M/plain") == data ]]'
before_reads=$(reads)
check_eq "a FIFO carries data between a writer and a reader" "through the fifo" \
  eval '{ echo "through the fifo" > "$M/fifo" & } ; cat "$M/fifo"; wait'
check_eq "the FIFO's data never went through the daemon" "$before_reads" reads
check "chmod, chown and touch of a FIFO" eval 'chmod 0604 "$M/fifo" && chown 12:34 "$M/fifo" && touch -d @1000000000 "$M/fifo"'
check_eq "... shown" "604 12 34 1000000000" stat -c '%a %u %g %Y' "$M/fifo"
run "mkdir d" mkdir "$M/d"
check "mv of a device across directories" mv "$M/loop" "$M/d/loop"
check_eq "... keeps its st_rdev" "block special file 7:0" stat -c '%F %t:%T' "$M/d/loop"
before=$(tree_listing "$M")
e2e_remount fresh
check_eq "every type is the same after a cold remount" "$before" tree_listing "$M"
check "rm of a socket, a FIFO and a device" rm "$M/sock" "$M/pipe" "$M/d/loop"
check_fails "... gone" "No such file" stat "$M/sock"
check_eq "no blob was written for special files" "0" \
  eval '"$E2E_INSPECT" blobs "$E2E_CONTAINER" 2>/dev/null | grep -Ec "^(fifo|null|loop|pipe|sock|d/loop)\b" || true'

section "tar --format=posix of every file type"
SRC=$E2E_TMP/src
OUT=$E2E_TMP/out
run "a local tree of every type" eval '
  mkdir -p "$SRC/tree/sub/deeper" && echo hello > "$SRC/tree/file" &&
  head -c 300000 /dev/urandom > "$SRC/tree/sub/big" && ln -s file "$SRC/tree/link" &&
  mkfifo "$SRC/tree/sub/fifo" && mknod "$SRC/tree/chr" c 1 5 && mknod "$SRC/tree/blk" b 7 1 &&
  chmod 0750 "$SRC/tree/sub" && chown 5:6 "$SRC/tree/file" &&
  touch -h -d @1500000000 "$SRC/tree/link" "$SRC/tree/sub/fifo" "$SRC/tree/file"'
check "tar x into the mount" eval 'tar --format=posix -C "$SRC" -cf - tree | tar --format=posix -C "$M" -xpf -'
check_eq "the mount holds the same tree" "$(tree_listing "$SRC/tree")" tree_listing "$M/tree"
e2e_remount fresh
check "tar c out of the mount right after a cold remount" \
  eval 'mkdir -p "$OUT" && tar --format=posix -C "$M" -cf "$E2E_TMP/out.tar" tree && tar -C "$OUT" -xpf "$E2E_TMP/out.tar"'
check_eq "the tree came back the same" "$(tree_listing "$SRC/tree")" tree_listing "$OUT/tree"
check "contents and times compare" eval 'cmp "$SRC/tree/sub/big" "$OUT/tree/sub/big" &&
  [[ $(stat -c %Y "$OUT/tree/file") == 1500000000 ]] && [[ $(readlink "$OUT/tree/link") == file ]]'

section "rsync -a --devices --specials of every file type"
run "a unix socket in the local tree" bind_socket "$SRC/tree/sock"
check "rsync into the mount" rsync -a --devices --specials "$SRC/tree/" "$M/rs-tree/"
check_eq "the mount holds the same tree" "$(tree_listing "$SRC/tree")" tree_listing "$M/rs-tree"
e2e_remount fresh
check "rsync back out after a cold remount" rsync -a --devices --specials "$M/rs-tree/" "$OUT/rs-tree/"
check_eq "the tree came back the same" "$(tree_listing "$SRC/tree")" tree_listing "$OUT/rs-tree"

section "rename flags"
run "two symlinks and two files" eval 'ln -s ta "$M/a" && ln -s tb "$M/b" && echo one > "$M/f1" && echo two > "$M/f2" && mkfifo "$M/p2"'
check_eq "RENAME_NOREPLACE onto an existing name: EEXIST" "EEXIST" errno_of rename noreplace "$M/a" "$M/b"
check_eq "... nothing moved" "ta tb" eval 'echo $(readlink "$M/a") $(readlink "$M/b")'
check "RENAME_NOREPLACE onto a free name" "$POSIX" rename noreplace "$M/a" "$M/c"
check_eq "RENAME_NOREPLACE of a file across directories onto an existing name: EEXIST" "EEXIST" \
  eval 'echo x > "$M/d/f1"; errno_of rename noreplace "$M/f1" "$M/d/f1"'
check "RENAME_EXCHANGE of a symlink and a FIFO" "$POSIX" rename exchange "$M/c" "$M/p2"
check_eq "... swapped" "fifo ta" eval 'echo $(stat -c %F "$M/c") $(readlink "$M/p2")'
e2e_remount fresh
check_eq "... also after a cold remount" "fifo ta" eval 'echo $(stat -c %F "$M/c") $(readlink "$M/p2")'
check "RENAME_EXCHANGE across directories (a symlink and a file)" "$POSIX" rename exchange "$M/b" "$M/d/f1"
check_eq "... swapped" "x tb" eval 'echo $(cat "$M/b") $(readlink "$M/d/f1")'
check_eq "RENAME_EXCHANGE of two directories: EINVAL" "EINVAL" \
  eval 'mkdir "$M/e1" "$M/e2" && errno_of rename exchange "$M/e1" "$M/e2"'
check_eq "RENAME_EXCHANGE with a missing name: ENOENT" "ENOENT" errno_of rename exchange "$M/b" "$M/none"
check_eq "... the files are untouched" "one two" eval 'echo $(cat "$M/f1") $(cat "$M/f2")'

section "refusals (docs/semantics.md, Errors returned on purpose)"
check_eq "renameat2 RENAME_WHITEOUT: EINVAL" "EINVAL" errno_of rename whiteout "$M/f1" "$M/wo"
check_eq "fallocate PUNCH_HOLE: EOPNOTSUPP" "EOPNOTSUPP" errno_of fallocate-punch "$M/f1"
check_eq "link of a directory: EPERM" "EPERM" python3 -c 'import errno, os, sys
try:
    os.link(sys.argv[1], sys.argv[2])
except OSError as e:
    print(errno.errorcode[e.errno])' "$M/d" "$M/d-link"
check_eq "... nothing changed" "one 0" eval 'echo $(cat "$M/f1") $(ls "$M" | grep -c -e "^wo$" -e "^d-link$")'

section "link counts"
run "mkdir n, n/a, n/b and a file" eval 'mkdir -p "$M/n/a" "$M/n/b" && touch "$M/n/f"'
check_eq "st_nlink of a directory is 2 + its subdirectories" "4" stat -c %h "$M/n"
check "rmdir n/a" rmdir "$M/n/a"
check_eq "... 3" "3" stat -c %h "$M/n"
check "mv n/b to the root" mv "$M/n/b" "$M/nb"
check_eq "... 2" "2" stat -c %h "$M/n"
e2e_remount fresh
check_eq "st_nlink after a cold remount, before listing" "2" stat -c %h "$M/n"
check_eq "the root's" "$((2 + $(find "$M" -mindepth 1 -maxdepth 1 -type d | wc -l)))" stat -c %h "$M"
check_eq "find agrees with every directory's st_nlink" "" eval '
  find "$M" -type d | while read -r dir; do
    n=$((2 + $(find "$dir" -mindepth 1 -maxdepth 1 -type d | wc -l)))
    [[ $(stat -c %h "$dir") == "$n" ]] || echo "$dir: $(stat -c %h "$dir") != $n"
  done'

section "ctime"
run "a file" eval 'echo data > "$M/t" && touch -d @1000000000 "$M/t"'
check "chmod moves ctime at once" eval 'c0=$(stat -c %Z "$M/t"); sleep 1.1; chmod 0600 "$M/t"; (( $(stat -c %Z "$M/t") > c0 ))'
check "ftruncate shows its ctime with its mtime, at once" eval '
  sleep 1.1; perl -e "open(my \$f, q(+<), \$ARGV[0]) or die; truncate(\$f, 2) or die;
    my @s = stat(\$f); exit(\$s[10] >= \$s[9] && \$s[9] > 1000000000 ? 0 : 1)" "$M/t"'
check "rename moves the renamed entry's ctime" eval 'c0=$(stat -c %Z "$M/t"); sleep 1.1; mv "$M/t" "$M/t2"; (( $(stat -c %Z "$M/t2") > c0 ))'
check "an append moves ctime at once" eval 'c0=$(stat -c %Z "$M/t2"); sleep 1.1; echo more >> "$M/t2"; (( $(stat -c %Z "$M/t2") > c0 ))'
check "chown moves ctime at once" eval 'c0=$(stat -c %Z "$M/t2"); sleep 1.1; chown 7:8 "$M/t2"; (( $(stat -c %Z "$M/t2") > c0 ))'
check "touch (utimens) moves ctime at once" eval 'c0=$(stat -c %Z "$M/t2"); sleep 1.1; touch -d @1100000000 "$M/t2"; (( $(stat -c %Z "$M/t2") > c0 ))'
check "setfattr moves ctime at once" eval 'c0=$(stat -c %Z "$M/t2"); sleep 1.1; setfattr -n user.k -v v "$M/t2"; (( $(stat -c %Z "$M/t2") > c0 ))'
check "ln moves the file's ctime at once, on every name" eval 'c0=$(stat -c %Z "$M/t2"); sleep 1.1; ln "$M/t2" "$M/t3";
  (( $(stat -c %Z "$M/t2") > c0 && $(stat -c %Z "$M/t3") > c0 ))'
check "rm of one name moves the other's ctime at once" eval 'c0=$(stat -c %Z "$M/t2"); sleep 1.1; rm "$M/t3"; (( $(stat -c %Z "$M/t2") > c0 ))'

section "directory times tar can trust"
run "a tree" eval 'mkdir -p "$M/w/x/y" && for i in 1 2 3; do echo $i > "$M/w/f$i"; echo $i > "$M/w/x/g$i"; done && touch -d @1200000000 "$M/w/x"'
e2e_remount fresh
check "stat of a directory is the same before and after listing it" eval '
  a=$(stat -c "%Y %Z %h" "$M/w/x"); ls -l "$M/w/x" >/dev/null; b=$(stat -c "%Y %Z %h" "$M/w/x");
  [[ $a == "$b" ]] || { echo "$a then $b"; false; }'
check_eq "... and keeps a utimens" "1200000000" stat -c %Y "$M/w/x"
e2e_remount fresh
check "tar -cf of the tree right after a cold remount exits 0" tar -cf /dev/null -C "$M" w
check "chmod, touch, xattr and an append inside do not move the directory's mtime" eval '
  a=$(stat -c "%Y %Z" "$M/w/x"); sleep 1.1;
  chmod 0600 "$M/w/x/g1"; touch "$M/w/x/g2"; echo more >> "$M/w/x/g3";
  setfattr -n user.k -v v "$M/w/x/g1" 2>/dev/null || true; chmod 0700 "$M/w/x/y";
  b=$(stat -c "%Y %Z" "$M/w/x"); [[ $a == "$b" ]] || { echo "$a then $b"; false; }'
check "... and tar -cf still exits 0" tar -cf /dev/null -C "$M" w
check "a create moves it" eval 'a=$(stat -c %Y "$M/w/x"); touch "$M/w/x/new"; (( $(stat -c %Y "$M/w/x") > a ))'
e2e_remount fresh
check "tar -cf after another cold remount exits 0" tar -cf /dev/null -C "$M" w
check "tar -cf of the whole mount exits 0" tar --format=posix -cf /dev/null -C "$M" .

section "a path longer than a blob name (PATH_MAX - 1, as pjdfstest's deepest)"
# 31 directories and a file of 127-character names below the mount: 4,095
# characters, over Azure's 1,024 (the data goes to a hashed blob name).
LONG_NAME=$(printf 'n%.0s' $(seq 127))
deep() { local i; for i in $(seq 31); do cd "$LONG_NAME" || return 1; done; }
run "mkdir, cd and write 31 levels down" eval '(cd "$M" && for i in $(seq 31); do mkdir "$LONG_NAME" && cd "$LONG_NAME" || exit 1; done &&
  head -c 100000 /dev/urandom >"$E2E_TMP/long.data" && cp "$E2E_TMP/long.data" "${LONG_NAME:1}")'
check_eq "its path from the mount is 4,095 characters" 4095 eval '(cd "$M" && deep && p=$(pwd) && echo $(( ${#p} - ${#M} + ${#LONG_NAME} )))'
e2e_remount fresh
check "read back after a cold remount" eval '(cd "$M" && deep && cmp "${LONG_NAME:1}" "$E2E_TMP/long.data")'
check "mv of it to the top: the data follows" eval '(cd "$M" && deep && mv "${LONG_NAME:1}" "$(printf "../%.0s" $(seq 31))up") && cmp "$M/up" "$E2E_TMP/long.data"'
check "and back down" eval 'mv "$M/up" "$M/back" && (cd "$M" && deep && mv "$(printf "../%.0s" $(seq 31))back" here) && (cd "$M" && deep && cmp here "$E2E_TMP/long.data")'
e2e_unmount
check "fsck of the container (the deep tree in it): clean" "$E2E_STAMPFS" fsck "$E2E_CONTAINER"

e2e_finish
