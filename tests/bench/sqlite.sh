#!/usr/bin/env bash
# Bench: 1,000 small SQLite transactions on a ~6.6 MB database, default
# (delete) journal and WAL (issue 13: small rewrites stay small). The
# workload and its checks are the e2e test's (tests/e2e/sqlite.sh, which
# prints per mode what SQLite wrote, the file data stampfs uploaded
# meanwhile and the ratio); this runs it with the bench's sizes:
#   tests/bench/sqlite.sh BUILD_DIR        (SQLITE_TXNS, SQLITE_ROWS override)
export SQLITE_TXNS=${SQLITE_TXNS:-1000} SQLITE_ROWS=${SQLITE_ROWS:-58000}
exec bash "$(dirname "$0")/../e2e/sqlite.sh" "$@"
