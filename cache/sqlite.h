// SQLite helpers shared by the block index and the metadata cache: errors as
// Status, one use of a prepared statement, and a durable (synchronous=FULL)
// write on a connection that otherwise runs WAL + NORMAL.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <string>

#include "storage/status.h"

namespace stampfs {

// `what` failed with SQLite result `rc` (extended codes are masked): corrupt
// or not a database -> kCorruption, busy/locked -> kTimeout, disk full ->
// kNoSpace, too big -> kTooLarge, read-only -> kReadOnly, else kInternal.
Status SqliteStatus(sqlite3* db, int rc, const std::string& what);

// Runs SQL that returns no rows.
Status SqliteExec(sqlite3* db, const std::string& sql, const std::string& what);

// `write` under synchronous=FULL: what it commits survives a power loss, not
// only a crash of the process (WAL + NORMAL). The mode is NORMAL again after.
Status SqliteDurably(sqlite3* db, const std::function<Status()>& write);

// One use of a prepared statement: binds, steps, and resets it on scope exit
// so that it holds no read transaction or bindings between uses. A failed
// bind is reported by Step/Run. Bound strings must outlive the Use (bound
// without copying).
class Use {
 public:
  Use(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~Use() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  Use(const Use&) = delete;
  Use& operator=(const Use&) = delete;

  Use& Text(int i, const std::string& v);
  Use& Blob(int i, const std::string& v);
  Use& Int(int i, int64_t v) { return Check(sqlite3_bind_int64(stmt_, i, v)); }
  Use& U64(int i, uint64_t v) { return Int(i, static_cast<int64_t>(v)); }

  // SQLITE_ROW, SQLITE_DONE or an error (including a failed bind).
  int Step() { return rc_ != SQLITE_OK ? rc_ : sqlite3_step(stmt_); }
  // Runs a statement that returns no rows.
  Status Run(const std::string& what);

  // Column as raw bytes (TEXT or BLOB; NULL reads as empty).
  std::string Bytes(int col) const;
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  uint64_t U64(int col) const { return static_cast<uint64_t>(Int(col)); }

 private:
  Use& Check(int rc);

  sqlite3* db_;
  sqlite3_stmt* stmt_;
  int rc_ = SQLITE_OK;
};

}  // namespace stampfs
