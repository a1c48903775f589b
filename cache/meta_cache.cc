#include "cache/meta_cache.h"

#include <sqlite3.h>

#include <array>
#include <filesystem>
#include <functional>
#include <system_error>
#include <utility>

#include "cache/entity_codec.h"
#include "cache/sqlite.h"

namespace stampfs {
namespace {

// ---------------------------------------------------------------------------
// Schema and statements.

constexpr int kSchemaVersion = 3;
constexpr int kBusyTimeoutMs = 5000;

// Migrations[v] takes a database from user_version v to v + 1.
constexpr const char* kMigrations[kSchemaVersion] = {
    "CREATE TABLE IF NOT EXISTS entries(pk TEXT, rk TEXT, props BLOB, etag TEXT,"
    " fetched_ms INTEGER, PRIMARY KEY(pk, rk)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS generations(pk TEXT PRIMARY KEY, dot_etag TEXT,"
    " complete INTEGER, validated_ms INTEGER);",
    "CREATE TABLE IF NOT EXISTS deferred_attrs(ino INTEGER PRIMARY KEY, parent TEXT,"
    " name TEXT, change TEXT, ctime_ns INTEGER);",
    "CREATE TABLE IF NOT EXISTS mkdirs(ino INTEGER PRIMARY KEY, path TEXT);",
};

enum Stmt {
  kGetEntry,
  kPutEntry,
  kEraseEntry,
  kGetGeneration,
  kSetGeneration,
  kInvalidate,
  kDeleteEntries,
  kDeleteGeneration,
  kListEntries,
  kListAfter,
  kPutDeferred,
  kEraseDeferred,
  kListDeferred,
  kPutMkdir,
  kEraseMkdir,
  kListMkdirs,
  kBegin,
  kCommit,
  kRollback,
  kStmtCount
};

constexpr const char* kSql[kStmtCount] = {
    "SELECT props, etag, fetched_ms FROM entries WHERE pk = ?1 AND rk = ?2",
    "INSERT OR REPLACE INTO entries(pk, rk, props, etag, fetched_ms) VALUES(?1, ?2, ?3, ?4, ?5)",
    "DELETE FROM entries WHERE pk = ?1 AND rk = ?2",
    "SELECT dot_etag, complete, validated_ms FROM generations WHERE pk = ?1",
    "INSERT OR REPLACE INTO generations(pk, dot_etag, complete, validated_ms)"
    " VALUES(?1, ?2, ?3, ?4)",
    "UPDATE generations SET complete = 0 WHERE pk = ?1",
    "DELETE FROM entries WHERE pk = ?1",
    "DELETE FROM generations WHERE pk = ?1",
    "SELECT rk, props, etag, fetched_ms FROM entries WHERE pk = ?1 ORDER BY rk",
    "SELECT rk, props, etag, fetched_ms FROM entries WHERE pk = ?1 AND rk > ?2 ORDER BY rk"
    " LIMIT ?3",
    "INSERT OR REPLACE INTO deferred_attrs(ino, parent, name, change, ctime_ns)"
    " VALUES(?1, ?2, ?3, ?4, ?5)",
    "DELETE FROM deferred_attrs WHERE ino = ?1",
    "SELECT ino, parent, name, change, ctime_ns FROM deferred_attrs ORDER BY ino",
    "INSERT OR REPLACE INTO mkdirs(ino, path) VALUES(?1, ?2)",
    "DELETE FROM mkdirs WHERE ino = ?1",
    "SELECT ino, path FROM mkdirs ORDER BY ino",
    "BEGIN IMMEDIATE",
    "COMMIT",
    "ROLLBACK",
};

using StatementArray = std::array<sqlite3_stmt*, kStmtCount>;

Status ReadUserVersion(sqlite3* db, int* version) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_step(stmt);
  Status st = rc == SQLITE_ROW ? Status::Ok() : SqliteStatus(db, rc, "read schema version");
  if (st.ok()) *version = sqlite3_column_int(stmt, 0);
  sqlite3_finalize(stmt);
  return st;
}

// Brings the schema to kSchemaVersion; refuses a database from a newer build.
Status Migrate(sqlite3* db) {
  int version = 0;
  STAMPFS_RETURN_IF_ERROR(ReadUserVersion(db, &version));
  if (version == kSchemaVersion) return Status::Ok();
  STAMPFS_RETURN_IF_ERROR(SqliteExec(db, "BEGIN IMMEDIATE", "begin migration"));
  // Re-read under the write lock: another process may have migrated meanwhile.
  Status st = ReadUserVersion(db, &version);
  if (st.ok() && (version < 0 || version > kSchemaVersion)) {
    st = Status(Code::kNotSupported, "cache schema version " + std::to_string(version) +
                                         " is not one this build knows (" +
                                         std::to_string(kSchemaVersion) + ")");
  }
  for (int v = version; st.ok() && v < kSchemaVersion; ++v) {
    st = SqliteExec(db, kMigrations[v], "migrate schema to version " + std::to_string(v + 1));
  }
  if (st.ok() && version != kSchemaVersion) {
    st = SqliteExec(db, "PRAGMA user_version = " + std::to_string(kSchemaVersion),
                    "set schema version");
  }
  if (st.ok()) st = SqliteExec(db, "COMMIT", "commit migration");
  if (!st.ok()) SqliteExec(db, "ROLLBACK", "rollback migration").PermitUnchecked();
  return st;
}

Status Configure(sqlite3* db) {
  sqlite3_extended_result_codes(db, 1);
  int rc = sqlite3_busy_timeout(db, kBusyTimeoutMs);
  if (rc != SQLITE_OK) return SqliteStatus(db, rc, "set busy timeout");
  // The first statement that reads the file: a non-SQLite file fails here.
  STAMPFS_RETURN_IF_ERROR(SqliteExec(db, "PRAGMA journal_mode = WAL", "enable WAL"));
  STAMPFS_RETURN_IF_ERROR(SqliteExec(db, "PRAGMA synchronous = NORMAL", "set synchronous"));
  return Migrate(db);
}

Status Prepare(sqlite3* db, StatementArray* stmts) {
  for (int i = 0; i < kStmtCount; ++i) {
    int rc = sqlite3_prepare_v3(db, kSql[i], -1, SQLITE_PREPARE_PERSISTENT, &(*stmts)[i], nullptr);
    if (rc != SQLITE_OK) return SqliteStatus(db, rc, std::string("prepare ") + kSql[i]);
  }
  return Status::Ok();
}

// A parent directory that does not exist gets a clearer error than SQLite's
// "unable to open database file".
Status CheckParentDirectory(const std::string& path) {
  if (path.empty() || path == ":memory:") return Status::Ok();
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) return Status::Ok();
  std::error_code ec;
  if (std::filesystem::is_directory(parent, ec)) return Status::Ok();
  return Status(Code::kNotFound, "directory " + parent.string() + " does not exist");
}

// Runs `body` between BEGIN IMMEDIATE and COMMIT; rolls back if anything fails.
template <typename Body>
Status InTransaction(sqlite3* db, const StatementArray& s, const std::string& what, Body body) {
  STAMPFS_RETURN_IF_ERROR(Use(db, s[kBegin]).Run(what + ": begin"));
  Status st = body();
  if (st.ok()) st = Use(db, s[kCommit]).Run(what + ": commit");
  if (!st.ok()) Use(db, s[kRollback]).Run(what + ": rollback").PermitUnchecked();
  return st;
}

// A row whose blob no longer decodes is useless: drop it, and mark the
// listing incomplete so a "complete" listing never silently lacks it.
void ForgetCorruptRow(sqlite3* db, const StatementArray& s, const std::string& pk,
                      const std::string& rk) {
  Use(db, s[kEraseEntry]).Text(1, pk).Text(2, rk).Run("drop corrupt entry").PermitUnchecked();
  Use(db, s[kInvalidate]).Text(1, pk).Run("invalidate listing").PermitUnchecked();
}

}  // namespace

struct MetaCache::Statements {
  StatementArray s{};
  Statements() = default;
  Statements(const Statements&) = delete;
  Statements& operator=(const Statements&) = delete;
  ~Statements() {
    for (sqlite3_stmt* stmt : s) sqlite3_finalize(stmt);  // finalize(nullptr) is a no-op
  }
};

MetaCache::MetaCache(sqlite3* db) : db_(db), stmts_(std::make_unique<Statements>()) {}

MetaCache::~MetaCache() {
  stmts_.reset();  // statements first, or the connection cannot close
  sqlite3_close_v2(db_);
}

Result<std::unique_ptr<MetaCache>> MetaCache::Open(const std::string& path) {
  const std::string what = "open metadata cache " + path;
  Status st = CheckParentDirectory(path);
  if (!st.ok()) return st.WithContext(what);
  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    st = SqliteStatus(db, rc, what);
    sqlite3_close_v2(db);  // a no-op on nullptr
    return st;
  }
  std::unique_ptr<MetaCache> cache(new MetaCache(db));  // owns db from here
  st = Configure(db);
  if (st.ok()) st = Prepare(db, &cache->stmts_->s);
  if (!st.ok()) return st.WithContext(what);
  return cache;
}

std::optional<CachedEntity> MetaCache::GetEntry(const std::string& partition_key,
                                                const std::string& row_key) {
  std::lock_guard<std::mutex> lock(mu_);
  const StatementArray& s = stmts_->s;
  CachedEntity out;
  {
    Use q(db_, s[kGetEntry]);
    if (q.Text(1, partition_key).Text(2, row_key).Step() != SQLITE_ROW) return std::nullopt;
    if (DecodeProperties(q.Bytes(0), &out.entity).ok()) {
      out.entity.partition_key = partition_key;
      out.entity.row_key = row_key;
      out.entity.etag = q.Bytes(1);
      out.fetched_ms = q.Int(2);
      return out;
    }
  }
  ForgetCorruptRow(db_, s, partition_key, row_key);
  return std::nullopt;
}

Status MetaCache::PutEntry(const Entity& entity, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  ++WritesOf(entity.partition_key);
  return PutEntryLocked(entity, now_ms);
}

Status MetaCache::PutEntryLocked(const Entity& entity, int64_t now_ms) {
  const std::string props = EncodeProperties(entity);
  return Use(db_, stmts_->s[kPutEntry])
      .Text(1, entity.partition_key)
      .Text(2, entity.row_key)
      .Blob(3, props)
      .Text(4, entity.etag)
      .Int(5, now_ms)
      .Run("metadata cache: put entry");
}

Status MetaCache::EraseEntry(const std::string& partition_key, const std::string& row_key) {
  std::lock_guard<std::mutex> lock(mu_);
  ++WritesOf(partition_key);
  return EraseEntryLocked(partition_key, row_key);
}

Status MetaCache::EraseEntryLocked(const std::string& partition_key, const std::string& row_key) {
  return Use(db_, stmts_->s[kEraseEntry])
      .Text(1, partition_key)
      .Text(2, row_key)
      .Run("metadata cache: erase entry");
}

std::optional<DirectoryGeneration> MetaCache::GetGeneration(const std::string& partition_key) {
  std::lock_guard<std::mutex> lock(mu_);
  Use q(db_, stmts_->s[kGetGeneration]);
  if (q.Text(1, partition_key).Step() != SQLITE_ROW) return std::nullopt;
  DirectoryGeneration g;
  g.dot_etag = q.Bytes(0);
  g.complete = q.Int(1) != 0;
  g.validated_ms = q.Int(2);
  return g;
}

Status MetaCache::SetGeneration(const std::string& partition_key,
                                const DirectoryGeneration& generation) {
  std::lock_guard<std::mutex> lock(mu_);
  ++WritesOf(partition_key);
  return SetGenerationLocked(partition_key, generation);
}

Status MetaCache::SetGenerationLocked(const std::string& partition_key,
                                      const DirectoryGeneration& generation) {
  return Use(db_, stmts_->s[kSetGeneration])
      .Text(1, partition_key)
      .Text(2, generation.dot_etag)
      .Int(3, generation.complete ? 1 : 0)
      .Int(4, generation.validated_ms)
      .Run("metadata cache: set generation");
}

Status MetaCache::InvalidateListing(const std::string& partition_key) {
  std::lock_guard<std::mutex> lock(mu_);
  ++WritesOf(partition_key);
  return Use(db_, stmts_->s[kInvalidate])
      .Text(1, partition_key)
      .Run("metadata cache: invalidate listing");
}

Status MetaCache::PutListing(const std::string& partition_key, const std::vector<Entity>& entries,
                             const std::string& dot_etag, int64_t now_ms,
                             std::optional<uint64_t> ticket) {
  for (const Entity& e : entries) {
    if (e.partition_key != partition_key) {
      return Status(Code::kInvalidArgument,
                    "metadata cache: put listing: entry of another partition");
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!ticket) {
    ++WritesOf(partition_key);
  } else if (WritesOf(partition_key) != *ticket) {
    return Status::Ok();
  }
  const StatementArray& s = stmts_->s;
  const std::string what = "metadata cache: put listing";
  return InTransaction(db_, s, what, [&]() -> Status {
    STAMPFS_RETURN_IF_ERROR(Use(db_, s[kDeleteEntries]).Text(1, partition_key).Run(what));
    for (const Entity& e : entries) {
      const std::string props = EncodeProperties(e);
      STAMPFS_RETURN_IF_ERROR(Use(db_, s[kPutEntry])
                                  .Text(1, partition_key)
                                  .Text(2, e.row_key)
                                  .Blob(3, props)
                                  .Text(4, e.etag)
                                  .Int(5, now_ms)
                                  .Run(what));
    }
    return Use(db_, s[kSetGeneration])
        .Text(1, partition_key)
        .Text(2, dot_etag)
        .Int(3, 1)
        .Int(4, now_ms)
        .Run(what);
  });
}

namespace {

// Reads the rows of a SELECT of rk, props, etag, fetched_ms in
// `partition_key`; the RowKeys of undecodable ones go to *corrupt.
int CollectRows(Use& q, const std::string& partition_key, std::vector<CachedEntity>* out,
                std::vector<std::string>* corrupt) {
  int rc;
  while ((rc = q.Step()) == SQLITE_ROW) {
    CachedEntity c;
    c.entity.row_key = q.Bytes(0);
    if (!DecodeProperties(q.Bytes(1), &c.entity).ok()) {
      corrupt->push_back(std::move(c.entity.row_key));
      continue;
    }
    c.entity.partition_key = partition_key;
    c.entity.etag = q.Bytes(2);
    c.fetched_ms = q.Int(3);
    out->push_back(std::move(c));
  }
  return rc;
}

// After CollectRows, its statement reset: corrupt rows are forgotten, and a
// listing read in part must not pass for a complete one.
void SettleRows(sqlite3* db, const StatementArray& s, const std::string& partition_key,
                const std::vector<std::string>& corrupt, int rc) {
  for (const std::string& rk : corrupt) ForgetCorruptRow(db, s, partition_key, rk);
  if (rc != SQLITE_DONE) {
    Use(db, s[kInvalidate]).Text(1, partition_key).Run("invalidate").PermitUnchecked();
  }
}

}  // namespace

std::vector<CachedEntity> MetaCache::ListEntries(const std::string& partition_key) {
  return ListRows(partition_key, nullptr, 0);
}

std::vector<CachedEntity> MetaCache::ListEntriesAfter(const std::string& partition_key,
                                                      const std::string& row_key, size_t limit) {
  return ListRows(partition_key, &row_key, limit);
}

std::vector<CachedEntity> MetaCache::ListRows(const std::string& partition_key,
                                              const std::string* after, size_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  const StatementArray& s = stmts_->s;
  std::vector<CachedEntity> out;
  std::vector<std::string> corrupt;
  int rc;
  {
    Use q(db_, s[after ? kListAfter : kListEntries]);
    q.Text(1, partition_key);
    if (after) q.Text(2, *after).Int(3, static_cast<int64_t>(limit));
    rc = CollectRows(q, partition_key, &out, &corrupt);
  }
  SettleRows(db_, s, partition_key, corrupt, rc);
  return out;
}

Status MetaCache::DropPartition(const std::string& partition_key) {
  std::lock_guard<std::mutex> lock(mu_);
  ++WritesOf(partition_key);
  const StatementArray& s = stmts_->s;
  const std::string what = "metadata cache: drop partition";
  return InTransaction(db_, s, what, [&]() -> Status {
    STAMPFS_RETURN_IF_ERROR(Use(db_, s[kDeleteEntries]).Text(1, partition_key).Run(what));
    return Use(db_, s[kDeleteGeneration]).Text(1, partition_key).Run(what);
  });
}

uint64_t& MetaCache::WritesOf(const std::string& partition_key) {
  return writes_[std::hash<std::string>{}(partition_key) % kWriteCounters];
}

uint64_t MetaCache::ReadTicket(const std::string& partition_key) {
  std::lock_guard<std::mutex> lock(mu_);
  return WritesOf(partition_key);
}

Status MetaCache::PutFetched(const Entity& entity, int64_t now_ms, uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  if (WritesOf(entity.partition_key) != ticket) return Status::Ok();
  return PutEntryLocked(entity, now_ms);
}

Status MetaCache::EraseFetched(const std::string& partition_key, const std::string& row_key,
                               uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  if (WritesOf(partition_key) != ticket) return Status::Ok();
  return EraseEntryLocked(partition_key, row_key);
}

Status MetaCache::ConfirmGeneration(const std::string& partition_key,
                                    const DirectoryGeneration& generation, uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  if (WritesOf(partition_key) != ticket) return Status::Ok();
  return SetGenerationLocked(partition_key, generation);
}

// Durable: the change is acknowledged to the caller once this returns.
Status MetaCache::PutDeferredAttrs(const DeferredAttrsRow& row) {
  std::lock_guard<std::mutex> lock(mu_);
  return SqliteDurably(db_, [&] {
    return Use(db_, stmts_->s[kPutDeferred])
        .Int(1, static_cast<int64_t>(row.ino))
        .Text(2, row.parent_path)
        .Text(3, row.name)
        .Text(4, row.change)
        .Int(5, row.ctime_ns)
        .Run("metadata cache: put deferred attrs");
  });
}

Status MetaCache::EraseDeferredAttrs(uint64_t ino) {
  std::lock_guard<std::mutex> lock(mu_);
  return Use(db_, stmts_->s[kEraseDeferred])
      .Int(1, static_cast<int64_t>(ino))
      .Run("metadata cache: erase deferred attrs");
}

std::vector<DeferredAttrsRow> MetaCache::ListDeferredAttrs() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<DeferredAttrsRow> out;
  Use q(db_, stmts_->s[kListDeferred]);
  while (q.Step() == SQLITE_ROW) {
    out.push_back({static_cast<uint64_t>(q.Int(0)), q.Bytes(1), q.Bytes(2), q.Bytes(3), q.Int(4)});
  }
  return out;
}

Status MetaCache::PutMkdir(uint64_t ino, const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  return Use(db_, stmts_->s[kPutMkdir])
      .Int(1, static_cast<int64_t>(ino))
      .Text(2, path)
      .Run("metadata cache: put mkdir");
}

Status MetaCache::EraseMkdir(uint64_t ino) {
  std::lock_guard<std::mutex> lock(mu_);
  return Use(db_, stmts_->s[kEraseMkdir])
      .Int(1, static_cast<int64_t>(ino))
      .Run("metadata cache: erase mkdir");
}

std::vector<std::pair<uint64_t, std::string>> MetaCache::ListMkdirs() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<uint64_t, std::string>> out;
  Use q(db_, stmts_->s[kListMkdirs]);
  while (q.Step() == SQLITE_ROW) out.emplace_back(static_cast<uint64_t>(q.Int(0)), q.Bytes(1));
  return out;
}

}  // namespace stampfs
