#include "cache/block_index.h"

#include <sqlite3.h>

#include <array>
#include <cstdio>
#include <cstdlib>

#include "cache/sqlite.h"

namespace stampfs {
namespace {

// 1: journal without commit ids; 2: j_commits; 3: j_mode, j_uid, j_gid
// (each migrated by adding the columns).
constexpr int kSchemaVersion = 3;

constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS files(id INTEGER PRIMARY KEY, blob TEXT NOT NULL,"
    " etag TEXT NOT NULL, bsize INTEGER NOT NULL, journaled INTEGER NOT NULL DEFAULT 0,"
    " j_ino INTEGER, j_path BLOB, j_base TEXT, j_size INTEGER, j_remote INTEGER,"
    " j_mtime INTEGER, j_tag INTEGER, j_commits TEXT, j_mode INTEGER, j_uid INTEGER,"
    " j_gid INTEGER);"
    "CREATE INDEX IF NOT EXISTS files_by_version ON files(blob, etag);"
    "CREATE TABLE IF NOT EXISTS blocks(file INTEGER NOT NULL, idx INTEGER NOT NULL,"
    " offset INTEGER NOT NULL, length INTEGER NOT NULL, extent INTEGER NOT NULL,"
    " state INTEGER NOT NULL, access INTEGER NOT NULL, PRIMARY KEY(file, idx)) WITHOUT ROWID;";

enum Stmt {
  kInsertFile,
  kUpdateVersion,
  kSetBlockSize,
  kSetJournal,
  kClearJournal,
  kDeleteFile,
  kDeleteFileBlocks,
  kPutBlock,
  kDeleteBlock,
  kDeleteBlocksFrom,
  kMarkClean,
  kSetAccess,
  kSelectFiles,
  kSelectBlocks,
  kBegin,
  kCommit,
  kRollback,
  kStmtCount
};

constexpr const char* kSql[kStmtCount] = {
    "INSERT INTO files(blob, etag, bsize) VALUES(?1, ?2, ?3)",
    "UPDATE files SET blob = ?2, etag = ?3 WHERE id = ?1",
    "UPDATE files SET bsize = ?2 WHERE id = ?1",
    "UPDATE files SET journaled = 1, j_ino = ?2, j_path = ?3, j_base = ?4, j_size = ?5,"
    " j_remote = ?6, j_mtime = ?7, j_tag = ?8, j_commits = ?9, j_mode = ?10, j_uid = ?11,"
    " j_gid = ?12 WHERE id = ?1",
    "UPDATE files SET journaled = 0 WHERE id = ?1",
    "DELETE FROM files WHERE id = ?1",
    "DELETE FROM blocks WHERE file = ?1",
    "INSERT OR REPLACE INTO blocks(file, idx, offset, length, extent, state, access)"
    " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    "DELETE FROM blocks WHERE file = ?1 AND idx = ?2",
    "DELETE FROM blocks WHERE file = ?1 AND idx >= ?2",
    "UPDATE blocks SET state = 1 WHERE file = ?1 AND state IN (2, 3)",
    "UPDATE blocks SET access = ?3 WHERE file = ?1 AND idx = ?2",
    "SELECT id, blob, etag, bsize, journaled, j_ino, j_path, j_base, j_size, j_remote, j_mtime,"
    " j_tag, j_commits, j_mode, j_uid, j_gid FROM files",
    "SELECT file, idx, offset, length, extent, state, access FROM blocks ORDER BY access",
    "BEGIN IMMEDIATE",
    "COMMIT",
    "ROLLBACK",
};

// j_commits: 16 hex digits per id, space-separated.
std::string EncodeCommitIds(const std::vector<uint64_t>& ids) {
  std::string out;
  char buf[20];
  for (uint64_t id : ids) {
    std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(id));
    if (!out.empty()) out += ' ';
    out += buf;
  }
  return out;
}

std::vector<uint64_t> DecodeCommitIds(const std::string& text) {
  std::vector<uint64_t> ids;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(pos, end - pos);
    char* stop = nullptr;
    const unsigned long long id = std::strtoull(word.c_str(), &stop, 16);
    if (!word.empty() && *stop == '\0') ids.push_back(id);
    pos = end + 1;
  }
  return ids;
}

Status Configure(sqlite3* db) {
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, 5000);
  STAMPFS_RETURN_IF_ERROR(SqliteExec(db, "PRAGMA journal_mode = WAL", "block index: enable WAL"));
  STAMPFS_RETURN_IF_ERROR(
      SqliteExec(db, "PRAGMA synchronous = NORMAL", "block index: set synchronous"));
  sqlite3_stmt* stmt = nullptr;
  int version = -1;
  if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW) {
    version = sqlite3_column_int(stmt, 0);
  }
  sqlite3_finalize(stmt);
  if (version == kSchemaVersion) return Status::Ok();
  if (version == 1 || version == 2) {
    if (version == 1) {
      STAMPFS_RETURN_IF_ERROR(
          SqliteExec(db, "ALTER TABLE files ADD COLUMN j_commits TEXT", "migrate to schema 2"));
    }
    for (const char* column : {"j_mode", "j_uid", "j_gid"}) {
      STAMPFS_RETURN_IF_ERROR(
          SqliteExec(db, std::string("ALTER TABLE files ADD COLUMN ") + column + " INTEGER",
                     "migrate to schema 3"));
    }
    return SqliteExec(db, "PRAGMA user_version = " + std::to_string(kSchemaVersion), "set version");
  }
  if (version != 0) {
    return Status(Code::kNotSupported,
                  "block index schema version " + std::to_string(version) + " is unknown");
  }
  STAMPFS_RETURN_IF_ERROR(SqliteExec(db, kSchema, "create schema"));
  return SqliteExec(db, "PRAGMA user_version = " + std::to_string(kSchemaVersion), "set version");
}

}  // namespace

struct BlockIndex::Statements {
  std::array<sqlite3_stmt*, kStmtCount> s{};
};

Result<std::unique_ptr<BlockIndex>> BlockIndex::Open(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status s(Code::kInternal,
             "open block index " + path + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
    sqlite3_close(db);
    return s;
  }
  std::unique_ptr<BlockIndex> index(new BlockIndex(db));
  STAMPFS_RETURN_IF_ERROR(Configure(db).WithContext(path));
  for (int i = 0; i < kStmtCount; ++i) {
    rc = sqlite3_prepare_v3(db, kSql[i], -1, SQLITE_PREPARE_PERSISTENT, &index->stmts_->s[i],
                            nullptr);
    if (rc != SQLITE_OK)
      return SqliteStatus(db, rc, std::string("block index: prepare ") + kSql[i]);
  }
  return index;
}

BlockIndex::BlockIndex(sqlite3* db) : db_(db), stmts_(std::make_unique<Statements>()) {}

BlockIndex::~BlockIndex() {
  for (sqlite3_stmt* s : stmts_->s) sqlite3_finalize(s);
  sqlite3_close(db_);
}

Result<int64_t> BlockIndex::InsertFile(const std::string& blob, const std::string& etag,
                                       uint64_t block_size) {
  Use u(db_, stmts_->s[kInsertFile]);
  STAMPFS_RETURN_IF_ERROR(
      u.Text(1, blob).Text(2, etag).U64(3, block_size).Run("block index: insert file"));
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db_));
}

Status BlockIndex::UpdateVersion(int64_t id, const std::string& blob, const std::string& etag) {
  return Use(db_, stmts_->s[kUpdateVersion])
      .Int(1, id)
      .Text(2, blob)
      .Text(3, etag)
      .Run("block index: rekey");
}

Status BlockIndex::SetBlockSize(int64_t id, uint64_t block_size) {
  return Use(db_, stmts_->s[kSetBlockSize])
      .Int(1, id)
      .U64(2, block_size)
      .Run("block index: set block size");
}

Status BlockIndex::SetJournal(int64_t id, const std::optional<JournalRecord>& j, bool durable) {
  if (!j) return Use(db_, stmts_->s[kClearJournal]).Int(1, id).Run("block index: clear journal");
  const auto write = [&] {
    Use u(db_, stmts_->s[kSetJournal]);
    u.Int(1, id).U64(2, j->ino).Blob(3, j->path).Text(4, j->base_etag).U64(5, j->size);
    const std::string ids = EncodeCommitIds(j->commit_ids);
    u.U64(6, j->remote_size).Int(7, j->mtime_ns).U64(8, j->tag).Text(9, ids);
    u.U64(10, j->mode).U64(11, j->uid).U64(12, j->gid);
    return u.Run("block index: journal");
  };
  return durable ? SqliteDurably(db_, write) : write();
}

Status BlockIndex::DeleteFile(int64_t id) {
  STAMPFS_RETURN_IF_ERROR(
      Use(db_, stmts_->s[kDeleteFileBlocks]).Int(1, id).Run("block index: drop blocks"));
  return Use(db_, stmts_->s[kDeleteFile]).Int(1, id).Run("block index: drop file");
}

Status BlockIndex::PutBlock(const BlockRow& r) {
  Use u(db_, stmts_->s[kPutBlock]);
  u.Int(1, r.file).U64(2, r.index).U64(3, r.offset).U64(4, r.length).U64(5, r.extent);
  u.Int(6, static_cast<int>(r.state)).Int(7, r.access);
  return u.Run("block index: put block");
}

Status BlockIndex::DeleteBlock(int64_t file, uint64_t index) {
  return Use(db_, stmts_->s[kDeleteBlock])
      .Int(1, file)
      .U64(2, index)
      .Run("block index: delete block");
}

Status BlockIndex::DeleteBlocksFrom(int64_t file, uint64_t first) {
  return Use(db_, stmts_->s[kDeleteBlocksFrom])
      .Int(1, file)
      .U64(2, first)
      .Run("block index: truncate");
}

Status BlockIndex::MarkClean(int64_t file) {
  return Use(db_, stmts_->s[kMarkClean]).Int(1, file).Run("block index: mark clean");
}

Status BlockIndex::SetAccess(int64_t file, uint64_t index, int64_t access) {
  return Use(db_, stmts_->s[kSetAccess])
      .Int(1, file)
      .U64(2, index)
      .Int(3, access)
      .Run("block index: access");
}

Result<std::vector<FileRow>> BlockIndex::Files() {
  std::vector<FileRow> rows;
  Use u(db_, stmts_->s[kSelectFiles]);
  int rc;
  while ((rc = u.Step()) == SQLITE_ROW) {
    FileRow f;
    f.id = u.Int(0);
    f.blob = u.Bytes(1);
    f.etag = u.Bytes(2);
    f.block_size = u.U64(3);
    if (u.Int(4) != 0) {
      JournalRecord j;
      j.ino = u.U64(5);
      j.path = u.Bytes(6);
      j.base_etag = u.Bytes(7);
      j.size = u.U64(8);
      j.remote_size = u.U64(9);
      j.mtime_ns = u.Int(10);
      j.tag = u.U64(11);
      j.commit_ids = DecodeCommitIds(u.Bytes(12));
      j.mode = static_cast<uint32_t>(u.U64(13));
      j.uid = static_cast<uint32_t>(u.U64(14));
      j.gid = static_cast<uint32_t>(u.U64(15));
      f.journal = std::move(j);
    }
    rows.push_back(std::move(f));
  }
  if (rc != SQLITE_DONE) return SqliteStatus(db_, rc, "block index: list files");
  return rows;
}

Result<std::vector<BlockRow>> BlockIndex::Blocks() {
  std::vector<BlockRow> rows;
  Use u(db_, stmts_->s[kSelectBlocks]);
  int rc;
  while ((rc = u.Step()) == SQLITE_ROW) {
    BlockRow b;
    b.file = u.Int(0);
    b.index = u.U64(1);
    b.offset = u.U64(2);
    b.length = u.U64(3);
    b.extent = u.U64(4);
    b.state = static_cast<BlockState>(u.Int(5));
    b.access = u.Int(6);
    rows.push_back(b);
  }
  if (rc != SQLITE_DONE) return SqliteStatus(db_, rc, "block index: list blocks");
  return rows;
}

Status BlockIndex::Begin() { return Use(db_, stmts_->s[kBegin]).Run("block index: begin"); }
Status BlockIndex::Commit() { return Use(db_, stmts_->s[kCommit]).Run("block index: commit"); }
Status BlockIndex::Rollback() {
  return Use(db_, stmts_->s[kRollback]).Run("block index: rollback");
}

}  // namespace stampfs
