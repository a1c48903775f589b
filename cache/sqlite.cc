#include "cache/sqlite.h"

#include <climits>

namespace stampfs {

Status SqliteStatus(sqlite3* db, int rc, const std::string& what) {
  Code code = Code::kInternal;
  switch (rc & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      code = Code::kCorruption;
      break;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      code = Code::kTimeout;
      break;
    case SQLITE_READONLY:
      code = Code::kReadOnly;
      break;
    case SQLITE_TOOBIG:
      code = Code::kTooLarge;
      break;
    case SQLITE_FULL:
      code = Code::kNoSpace;
      break;
    default:
      break;
  }
  const char* detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  return Status(code, what + ": " + detail + " (sqlite " + std::to_string(rc) + ")");
}

Status SqliteExec(sqlite3* db, const std::string& sql, const std::string& what) {
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  return rc == SQLITE_OK ? Status::Ok() : SqliteStatus(db, rc, what);
}

Status SqliteDurably(sqlite3* db, const std::function<Status()>& write) {
  STAMPFS_RETURN_IF_ERROR(SqliteExec(db, "PRAGMA synchronous = FULL", "durable write"));
  Status s = write();
  Status back = SqliteExec(db, "PRAGMA synchronous = NORMAL", "after a durable write");
  return s.ok() ? back : s;
}

Use& Use::Text(int i, const std::string& v) {
  if (v.size() > INT_MAX) return Check(SQLITE_TOOBIG);
  return Check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC));
}

Use& Use::Blob(int i, const std::string& v) {
  if (v.size() > INT_MAX) return Check(SQLITE_TOOBIG);
  return Check(sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC));
}

Status Use::Run(const std::string& what) {
  int rc = Step();
  return rc == SQLITE_DONE ? Status::Ok() : SqliteStatus(db_, rc, what);
}

std::string Use::Bytes(int col) const {
  const void* p = sqlite3_column_blob(stmt_, col);
  int n = sqlite3_column_bytes(stmt_, col);
  return p == nullptr ? std::string() : std::string(static_cast<const char*>(p), n);
}

Use& Use::Check(int rc) {
  if (rc_ == SQLITE_OK && rc != SQLITE_OK) rc_ = rc;
  return *this;
}

}  // namespace stampfs
