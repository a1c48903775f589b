#!/usr/bin/env python3
"""Small SQLite transactions (tests/bench/sqlite.sh, tests/e2e/sqlite.sh).

  sqlite_txns.py DB JOURNAL_MODE populate ROWS    ROWS rows of ~100 bytes in one transaction
                                                 (58,000 rows: a database of about 6.6 MB)
  sqlite_txns.py DB JOURNAL_MODE txns N           N transactions, one INSERT of ~100 bytes each

Prints one JSON line; "wrote" is the bytes this process passed to write(2)
and friends meanwhile (wchar of /proc/self/io): what SQLite wrote to the
database, its journal or WAL.
"""
import json
import os
import sqlite3
import sys
import time


def wchar():
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("wchar:"):
                return int(line.split()[1])
    return 0


def main():
    db, mode, what, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("PRAGMA journal_mode=" + mode)
    con.execute("CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, v BLOB)")
    start, t0 = wchar(), time.monotonic()
    txns = 0
    if what == "populate":
        con.execute("BEGIN")
        con.executemany("INSERT INTO t(v) VALUES(randomblob(100))", ([] for _ in range(n)))
        con.execute("COMMIT")
        txns = 1
    else:
        for _ in range(n):
            con.execute("BEGIN")
            con.execute("INSERT INTO t(v) VALUES(randomblob(100))")
            con.execute("COMMIT")
            txns += 1
    wrote, seconds = wchar() - start, time.monotonic() - t0
    rows = con.execute("SELECT count(*) FROM t").fetchone()[0]
    con.close()
    print(json.dumps({"mode": mode, "what": what, "txns": txns, "wrote": wrote,
                      "rows": rows, "seconds": round(seconds, 2),
                      "size": os.path.getsize(db)}))


if __name__ == "__main__":
    main()
