#!/usr/bin/env bash
# e2e: small SQLite transactions on the mount (issue 13: small rewrites stay
# small). For each journal mode (delete: the default rollback journal; wal):
# a database of about 6.6 MB, then $SQLITE_TXNS transactions of one ~100-byte
# INSERT each (tests/bench/sqlite_txns.py). Prints what SQLite wrote, the file
# data stampfs uploaded meanwhile (stampfs stat bytes.data_up) and their
# ratio, which must stay at most 10; the databases pass integrity_check on
# the mount and after a remount with an empty cache.
#   bash tests/e2e/sqlite.sh BUILD_DIR
source "$(dirname "$0")/lib.bash" "$@"

TXNS=${SQLITE_TXNS:-1000}
ROWS=${SQLITE_ROWS:-58000}
WORKLOAD=$(cd "$(dirname "$0")/../bench" && pwd)/sqlite_txns.py
MODES=(delete wal)

# json_field FILE KEY
json_field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

e2e_mount

for mode in "${MODES[@]}"; do
  section "journal_mode=$mode: $TXNS transactions"
  db=$M/$mode.db
  run "populate $mode.db" eval 'python3 "$WORKLOAD" "$db" "$mode" populate "$ROWS" >"$E2E_TMP/$mode.populate"'
  run "sync after populating" e2e_sync
  up0=$(e2e_stat_value "$M" bytes.data_up)
  E2E_TIMEOUT=600 run "$TXNS transactions" \
    eval 'python3 "$WORKLOAD" "$db" "$mode" txns "$TXNS" >"$E2E_TMP/$mode.json"'
  run "sync after the transactions" e2e_sync
  up1=$(e2e_stat_value "$M" bytes.data_up)
  wrote=$(json_field "$E2E_TMP/$mode.json" wrote)
  seconds=$(json_field "$E2E_TMP/$mode.json" seconds)
  ratio=$(awk -v u="$((up1 - up0))" -v w="$wrote" 'BEGIN { printf "%.2f", u / w }')
  echo "  sqlite $mode: $TXNS transactions in ${seconds}s; SQLite wrote $wrote bytes," \
    "stampfs uploaded $((up1 - up0)) bytes of file data: ${ratio}x"
  check "uploads at most 10x what SQLite wrote (${ratio}x)" awk -v r="$ratio" 'BEGIN { exit !(r <= 10) }'
  check_eq "integrity_check of $mode.db" ok sqlite3 "$db" "PRAGMA integrity_check"
  check_eq "rows of $mode.db" "$((ROWS + TXNS))" sqlite3 "$db" "SELECT count(*) FROM t"
done

section "a remount with an empty cache"
e2e_remount fresh
for mode in "${MODES[@]}"; do
  check_eq "integrity_check of $mode.db after the cold remount" ok \
    sqlite3 "$M/$mode.db" "PRAGMA integrity_check"
  check_eq "rows of $mode.db after the cold remount" "$((ROWS + TXNS))" \
    sqlite3 "$M/$mode.db" "SELECT count(*) FROM t"
done

e2e_finish
