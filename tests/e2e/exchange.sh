#!/usr/bin/env bash
# e2e: renameat2 RENAME_EXCHANGE of files with data (docs/design.md, "Exchange").
#
#   bash tests/e2e/exchange.sh BUILD_DIR
#
# Checks, on a real mount: two files with data in one directory swap (data,
# inode numbers, sizes), each blob ends up under the path whose data it is
# (what other Azure tools see), no other blob is left; a file open for
# writing across the exchange keeps writing the same file (its new name);
# a file just written (commit=async, not yet committed) and one exchanged
# with a symlink; the same in commit=close mode; a cold remount; kill -9 at
# each exchange crash point (builds with -DSTAMPFS_FAULT_POINTS=ON) leaves
# both names readable, each with one of the two files, and the next mount
# finishes it; the same across two directories (files with data, a symlink,
# a FIFO; kill -9 at each of its crash points); fsck clean; what stays
# refused (EINVAL).
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2317
source "$(dirname "$0")/lib.bash" "$@"

POSIX=$E2E_BUILD_DIR/tests/stampfs_posix
if [[ ! -x $POSIX ]]; then
  echo "e2e: $POSIX not found (build first: scripts/build)" >&2
  exit 2
fi
errno_of() { "$POSIX" "$@" || true; }
blob_names() { "$E2E_INSPECT" blobs "$E2E_CONTAINER" | cut -f1 | sort; }
blob_of() { "$E2E_INSPECT" cat "$E2E_CONTAINER" "$1"; }
# "BLOB:SHA" of every blob under prefix $1 (what another Azure tool reads).
blob_sums() {
  local b
  for b in $(blob_names | grep "^$1"); do echo "$b:$(blob_of "$b" | sha1sum | cut -c1-12)"; done
}
sum_of() { sha1sum <"$1" | cut -c1-12; }
# check_exchange LABEL A B: RENAME_EXCHANGE of A and B swaps their inode numbers.
check_exchange() {
  local ia ib
  ia=$(stat -c %i "$2")
  ib=$(stat -c %i "$3")
  check "$1" "$POSIX" rename exchange "$2" "$3"
  check_eq "$1: inode numbers swapped" "$ib $ia" eval "echo \$(stat -c %i $(printf '%q %q' "$2" "$3"))"
}

e2e_mount
X=$M/x
mkdir -p "$X"
head -c 3000000 /dev/urandom >"$E2E_TMP/big"

section "two files with data in one directory"
run "write them" eval 'echo "small one" >"$X/f1" && cp "$E2E_TMP/big" "$X/f2"'
e2e_sync
check_exchange "RENAME_EXCHANGE" "$X/f1" "$X/f2"
check "f1 holds the big file" cmp "$E2E_TMP/big" "$X/f1"
check_eq "f2 holds the small one" "small one" cat "$X/f2"
check_eq "sizes swapped" "3000000 10" eval 'echo $(stat -c %s "$X/f1" "$X/f2")'
check_eq "each blob under the path whose data it is" \
  "x/f1:$(sum_of "$E2E_TMP/big") x/f2:$(echo "small one" | sha1sum | cut -c1-12)" eval 'echo $(blob_sums x/)'
check_eq "no other blob" "" eval 'blob_names | grep -v "^x/" || true'
check "and back" "$POSIX" rename exchange "$X/f2" "$X/f1"
check_eq "... swapped back" "small one" cat "$X/f1"
check "... f2 is the big file again" cmp "$E2E_TMP/big" "$X/f2"

section "a file open for writing across the exchange"
run "two files" eval 'echo "first" >"$X/w1" && echo "second" >"$X/w2"'
e2e_sync
check "open w1 for appending, exchange, write, close" eval '
  exec 3>>"$X/w1" && echo "more" >&3 && "$POSIX" rename exchange "$X/w1" "$X/w2" &&
  echo "after" >&3 && exec 3>&-'
check_eq "the writes went to the file, now named w2" "first more after" eval 'echo $(cat "$X/w2")'
check_eq "w1 is the other file" "second" cat "$X/w1"
e2e_sync
check_eq "blobs follow" "first more after|second" eval 'echo "$(blob_of x/w2 | tr "\n" " " | sed "s/ $//")|$(blob_of x/w1)"'

section "a file not yet committed, and a symlink"
run "write n1, exchange it at once" eval 'echo "fresh data" >"$X/n1" && "$POSIX" rename exchange "$X/n1" "$X/f1"'
check_eq "swapped" "fresh data|small one" eval 'echo "$(cat "$X/f1")|$(cat "$X/n1")"'
run "a symlink" ln -s target "$X/sl"
check "file with data <-> symlink" "$POSIX" rename exchange "$X/f2" "$X/sl"
check_eq "... swapped" "target" readlink "$X/f2"
check "... sl holds the big file" cmp "$E2E_TMP/big" "$X/sl"
e2e_sync
check_eq "... the file's blob moved with it" "x/sl" eval 'blob_names | grep -E "^x/(f2|sl)$"'

section "a cold remount"
expected="$(sum_of "$X/f1") $(sum_of "$X/n1") $(sum_of "$X/sl") $(readlink "$X/f2")"
e2e_remount fresh
check_eq "the same after a cold remount" "$expected" \
  eval 'echo $(sum_of "$X/f1") $(sum_of "$X/n1") $(sum_of "$X/sl") $(readlink "$X/f2")'

section "across two directories"
run "y/f with data, y/sl a symlink, y/p a FIFO" eval 'mkdir "$M/y" && echo y >"$M/y/f" && ln -s ytarget "$M/y/sl" && mkfifo "$M/y/p"'
e2e_sync
check_exchange "x/f1 <-> y/f" "$X/f1" "$M/y/f"
check_eq "... swapped" "y|fresh data" eval 'echo "$(cat "$X/f1")|$(cat "$M/y/f")"'
check_eq "... each blob under the path whose data it is" "y|fresh data" \
  eval 'echo "$(blob_of x/f1)|$(blob_of y/f)"'
check "x/sl (the big file) <-> y/sl (a symlink)" "$POSIX" rename exchange "$X/sl" "$M/y/sl"
check_eq "... swapped" "ytarget" readlink "$X/sl"
check "... y/sl holds the big file" cmp "$E2E_TMP/big" "$M/y/sl"
check "x/n1 <-> y/p (a FIFO)" "$POSIX" rename exchange "$X/n1" "$M/y/p"
check_eq "... swapped" "fifo|small one" eval 'echo "$(stat -c %F "$X/n1" | cut -d" " -f1)|$(cat "$M/y/p")"'
check_eq "... blobs follow, no other blob" "x/f1 x/w1 x/w2 y/f y/p y/sl" \
  eval 'echo $(blob_names | grep -v "^x/c[12]$")'
expected="$(cat "$X/f1")|$(cat "$M/y/f")|$(readlink "$X/sl")|$(sum_of "$M/y/sl")|$(cat "$M/y/p")"
e2e_remount fresh
check_eq "the same after a cold remount" "$expected" \
  eval 'echo "$(cat "$X/f1")|$(cat "$M/y/f")|$(readlink "$X/sl")|$(sum_of "$M/y/sl")|$(cat "$M/y/p")"'

section "what stays refused"
run "a directory, a hard link" eval 'mkdir "$X/dir" && ln "$X/w1" "$X/hl"'
check_eq "a directory: EINVAL" "EINVAL" errno_of rename exchange "$X/f1" "$X/dir"
check_eq "a directory in another directory: EINVAL" "EINVAL" errno_of rename exchange "$M/y/f" "$X/dir"
check_eq "a hard-linked name: EINVAL" "EINVAL" errno_of rename exchange "$X/f1" "$X/hl"
check_eq "a hard-linked name in another directory: EINVAL" "EINVAL" errno_of rename exchange "$M/y/f" "$X/hl"
check_eq "... untouched" "y|fresh data" eval 'echo "$(cat "$X/f1")|$(cat "$M/y/f")"'
e2e_unmount
check "fsck is clean" "$E2E_STAMPFS" fsck "$E2E_CONTAINER"

section "commit=close"
E2E_MOUNT_OPTS=commit=close e2e_mount
run "two files" eval 'echo "c one" >"$X/c1" && echo "c two" >"$X/c2"'
check "RENAME_EXCHANGE" "$POSIX" rename exchange "$X/c1" "$X/c2"
check_eq "swapped" "c two|c one" eval 'echo "$(cat "$X/c1")|$(cat "$X/c2")"'
check_eq "blobs under their paths" "c two|c one" eval 'echo "$(blob_of x/c1)|$(blob_of x/c2)"'
e2e_unmount

section "kill -9 at the exchange crash points, then remount"
e2e_mount
for point in exchange.after_intent exchange.after_swap exchange.after_copy exchange.after_repoint; do
  K=$M/k-$point
  mkdir -p "$K"
  echo "data of a" >"$K/a"
  echo "data of b" >"$K/b"
  e2e_crash_at "$point" "'$POSIX' rename exchange '$K/a' '$K/b'"
  [[ $(cat "$E2E_TMP/crash.out") == skipped ]] && { echo "  (crash points skipped: no -DSTAMPFS_FAULT_POINTS=ON)"; break; }
  check_eq "$point: the daemon died there" killed cat "$E2E_TMP/crash.out"
  # The restarted mount rolled the exchange forward (or dropped it, before the swap).
  # Before the swap the exchange did not happen; after it, it is finished.
  want="data of b|data of a"
  [[ $point == exchange.after_intent ]] && want="data of a|data of b"
  check_eq "$point: both names read one of the files each" "$want" eval 'echo "$(cat "$K/a")|$(cat "$K/b")"'
  check_eq "$point: each blob holds its name's data" "$(cat "$K/a")|$(cat "$K/b")" \
    eval 'echo "$(blob_of "${K#"$M"/}/a")|$(blob_of "${K#"$M"/}/b")"'
  check_eq "$point: no other blob" "" eval 'blob_names | grep -v "^x/\|^y/\|^k-exchange\.[a-z_]*/[ab]\$" || true'
done
# Across two directories every crash point ends exchanged: the intent is
# written first and rolled forward (claims, one name, the other, blobs).
for point in exchange.after_intent exchange.after_claim exchange.after_first_swap \
  exchange.after_second_swap exchange.after_copy exchange.after_repoint; do
  K=$M/kx-$point
  mkdir -p "$K/p" "$K/q"
  echo "data of a" >"$K/p/a"
  echo "data of b" >"$K/q/b"
  e2e_crash_at "$point" "'$POSIX' rename exchange '$K/p/a' '$K/q/b'"
  [[ $(cat "$E2E_TMP/crash.out") == skipped ]] && break
  check_eq "across, $point: the daemon died there" killed cat "$E2E_TMP/crash.out"
  check_eq "across, $point: finished by the next mount" "data of b|data of a" \
    eval 'echo "$(cat "$K/p/a")|$(cat "$K/q/b")"'
  check_eq "across, $point: each blob holds its name's data" "data of b|data of a" \
    eval 'echo "$(blob_of "${K#"$M"/}/p/a")|$(blob_of "${K#"$M"/}/q/b")"'
  check_eq "across, $point: no other blob" "" \
    eval 'blob_names | grep -v "^x/\|^y/\|^k-exchange\.[a-z_]*/[ab]\$\|^kx-exchange\.[a-z_]*/\(p/a\|q/b\)\$" || true'
done
e2e_unmount
check "fsck is clean after the crashes" "$E2E_STAMPFS" fsck "$E2E_CONTAINER"
e2e_finish
