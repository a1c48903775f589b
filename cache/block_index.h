// The block cache's persistent index: one SQLite database (WAL) with
//   files(id, blob, etag, bsize, journal columns)   one row per cache file
//   blocks(file, idx, offset, length, extent, state, access)
// BlockCache (cache/block_cache.h) owns the in-memory view and the locking;
// this class only reads and writes rows. Not thread-safe: the caller
// serializes every call.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "storage/status.h"

struct sqlite3;

namespace stampfs {

// Stable on disk: never renumber.
enum class BlockState : int {
  kAbsent = 0,  // not cached (no row)
  kClean = 1,   // the bytes of the committed version the file is keyed by
  kDirty = 2,   // written locally, not uploaded
  kStaged = 3,  // uploaded as an uncommitted block (writer tag + index), not committed
};

// A cache file's uncommitted changes, enough to commit them after a crash.
struct JournalRecord {
  uint64_t ino = 0;
  std::string path;          // the file's path when last journaled
  std::string base_etag;     // committed version the changes apply to ("" = no blob yet)
  uint64_t size = 0;         // file size
  uint64_t remote_size = 0;  // [0, remote_size) not in the cache is the base version's
  int64_t mtime_ns = 0;
  uint64_t tag = 0;  // writer tag of staged block ids
  // Ids of commits sent whose outcome is not known to this record (newest
  // last); a blob whose metadata carries one holds this file's data.
  std::vector<uint64_t> commit_ids;
  // A new file's attributes not in the table yet (a deferred create whose
  // entry its first commit inserts); mode 0: not recorded.
  uint32_t mode = 0, uid = 0, gid = 0;
};

struct FileRow {
  int64_t id = 0;
  std::string blob;
  std::string etag;  // version the clean blocks belong to ("" = none)
  uint64_t block_size = 0;
  std::optional<JournalRecord> journal;
};

struct BlockRow {
  int64_t file = 0;
  uint64_t index = 0;
  uint64_t offset = 0;  // where block `index` starts in the file
  uint64_t length = 0;  // its nominal length (the range punched on eviction)
  uint64_t extent = 0;  // bytes from offset that may hold data (space accounting)
  BlockState state = BlockState::kClean;
  int64_t access = 0;  // LRU order: larger is more recent
};

class BlockIndex {
 public:
  static Result<std::unique_ptr<BlockIndex>> Open(const std::string& path);
  ~BlockIndex();
  BlockIndex(const BlockIndex&) = delete;
  BlockIndex& operator=(const BlockIndex&) = delete;

  Result<int64_t> InsertFile(const std::string& blob, const std::string& etag, uint64_t block_size);
  Status UpdateVersion(int64_t id, const std::string& blob, const std::string& etag);
  Status SetBlockSize(int64_t id, uint64_t block_size);
  // `durable`: synced to disk before it returns (synchronous=FULL for this
  // transaction; the WAL sync covers every earlier one too).
  Status SetJournal(int64_t id, const std::optional<JournalRecord>& journal, bool durable = false);
  Status DeleteFile(int64_t id);  // with its blocks

  Status PutBlock(const BlockRow& row);
  Status DeleteBlock(int64_t file, uint64_t index);
  Status DeleteBlocksFrom(int64_t file, uint64_t first);
  // Dirty and staged blocks of `file` become clean.
  Status MarkClean(int64_t file);
  Status SetAccess(int64_t file, uint64_t index, int64_t access);

  Result<std::vector<FileRow>> Files();
  Result<std::vector<BlockRow>> Blocks();  // by access, oldest first

  // Groups many changes into one transaction (eviction, shutdown).
  Status Begin();
  Status Commit();
  Status Rollback();

 private:
  struct Statements;
  explicit BlockIndex(sqlite3* db);
  sqlite3* db_;
  std::unique_ptr<Statements> stmts_;
};

}  // namespace stampfs
