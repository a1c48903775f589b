#!/usr/bin/env bash
# e2e: the namespace through a real mount, with real tools.
#
#   bash tests/e2e/namespace.sh BUILD_DIR
#
# Deep trees; names with spaces, unicode, %, #, ?, \, ', ~, a leading ',',
# control bytes and 255 bytes (256 fail with ENAMETOOLONG); chmod/chown/
# touch -d, symlinks and xattrs persisted across a remount with an empty
# cache; renames (over a file, RENAME_NOREPLACE, mv -T, directories with
# children); rmdir; hard link refusals (directories: EPERM); find, du, tar, cp -a, git; a
# directory of 5,000 entries.
source "$(dirname "$0")/lib.bash" "$@"

PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3

# Byte length of a string (not characters).
bytes() {
  local LC_ALL=C
  echo "${#1}"
}

# Repeats STRING N times.
repeat() {
  local out="" i
  for ((i = 0; i < $2; i++)); do out+=$1; done
  printf '%s' "$out"
}

# The raw errno name of a syscall through Python: "OK" or e.g. "EEXIST".
py_errno() {
  "$PY" - "$@" <<'EOF'
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
op = sys.argv[1]
args = [a.encode("utf-8", "surrogateescape") for a in sys.argv[2:]]
AT_FDCWD = -100
if op == "renameat2":
    rc = libc.renameat2(AT_FDCWD, args[0], AT_FDCWD, args[1], int(args[2]))
elif op == "rename":
    rc = libc.rename(args[0], args[1])
elif op == "link":
    rc = libc.link(args[0], args[1])
elif op == "setxattr":
    rc = libc.setxattr(args[0], args[1], args[2], len(args[2]), int(args[3]))
else:
    sys.exit("unknown op " + op)
print("OK" if rc == 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno())))
EOF
}

e2e_mount

check_eq "statfs reports 255-byte names" 255 stat -f -c %l "$M"
check "the empty root lists nothing" eval '[[ -z $(ls -A "$M") ]]'

# ---------------------------------------------------------------------------
section "read right after write"
# Every later section writes files and reads them back at once (cat, git, tar
# do the same): a close followed by an open must always see the data.
read_after_write() {
  local i bad=0 got
  for ((i = 1; i <= 100; i++)); do
    echo "v$i" >"$M/raw$i" || return 1
    got=$(cat "$M/raw$i" 2>&1)
    if [[ $got != "v$i" ]]; then
      bad=$((bad + 1))
      echo "raw$i: $got"
    fi
  done
  rm -f "$M"/raw*
  echo "$bad of 100 reads right after writing failed"
  ((bad == 0))
}
check "100 x (echo >f; cat f) reads what was written" read_after_write

# ---------------------------------------------------------------------------
section "deep tree"
deep=$M/deep
deepest=$deep
for i in $(seq 1 20); do deepest+="/level$i"; done
check "mkdir -p of 20 levels" mkdir -p "$deepest"
check "the 20th level is a directory" test -d "$deepest"
check "a file 20 levels down" eval 'echo bottom >"$deepest/leaf.txt" && [[ $(cat "$deepest/leaf.txt") == bottom ]]'
check_eq "find sees all 21 directories" 21 eval 'find "$deep" -type d | wc -l'
check_eq "find -type f finds the leaf" "$deepest/leaf.txt" find "$deep" -type f
check "mkdir -p of an existing tree succeeds" mkdir -p "$deepest"
check_fails "mkdir of an existing directory fails" "File exists" mkdir "$deep/level1"
check_fails "mkdir under a file fails" "Not a directory" mkdir "$deepest/leaf.txt/x"
# Azure's blob name limits (1,024 characters, 254 segments; Azurite takes
# more): beyond them the data goes to a hashed blob name (docs/design.md).
long4=$M/long
for c in a b c d; do long4+=/$(printf "$c%.0s" $(seq 250)); done   # blob name: 5 + 4 x 251 characters
check "a file whose blob name is 1,024 characters" eval 'mkdir -p "$long4" && echo ok >"$long4/$(printf "f%.0s" $(seq 15))"'
check "one character more works too" eval 'echo more >"$long4/$(printf "g%.0s" $(seq 16))"'
check "both are listed" eval '[[ $(ls "$long4" | wc -l) == 2 ]]'
seg=$M/segs
for i in $(seq 252); do seg+=/d; done
check "a file 254 blob name segments deep" eval 'mkdir -p "$seg" && echo ok >"$seg/f"'
check "and 255 segments deep" eval 'mkdir "$seg/x" && echo deeper >"$seg/x/f"'
e2e_remount fresh
check_eq "read back after a cold remount (over 1,024 characters)" "more" cat "$long4/$(printf "g%.0s" $(seq 16))"
check_eq "read back after a cold remount (255 segments)" "deeper" cat "$seg/x/f"

# ---------------------------------------------------------------------------
section "names: spaces, unicode, escapes, control bytes, 255 bytes"
long_ascii=$(repeat a 255)
long_jp=$(repeat 日 85)                # 3 bytes each: 255 bytes
long_emoji="abc$(repeat 😀 63)"        # 4 bytes each + 3: 255 bytes
long_pct=$(repeat % 255)               # escapes to 765 characters: a hashed key
long_hash=$(repeat '#' 254)x
long_bad=$(repeat $'\xff' 255)          # not UTF-8: every byte escaped
names=(
  "with space" " leading space" "trailing space " "two  spaces"
  "café" "é" "日本" "日本語のファイル.txt" "emoji 😀🎉" "Ωmega ß ñ"
  "100%" "%" "%41" "%2F" "%25" "hash#tag" "#" "what?" "?" 'back\slash' '\'
  "it's" "'" '"quoted"' "~tilde" "~" "a~b" "-dash" "a*b[c]{d}" "semi;colon" 'dollar$HOME'
  "amp&pipe|lt<gt>" "colon:x" "=eq+plus,comma" "tab	x" $'new\nline' $'ctl\x01x' $'del\x7f'
  $'latin1 caf\xe9' $'\xff\xfe' ".hidden" "..dots" "..." "name." "dot.dot." " "
  "$long_ascii" "$long_jp" "$long_emoji" "$long_pct" "$long_hash" "$long_bad"
)
for n in "$long_ascii" "$long_jp" "$long_emoji" "$long_pct" "$long_hash" "$long_bad"; do
  [[ $(bytes "$n") == 255 ]] || e2e_fatal "test bug: a long name is $(bytes "$n") bytes, not 255"
done
mkdir -p "$M/names" "$M/dirs"

# Creates NAME as a file and as a directory with a file inside; checks
# content, size, stat, ls -l and readdir.
name_create() {
  local n=$1 f=$M/names/$1 want
  want="content of $n"
  printf '%s' "$want" >"$f" || { echo "create failed"; return 1; }
  [[ $(cat -- "$f") == "$want" ]] || { echo "content differs: $(cat -- "$f" | od -c | head -3)"; return 1; }
  [[ $(stat -c %s -- "$f") == "$(bytes "$want")" ]] || { echo "size $(stat -c %s -- "$f") != $(bytes "$want")"; return 1; }
  stat -- "$f" >/dev/null || return 1
  ls -l -- "$f" >/dev/null || return 1
  # Bytes, not characters: in a UTF-8 locale bash's `read -d ''` swallows the
  # NUL after an invalid byte (a name ending in \xe9), hiding the next name.
  local e found=false LC_ALL=C
  while IFS= read -r -d '' e; do [[ $e == "$n" ]] && found=true; done < <(find "$M/names" -mindepth 1 -maxdepth 1 -printf '%f\0')
  $found || { echo "not in readdir"; return 1; }
  mkdir -- "$M/dirs/$n" || { echo "mkdir failed"; return 1; }
  printf 'inner of %s' "$n" >"$M/dirs/$n/inner" || { echo "create inside the directory failed"; return 1; }
  [[ $(ls -A -- "$M/dirs/$n") == inner ]] || { echo "directory lists: $(ls -A -- "$M/dirs/$n")"; return 1; }
}

# Content and listing of NAME as created by name_create.
name_verify() {
  local n=$1
  [[ $(cat -- "$M/names/$n") == "content of $n" ]] || { echo "file content differs"; return 1; }
  [[ $(cat -- "$M/dirs/$n/inner") == "inner of $n" ]] || { echo "inner file differs"; return 1; }
}

listing_of() {
  find "$1" -mindepth 1 -maxdepth 1 -printf '%f\0' | sort -z | od -c
}
expected_names() {
  printf '%s\0' "$@" | sort -z | od -c
}

# The later checks (after the remount) use the names that could be created,
# so that one failure is reported once.
created_names=()
for n in "${names[@]}"; do
  if check "create, read, stat, ls -l a file and a directory named $(printf %q "$n" | cut -c1-60)" name_create "$n"; then
    created_names+=("$n")
  else
    rm -f -- "$M/names/$n" "$M/dirs/$n/inner" 2>/dev/null
    rmdir -- "$M/dirs/$n" 2>/dev/null
  fi
done
check_eq "readdir lists exactly the ${#created_names[@]} special file names created" "$(expected_names "${created_names[@]}")" listing_of "$M/names"
check_eq "readdir lists exactly the ${#created_names[@]} special directory names created" "$(expected_names "${created_names[@]}")" listing_of "$M/dirs"
check "ls -l of the directory of special names" eval 'ls -l "$M/names" >/dev/null'

n256=$(repeat b 256)
n256_jp="$(repeat 日 85)x"
echo x >"$M/names/short"
check_fails "touch of a 256-byte name fails with ENAMETOOLONG" "File name too long" touch "$M/names/$n256"
check_fails "touch of a 256-byte unicode name fails with ENAMETOOLONG" "File name too long" touch "$M/names/$n256_jp"
check_fails "mkdir of a 256-byte name fails with ENAMETOOLONG" "File name too long" mkdir "$M/names/$n256"
check_fails "ln -s to a 256-byte name fails with ENAMETOOLONG" "File name too long" ln -s x "$M/names/$n256"
check_fails "mv to a 256-byte name fails with ENAMETOOLONG" "File name too long" mv "$M/names/short" "$M/names/$n256"
check_fails "stat of a 256-byte name fails with ENAMETOOLONG" "File name too long" stat "$M/names/$n256"
check "nothing of the 256-byte names was created" eval '! ls -A "$M/names" | grep -q "^bbbbbbbbbb"'
rm -f "$M/names/short"

# Blob names are paths: a '\\' in a name must not make a file share its blob
# with another path (the Blob service turns '\\' into '/' in blob names).
backslash_vs_slash() {
  mkdir -p "$M/bs/one" || return 1
  echo "backslash file" >"$M/bs/one\\two" || return 1
  echo "nested file" >"$M/bs/one/two" || return 1
  [[ $(cat "$M/bs/one\\two") == "backslash file" ]] || { echo "one\\two reads: $(cat "$M/bs/one\\two" 2>&1)"; return 1; }
  [[ $(cat "$M/bs/one/two") == "nested file" ]] || { echo "one/two reads: $(cat "$M/bs/one/two" 2>&1)"; return 1; }
}
check "a file 'one\\two' and a file 'one/two' keep separate data" backslash_vs_slash

# '\\' is stored as U+F05C in blob names and a byte that is not UTF-8 as
# U+F0xx: names holding those characters would share a blob with their twin
# (a rename onto one overwrote the other's data). Refused: EILSEQ.
echo one >"$M/bs/a\\b"
echo two >"$M/bs/c"$'\xc3'"d"
for twin in "a"$'\xef\x81\x9c'"b" "c"$'\xef\x83\x83'"d"; do
  check_fails "create of the blob-name twin $(printf %q "$twin") fails with EILSEQ" \
    "Invalid or incomplete multibyte" eval "echo x >'$M/bs/$twin'"
  check_fails "rename onto the twin $(printf %q "$twin") fails with EILSEQ" \
    "Invalid or incomplete multibyte" mv "$M/bs/a\\b" "$M/bs/$twin"
  check_fails "mkdir of the twin $(printf %q "$twin") fails with EILSEQ" \
    "Invalid or incomplete multibyte" mkdir "$M/bs/$twin"
done
twins_kept() { [[ $(cat "$M/bs/a\\b") == one && $(cat "$M/bs/c"$'\xc3'"d") == two ]]; }
check "the twins' originals kept their data" twins_kept

# Names starting with ',' (or holding "',"): Azurite's $batch misread their
# entity URLs (a 404 on every change), so the second write's entry merge
# dropped the data and rm could never remove the name (issue 12, defect 6).
comma_names() {
  local n d=$M/commas
  mkdir -p "$d/,sub" || return 1
  for n in ",x" "," ",,y" "a',b"; do
    echo hello >"$d/$n" || { echo "$n: create failed"; return 1; }
    [[ $(cat -- "$d/$n") == hello ]] || { echo "$n: first write reads '$(cat -- "$d/$n" 2>&1)'"; return 1; }
    echo "second write" >"$d/$n" || { echo "$n: second write failed"; return 1; }
    [[ $(cat -- "$d/$n") == "second write" ]] || { echo "$n: second write reads '$(cat -- "$d/$n" 2>&1)'"; return 1; }
    chmod 600 -- "$d/$n" || { echo "$n: chmod failed"; return 1; }
    mv -- "$d/$n" "$d/$n.moved" || { echo "$n: rename in the directory failed"; return 1; }
    mv -- "$d/$n.moved" "$d/,sub/$n" || { echo "$n: rename across directories failed"; return 1; }
    [[ $(cat -- "$d/,sub/$n") == "second write" ]] || { echo "$n: after the renames reads '$(cat -- "$d/,sub/$n" 2>&1)'"; return 1; }
    mv -- "$d/,sub/$n" "$d/$n" || { echo "$n: rename back failed"; return 1; }
    rm -- "$d/$n" || { echo "$n: rm failed"; return 1; }
    [[ ! -e $d/$n ]] || { echo "$n: still there after rm"; return 1; }
  done
  rmdir "$d/,sub" "$d" || { echo "rmdir ,sub failed: $(ls -A "$d/,sub" 2>&1)"; return 1; }
}
check "names starting with ',': create, write twice, cat, chmod, rename, rm" comma_names

# A directory path far over the 1 KiB key limit: its partition key is hashed.
hashed_dir=$M/hashed/$long_ascii/$long_jp/$long_pct
check "mkdir -p of a path over 1 KiB (hashed partition key)" mkdir -p "$hashed_dir"
check "files in a hashed-key directory" eval 'echo one >"$hashed_dir/f1" && echo two >"$hashed_dir/$long_emoji" &&
  [[ $(cat "$hashed_dir/f1") == one && $(cat "$hashed_dir/$long_emoji") == two ]]'
check_eq "listing of a hashed-key directory" "$(printf '%s\n' "$long_emoji" f1 | sort)" eval 'ls "$hashed_dir" | sort'

# ---------------------------------------------------------------------------
section "attributes: chmod, chown, touch -d (checked again after a remount)"
A=$M/attrs
mkdir -p "$A/dir"
echo data >"$A/file"
ln -s file "$A/link"
check "umask is applied to new files" eval '(umask 027 && : >"$A/masked") && [[ $(stat -c %a "$A/masked") == 640 ]]'
check "umask is applied to new directories" eval '(umask 077 && mkdir "$A/maskdir") && [[ $(stat -c %a "$A/maskdir") == 700 ]]'
check "chown 1234:5678 of a file" chown 1234:5678 "$A/file"
check "chmod 640 of a file" chmod 640 "$A/file"
check "chown 4321:8765 of a directory" chown 4321:8765 "$A/dir"
check "chmod 1750 (sticky) of a directory" chmod 1750 "$A/dir"
check "chown -h of a symlink" chown -h 111:222 "$A/link"
check "chmod u+s,g+s of a file" eval ': >"$A/suid" && chmod 6755 "$A/suid"'
check "touch -d of a file" touch -d "2001-02-03 04:05:06" "$A/file"
check "touch -d with nanoseconds of a directory" touch -d "2002-03-04 05:06:07.123456789" "$A/dir"
check "touch -m -d only changes mtime" eval 'touch -a -d "1999-01-01 00:00:00" "$A/masked" && touch -m -d "2010-10-10 10:10:10.5" "$A/masked"'
check "touch -h -d of a symlink" touch -h -d "2003-04-05 06:07:08" "$A/link"
check_eq "file: mode, owner, mtime, atime" "640 1234 5678 2001-02-03 04:05:06.000000000 +0000 2001-02-03 04:05:06.000000000 +0000" \
  stat -c '%a %u %g %y %x' "$A/file"
check_eq "directory: mode, owner, mtime" "1750 4321 8765 2002-03-04 05:06:07.123456789 +0000" stat -c '%a %u %g %y' "$A/dir"
check_eq "symlink: owner, mtime" "111 222 2003-04-05 06:07:08.000000000 +0000" stat -c '%u %g %y' "$A/link"
check_eq "separate atime and mtime" "1999-01-01 00:00:00.000000000 +0000|2010-10-10 10:10:10.500000000 +0000" \
  stat -c '%x|%y' "$A/masked"
check_eq "setuid and setgid bits" 6755 stat -c %a "$A/suid"
# tar x and cp -a write a file, set its times with futimens on the same
# descriptor, then close it: the times must survive the close.
write_futimens_close() {
  "$PY" - "$1" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"data")
os.utime(fd, ns=(1081051444000000000, 1081051444000000000))
os.close(fd)
EOF
}
check_eq "write, futimens, close: the set mtime survives the close" "2004-04-04 04:04:04.000000000 +0000" \
  eval 'write_futimens_close "$A/futimens" && stat -c %y "$A/futimens"'
check_eq "touch -d while another descriptor has unwritten data" "2004-04-04 04:04:04.000000000 +0000" \
  eval 'exec 3>"$A/open" && echo data >&3 && touch -d "2004-04-04 04:04:04" "$A/open" && exec 3>&- && stat -c %y "$A/open"'
# cp -a and tar x set modes through the ACL xattr (fsetxattr of
# system.posix_acl_access): either the file system refuses it (EOPNOTSUPP, and
# the tools fall back to chmod) or it must apply it to the mode.
acl_mode() {
  : >"$A/acl" && chmod 600 "$A/acl" || return 1
  # user::rw- group::r-- other::r-- (mode 644)
  if setfattr -n system.posix_acl_access -v 0sAgAAAAEABgD/////BAAEAP////8gAAQA/////w== "$A/acl" 2>"$E2E_TMP/acl.err"; then
    [[ $(stat -c %a "$A/acl") == 644 ]] || { echo "the ACL was accepted but the mode is $(stat -c %a "$A/acl"), not 644"; return 1; }
  else
    grep -q "Operation not supported" "$E2E_TMP/acl.err" || { cat "$E2E_TMP/acl.err"; return 1; }
  fi
}
check "setting system.posix_acl_access changes the mode or is refused" acl_mode
check "chmod changes ctime, not mtime" eval 'before=$(stat -c %Z.%y "$A/masked"); sleep 1.1; chmod 600 "$A/masked";
  after=$(stat -c %Z.%y "$A/masked"); [[ ${before#*.} == "${after#*.}" && ${before%%.*} -lt ${after%%.*} ]] || { echo "$before -> $after"; false; }'
# Creating an entry changes the directory's mtime (POSIX; make, rsync and
# editors' "file changed" checks rely on it).
check "creating a file updates the directory's mtime" eval 'mkdir "$A/mt" && touch -d "2001-01-01" "$A/mt" && : >"$A/mt/new" &&
  [[ $(stat -c %Y "$A/mt") -gt 978307200 ]] || { echo "directory mtime still $(stat -c %y "$A/mt")"; false; }'
stat_all() {
  (cd "$A" && stat -c '%n|%F|%a|%u|%g|%s|%y|%x|%z' file dir link masked maskdir suid)
}
attrs_before=$(stat_all)

# ---------------------------------------------------------------------------
section "symlinks"
L=$M/links
mkdir -p "$L/sub"
echo hello >"$L/target.txt"
special_target='日本 #%?\ it'"'"'s ~target'
long_target=$(repeat 'x/' 1000)end
check "ln -s relative" ln -s target.txt "$L/rel"
check "ln -s to a directory" ln -s ../deep "$L/updir"
check "ln -s dangling" ln -s /nonexistent/stampfs/path "$L/dangling"
check "ln -s with a special-character target" ln -s "$special_target" "$L/special"
check "ln -s with a 2,003-byte target" ln -s "$long_target" "$L/long"
check "ln -s from a subdirectory" ln -s ../target.txt "$L/sub/up"
check_eq "readlink relative" target.txt readlink "$L/rel"
check_eq "readlink special" "$special_target" readlink "$L/special"
check_eq "readlink long" "$long_target" readlink "$L/long"
check_eq "symlink size is the target's length" "$(bytes "$special_target")" stat -c %s "$L/special"
check "test -L and test -h" eval 'test -L "$L/rel" && test -h "$L/dangling" && ! test -L "$L/target.txt"'
check_eq "cat follows a symlink" hello cat "$L/rel"
check_eq "cat follows a symlink from a subdirectory" hello cat "$L/sub/up"
check_eq "ls through a symlinked directory" level1 ls "$L/updir/"
check_eq "stat -L follows" "regular file" stat -L -c %F "$L/rel"
check_eq "stat without -L does not" "symbolic link" stat -c %F "$L/rel"
check_fails "following a dangling symlink fails" "No such file" cat "$L/dangling"
check "ls -l shows the arrow" eval 'ls -l "$L/rel" | grep -q -- "rel -> target.txt"'
check "writing through a symlink writes the target" eval 'echo again >>"$L/rel" && [[ $(cat "$L/target.txt") == $'"'"'hello\nagain'"'"' ]]'
check "rm of a symlink keeps the target" eval 'ln -s target.txt "$L/tmp" && rm "$L/tmp" && test ! -L "$L/tmp" && test -f "$L/target.txt"'
check "readlink of a regular file fails" eval '! readlink "$L/target.txt"'

# ---------------------------------------------------------------------------
section "xattrs"
X=$M/xattr
mkdir -p "$X/dir"
echo x >"$X/file"
check "setfattr user.color" setfattr -n user.color -v blue "$X/file"
check "setfattr user.empty (empty value)" setfattr -n user.empty "$X/file"
check "setfattr user.bin (binary value)" setfattr -n user.bin -v 0x00ff10 "$X/file"
check "setfattr user.big (3,000 bytes)" setfattr -n user.big -v "$(repeat y 3000)" "$X/file"
check "setfattr user.gone" setfattr -n user.gone -v soon "$X/file"
check "setfattr on a directory" setfattr -n user.dir -v yes "$X/dir"
check "setfattr replaces a value" eval 'setfattr -n user.color -v red "$X/file" && setfattr -n user.color -v green "$X/file"'
check_eq "getfattr -n user.color" green getfattr --only-values -n user.color "$X/file"
check_eq "getfattr of the binary value" "user.bin=0x00ff10" eval 'getfattr -e hex -n user.bin --absolute-names "$X/file" | grep user.bin'
check_eq "getfattr of the big value (length)" 3000 eval 'getfattr --only-values -n user.big "$X/file" | wc -c'
check "setfattr -x removes" setfattr -x user.gone "$X/file"
check_fails "getfattr of a removed attribute fails" "No such attribute" getfattr -n user.gone "$X/file"
check_fails "getfattr of a missing attribute fails" "No such attribute" getfattr -n user.missing "$X/file"
check_fails "setfattr -x of a missing attribute fails" "No such attribute" setfattr -x user.missing "$X/file"
xattr_dump() {
  getfattr -d -m '^user\.' --absolute-names "$X/file" "$X/dir" | sed "s|$X/||"
}
xattr_expected="# file: file
user.big=\"$(repeat y 3000)\"
user.bin=0sAP8Q
user.color=\"green\"
user.empty=\"\"

# file: dir
user.dir=\"yes\""
check_eq "getfattr -d lists every attribute" "$xattr_expected" xattr_dump
check_eq "XATTR_CREATE on an existing attribute: EEXIST" EEXIST py_errno setxattr "$X/file" user.color x 1
check_eq "XATTR_REPLACE on a missing attribute: ENODATA" ENODATA py_errno setxattr "$X/file" user.nope x 2
check_eq "XATTR_CREATE of a new attribute" OK py_errno setxattr "$X/file" user.created v 1
check "setfattr -x user.created" setfattr -x user.created "$X/file"
check "xattrs of a symlink's target via the link" eval 'ln -s file "$X/ln" && [[ $(getfattr --only-values -n user.color "$X/ln") == green ]]'

# ---------------------------------------------------------------------------
section "rename"
R=$M/ren
mkdir -p "$R/sub" "$R/other"
check "mv a b" eval 'echo one >"$R/a" && mv "$R/a" "$R/b"'
check "after mv: old name gone, new has the content" eval 'test ! -e "$R/a" && [[ $(cat "$R/b") == one ]]'
check "mv keeps the inode number" eval 'i=$(stat -c %i "$R/b"); mv "$R/b" "$R/b2" && [[ $(stat -c %i "$R/b2") == $i ]] && mv "$R/b2" "$R/b"'
check "mv over an existing file" eval 'echo two >"$R/c" && ino=$(stat -c %i "$R/c") && mv "$R/c" "$R/b" &&
  test ! -e "$R/c" && [[ $(cat "$R/b") == two && $(stat -c %i "$R/b") == $ino ]]'
check_eq "the directory lists the survivor once" "b other sub" eval 'echo $(ls "$R")'
check "mv to another directory" eval 'mv "$R/b" "$R/sub/b" && test ! -e "$R/b" && [[ $(cat "$R/sub/b") == two ]]'
check "mv of an empty file" eval ': >"$R/empty" && mv "$R/empty" "$R/sub/empty2" && test -f "$R/sub/empty2" && test ! -e "$R/empty"'
check "mv to a special name and back" eval 'mv "$R/sub/b" "$R/sub/日本 #%?" && [[ $(cat "$R/sub/日本 #%?") == two ]] && mv "$R/sub/日本 #%?" "$R/sub/b"'
check "mv of a file onto itself is a no-op" eval 'mv "$R/sub/b" "$R/sub/b" 2>/dev/null; [[ $(cat "$R/sub/b") == two ]]'
check "rename of an open file keeps the open handle's data" eval 'exec 3>"$R/open" && echo partial >&3 && mv "$R/open" "$R/moved" &&
  echo more >&3 && exec 3>&- && [[ $(cat "$R/moved") == $'"'"'partial\nmore'"'"' ]] && test ! -e "$R/open"'
echo keep >"$R/x"
echo src >"$R/y"
check "mv -n does not replace" eval 'mv -n "$R/y" "$R/x"; [[ $(cat "$R/x") == keep && $(cat "$R/y") == src ]]'
check_eq "RENAME_NOREPLACE onto an existing name: EEXIST" EEXIST py_errno renameat2 "$R/y" "$R/x" 1
check "after the refused RENAME_NOREPLACE both files are unchanged" eval '[[ $(cat "$R/x") == keep && $(cat "$R/y") == src ]]'
check_eq "RENAME_NOREPLACE onto a free name" OK py_errno renameat2 "$R/y" "$R/z" 1
check "after RENAME_NOREPLACE the file moved" eval 'test ! -e "$R/y" && [[ $(cat "$R/z") == src ]]'
check "RENAME_EXCHANGE either swaps or fails with EINVAL leaving both" eval 'r=$(py_errno renameat2 "$R/x" "$R/z" 2);
  case $r in
    OK) [[ $(cat "$R/x") == src && $(cat "$R/z") == keep ]] ;;
    EINVAL) [[ $(cat "$R/x") == keep && $(cat "$R/z") == src ]] ;;
    *) echo "renameat2(RENAME_EXCHANGE): $r"; false ;;
  esac'
check_eq "rename of a file over a directory: EISDIR" EISDIR py_errno rename "$R/x" "$R/other"
check_eq "rename of a directory over a file: ENOTDIR" ENOTDIR py_errno rename "$R/other" "$R/x"
check_fails "mv of a directory into itself fails" "subdirectory of itself|Invalid argument" mv "$R/sub" "$R/sub/inside"
check_eq "rename(2) of a directory into itself: EINVAL" EINVAL py_errno rename "$R/sub" "$R/sub/inside"
mkdir -p "$R/ta/inner" "$R/tb" "$R/tc"
echo t >"$R/ta/inner/t"
echo c >"$R/tc/child"
check "mv -T over an empty directory replaces it" eval 'mv -T "$R/ta" "$R/tb" && test ! -e "$R/ta" && [[ $(cat "$R/tb/inner/t") == t ]]'
check_fails "mv -T over a non-empty directory fails" "Directory not empty|File exists" mv -T "$R/tb" "$R/tc"
check "after the refused mv -T both directories are intact" eval '[[ $(cat "$R/tb/inner/t") == t && $(cat "$R/tc/child") == c ]]'
check_fails "mv -T of a file over a directory fails" "cannot overwrite directory|Is a directory" mv -T "$R/x" "$R/tc"

# Issue 12, defect 4: a symlink moved over a file in another directory left
# the file's blob (fsck: blob-without-entry), and the next file of that name
# met it as a false conflict.
symlink_over_file_leaves_no_blob() {
  local Z=$M/symren
  mkdir -p "$Z/z0" "$Z/z1" && ln -s t "$Z/z0/a" && echo hello >"$Z/z1/b" && mv -T "$Z/z0/a" "$Z/z1/b" &&
    [[ $(readlink "$Z/z1/b") == t ]] && rm "$Z/z1/b" || return 1
  if "$E2E_INSPECT" blobs "$E2E_CONTAINER" | cut -f1 | grep -qxF symren/z1/b; then
    echo "blob symren/z1/b is still there"
    return 1
  fi
  echo new >"$Z/z1/b" && [[ $(cat "$Z/z1/b") == new ]] && ! ls "$Z/z1" | grep -q conflict
}
check "mv of a symlink over a file in another directory leaves no blob behind" symlink_over_file_leaves_no_blob

# A directory with children, symlinks, xattrs, modes and times: compared with
# a local copy after each move.
make_local_tree() {
  local t=$1
  mkdir -p "$t/sub/deeper" "$t/empty" "$t/sp ace/日本"
  echo a >"$t/a.txt"
  head -c 200000 /dev/urandom >"$t/sub/random.bin"
  echo c >"$t/sub/deeper/c.txt"
  echo j >"$t/sp ace/日本/#%?.txt"
  ln -s ../a.txt "$t/sub/link"
  chmod 600 "$t/a.txt"
  chmod 700 "$t/sub/deeper"
  touch -d "2005-05-05 05:05:05.555" "$t/sub/deeper/c.txt"
}
# Type, mode, size, mtime and link target of everything under a tree.
tree_meta() {
  (cd "$1" && find . -mindepth 1 ! -type d -printf '%P|%y|%m|%s|%T@|%l\n' && find . -mindepth 1 -type d -printf '%P|%y|%m\n') | sort
}
# Built in the mount directly (cp -a has its own checks below); its metadata
# before the moves is the reference.
make_local_tree "$E2E_TMP/tree"
run "a tree built in the mount" make_local_tree "$R/tree"
run "the same random file" cp "$E2E_TMP/tree/sub/random.bin" "$R/tree/sub/random.bin"
check "setfattr inside the tree" setfattr -n user.k -v v "$R/tree/sub/deeper/c.txt"
check "the tree is identical to the local one (diff -r)" diff -r "$E2E_TMP/tree" "$R/tree"
tree_before=$(tree_meta "$R/tree")
check "mv of a directory with children" mv "$R/tree" "$R/tree2"
check_fails "after mv the old directory is gone" "No such file" ls "$R/tree"
check "after mv the contents are identical (diff -r)" diff -r "$E2E_TMP/tree" "$R/tree2"
check_eq "after mv types, modes, sizes, mtimes, links are kept" "$tree_before" tree_meta "$R/tree2"
check_eq "after mv an xattr deep inside is kept" v getfattr --only-values -n user.k "$R/tree2/sub/deeper/c.txt"
check_eq "after mv a symlink inside still resolves" a cat "$R/tree2/sub/link"
check "mv of a directory to another parent" eval 'mv "$R/tree2" "$R/other/tree3" && test ! -e "$R/tree2"'
check "after the cross-directory mv the contents are identical" diff -r "$E2E_TMP/tree" "$R/other/tree3"
check "mv of a directory to a special name" eval 'mv "$R/other/tree3" "$R/other/日本 #%?~" && diff -r "$E2E_TMP/tree" "$R/other/日本 #%?~" &&
  mv "$R/other/日本 #%?~" "$R/other/tree3"'
check "a file created in the moved directory" eval 'echo new >"$R/other/tree3/sub/new.txt" && [[ $(cat "$R/other/tree3/sub/new.txt") == new ]]'
rm -f "$R/other/tree3/sub/new.txt"
check "the old path can be reused" eval 'mkdir "$R/tree2" && [[ -z $(ls -A "$R/tree2") ]]'

# ---------------------------------------------------------------------------
section "rmdir, rm, hard links"
D=$M/rm
mkdir -p "$D/full/sub" "$D/onlysub/sub"
echo x >"$D/full/x"
check_fails "rmdir of a non-empty directory fails" "Directory not empty" rmdir "$D/full"
check_fails "rmdir of a directory with only a subdirectory fails" "Directory not empty" rmdir "$D/onlysub"
check_fails "rmdir of a file fails" "Not a directory" rmdir "$D/full/x"
check_fails "rm of a directory without -r fails" "Is a directory" rm "$D/full"
check_fails "rmdir of a missing directory fails" "No such file" rmdir "$D/missing"
check "after the refusals the directory is intact" eval '[[ $(cat "$D/full/x") == x ]] && test -d "$D/full/sub"'
check "rm, then rmdir of the emptied directories" eval 'rm "$D/full/x" && rmdir "$D/full/sub" "$D/onlysub/sub" && rmdir "$D/full" "$D/onlysub" &&
  test ! -e "$D/full" && test ! -e "$D/onlysub"'
check "rm -r of a tree" eval 'cp -a "$E2E_TMP/tree" "$D/t" && rm -r "$D/t" && test ! -e "$D/t" && [[ -z $(ls -A "$D") ]]'
check "a removed directory's name can be reused as a file" eval 'mkdir "$D/n" && rmdir "$D/n" && echo f >"$D/n" && [[ $(cat "$D/n") == f ]]'
echo a >"$D/a"
check_eq "files have one link" 1 stat -c %h "$D/a"
mkdir "$D/dir"
check_eq "link(2) of a directory gives EPERM" EPERM py_errno link "$D/dir" "$D/dir2"
check "the refused hard link left nothing behind" eval 'test ! -e "$D/dir2"'
check "ln of a file (tests/e2e/hard_links.sh has the rest)" eval 'ln "$D/a" "$D/b" && [[ $(stat -c %h "$D/a") == 2 && $(cat "$D/b") == a ]]'
check_eq "link(2) onto a taken name gives EEXIST" EEXIST py_errno link "$D/a" "$D/b"

# ---------------------------------------------------------------------------
section "find, du, tar, cp -a"
T=$M/tools
S=$E2E_TMP/src
mkdir -p "$T" "$S/dir1/dir2" "$S/empty" "$S/sp ace"
echo readme >"$S/readme.txt"
head -c 10240 /dev/urandom >"$S/dir1/file1"
head -c 102400 /dev/urandom >"$S/dir1/dir2/file2"
head -c 1048576 /dev/urandom >"$S/big.bin"
echo jp >"$S/sp ace/日本.txt"
echo hash >"$S/sp ace/#1 100%.txt"
: >"$S/dir1/empty-file"
ln -s readme.txt "$S/link"
ln -s dir1/dir2 "$S/dirlink"
chmod 751 "$S/dir1"
chmod 604 "$S/dir1/file1"
touch -d "2011-11-11 11:11:11.111111111" "$S/dir1/dir2/file2"
touch -d "2012-12-12 12:12:12" "$S/dir1/dir2"
run "cp -a of a local tree into the mount" cp -a "$S" "$T/src"
check "diff -r of the copy in" diff -r "$S" "$T/src"
check_eq "cp -a kept types, modes, sizes, mtimes and link targets" "$(tree_meta "$S")" tree_meta "$T/src"
check_eq "find lists every path" "$(cd "$E2E_TMP" && find src | sort)" eval 'cd "$T" && find src | sort'
check_eq "find -type f" "$(cd "$E2E_TMP" && find src -type f | sort)" eval 'cd "$T" && find src -type f | sort'
check_eq "find -type l" "$(cd "$E2E_TMP" && find src -type l | sort)" eval 'cd "$T" && find src -type l | sort'
check_eq "find -name" "src/sp ace/日本.txt" eval 'cd "$T" && find src -name "日本*"'
check_eq "find -newermt" "src/dir1/dir2/file2" eval 'touch -d "2011-11-11" "$T/src/dir1/dir2/file2" && cd "$T" && find src/dir1 -type f ! -newermt "2012-01-01"'
check_eq "find -size" "src/big.bin" eval 'cd "$T" && find src -size +1000k'
check "du -s counts the data (1,100-1,300 KiB)" eval 'k=$(du -sk "$T/src" | cut -f1); echo "du -sk: $k"; ((k >= 1100 && k <= 1300))'
check_eq "du --apparent-size of the files matches" "$(cd "$S" && find . -type f -print0 | du -cb --files0-from=- | tail -1)" \
  eval 'cd "$T/src" && find . -type f -print0 | du -cb --files0-from=- | tail -1'
check "tar c of the tree" tar cf "$E2E_TMP/mount.tar" -C "$T" src
check_eq "tar t lists the expected names" "$(tar cf - -C "$E2E_TMP" src | tar tf - | sort)" eval 'tar tf "$E2E_TMP/mount.tar" | sort'
check "tar d: the archive matches the tree it was made of (content, mode, mtime, links)" tar df "$E2E_TMP/mount.tar" -C "$T"
tar cf "$E2E_TMP/local.tar" -C "$E2E_TMP" src
check "tar x into the mount" eval 'mkdir "$T/untar" && tar xf "$E2E_TMP/local.tar" -C "$T/untar"'
check "tar d: what tar x wrote matches the archive" tar df "$E2E_TMP/local.tar" -C "$T/untar"
check "diff -r of the untarred tree" diff -r "$S" "$T/untar/src"
check "cp -a back out of the mount" cp -a "$T/src" "$E2E_TMP/back"
check "diff -r of the copy back out" diff -r "$S" "$E2E_TMP/back"
check_eq "the copy back out kept types, modes, sizes, mtimes, link targets" "$(tree_meta "$T/src")" tree_meta "$E2E_TMP/back"

# ---------------------------------------------------------------------------
section "git"
G=$M/git/repo
export HOME=$E2E_TMP/home GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME" "$G"
run "git init" git -C "$G" init -q
check "git config user.name and user.email" eval 'git -C "$G" config user.name "e2e test" && git -C "$G" config user.email e2e@example.com'
mkdir -p "$G/src" "$G/docs"
printf 'int main(void) { return 0; }\n' >"$G/src/main.c"
printf '# repo\n' >"$G/README.md"
printf 'notes\n' >"$G/docs/日本 notes.txt"
cp "$S/big.bin" "$G/data.bin"
check "git add" git -C "$G" add -A
check "git commit" git -C "$G" commit -q -m "first commit"
check_eq "git status is clean after the commit" "" git -C "$G" status --porcelain
check_eq "git log shows the commit" "first commit" git -C "$G" log --format=%s
check "a second commit" eval 'echo more >>"$G/README.md" && git -C "$G" mv src/main.c src/prog.c && git -C "$G" commit -q -am "second commit"'
check_eq "git log shows both commits" "second commit
first commit" git -C "$G" log --format=%s
check_eq "git status is clean after the second commit" "" git -C "$G" status --porcelain
check "git branch and checkout" eval 'git -C "$G" checkout -q -b topic && echo t >"$G/topic.txt" && git -C "$G" add topic.txt &&
  git -C "$G" commit -q -m topic && git -C "$G" checkout -q - && test ! -e "$G/topic.txt"'
check "git fsck" git -C "$G" fsck --no-progress
check "git gc (packs and prunes)" git -C "$G" gc -q
check "git log after gc" eval '[[ $(git -C "$G" log --all --format=%s | wc -l) == 3 ]]'
check "git clone out of the mount" eval 'git clone -q "$G" "$E2E_TMP/clone" && cmp "$E2E_TMP/clone/data.bin" "$S/big.bin"'
check_eq "git diff against the clone is empty" "" git -C "$G" diff HEAD

# ---------------------------------------------------------------------------
section "remount with an empty cache: everything above persisted"
e2e_remount fresh
check_eq "attributes after remount (stat of file, dir, link, ...)" "$attrs_before" stat_all
check_eq "symlink targets after remount" "target.txt|$special_target|$long_target" \
  eval 'echo "$(readlink "$L/rel")|$(readlink "$L/special")|$(readlink "$L/long")"'
check_eq "following a symlink after remount" hello eval 'head -1 "$L/rel"'
check_eq "xattrs after remount" "$xattr_expected" xattr_dump
check_eq "special file names after remount" "$(expected_names "${created_names[@]}")" listing_of "$M/names"
check_eq "special directory names after remount" "$(expected_names "${created_names[@]}")" listing_of "$M/dirs"
failed_names=()
for n in "${created_names[@]}"; do
  name_verify "$n" >/dev/null 2>&1 || failed_names+=("$(printf %q "$n" | cut -c1-40)")
done
check_eq "content of every special name after remount" "" eval 'echo "${failed_names[*]}"'
check_eq "hashed-key directory after remount" "$(printf '%s\n' "$long_emoji" f1 | sort)" eval 'ls "$hashed_dir" | sort'
check_eq "the deep leaf after remount" bottom cat "$deepest/leaf.txt"
check "moved directory tree after remount" diff -r "$E2E_TMP/tree" "$R/other/tree3"
check_eq "moved tree's metadata after remount" "$tree_before" tree_meta "$R/other/tree3"
check_eq "moved tree's xattr after remount" v getfattr --only-values -n user.k "$R/other/tree3/sub/deeper/c.txt"
check_eq "renamed-away paths stay gone after remount" "moved other sub tb tc tree2 x z" eval 'echo $(ls "$R")'
check "mv -T results after remount" eval 'test ! -e "$R/ta" && [[ $(cat "$R/tb/inner/t") == t ]]'
check "tree copied in after remount" diff -r "$S" "$T/src"
check_eq "git status clean after remount" "" git -C "$G" status --porcelain
check "git fsck after remount" git -C "$G" fsck --no-progress

check "rm of every special name" eval 'for n in "${created_names[@]}"; do rm -- "$M/names/$n" && rm -- "$M/dirs/$n/inner" && rmdir -- "$M/dirs/$n" || exit 1; done'
check_eq "the special-name directories are empty" "" find "$M/names" "$M/dirs" -mindepth 1

# ---------------------------------------------------------------------------
# E2E_MANY overrides the count for quick runs.
N=${E2E_MANY:-5000}
section "a directory of $N entries"
B=$M/big
mkdir -p "$B"
# The entries are symlinks: one table transaction each and no blob. Empty
# files would write N blobs, and Azurite 3.35 (in memory) then blocks for a
# very long time in its blob GC once the container is deleted: it removes
# unreferenced extents one by one, re-sorting a LokiJS index for each
# (MemoryExtentStore.deleteExtents -> Collection.findAndRemove ->
# ensureAllIndexes). Four writers at once.
create_many() {
  seq 1 "$N" | xargs -P 4 -n 250 sh -c 'cd "$0" || exit 1; for i; do ln -s target "f$i" || exit 1; done' "$B"
}
t0=$SECONDS
E2E_TIMEOUT=600 check "create $N entries (symlinks)" create_many
echo "  ($N creates took $((SECONDS - t0))s)"
expected_many=$(for ((i = 1; i <= N; i++)); do echo "f$i"; done | sort)
check_eq "ls | wc -l is $N right after" "$N" eval 'ls "$B" | wc -l'
check_eq "ls lists exactly f1..f$N" "$expected_many" eval 'ls "$B" | sort'
check_eq "ls -l lists $N symlinks" "$N" eval 'ls -l "$B" | grep -c "^l"'
e2e_remount fresh
check_eq "ls | wc -l is $N after a remount with an empty cache" "$N" eval 'ls "$B" | wc -l'
check_eq "ls lists exactly f1..f$N after the remount" "$expected_many" eval 'ls "$B" | sort'
check_eq "find counts $N symlinks after the remount" "$N" eval 'find "$B" -type l | wc -l'
check_eq "readlink of an entry in the big directory" target readlink "$B/f$N"
e2e_remount keep
check_eq "ls | wc -l is $N after a remount with the warm cache" "$N" eval 'ls "$B" | wc -l'
check_eq "attributes after a remount with the warm cache" "$attrs_before" stat_all

e2e_daemon_check
e2e_finish
