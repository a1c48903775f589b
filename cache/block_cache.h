// The block cache: file data by block in sparse files under DIR (one data
// file DIR/<id>.data per cache file, byte x of the file at offset x), indexed
// in SQLite (DIR/index.db, cache/block_index.h).
//
// A cache file holds the data of one blob as this mount knows it, keyed by
// (blob name, ETag of the committed version its clean blocks belong to); an
// open file writing changes keeps its dirty blocks in the same file.
//
// Invariants:
// - A block row (file, k) exists iff the data file holds block k's bytes
//   (within the file size; the rest of the block reads as zeros). Absent
//   blocks are holes.
// - Clean blocks are the bytes of version (blob, etag); unpinned clean
//   blocks may be evicted at any time (hole punched, row deleted), least
//   recently used first, to keep the bytes held under the capacity.
// - Dirty and staged blocks are never evicted: they are the only copy of
//   data not yet committed.
// - A cache file with a journal record has uncommitted changes; after a crash
//   the record and its dirty/staged blocks are enough to commit them.
// - Reuse is by (blob, ETag) only: a version is never served for another.
//
// Thread-safe: one mutex guards the in-memory view and the index; callers
// pin blocks they read or write so eviction cannot punch them meanwhile.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cache/block_index.h"
#include "storage/status.h"

namespace stampfs {

struct CacheFileInfo {
  int64_t id = 0;
  std::string blob;
  std::string etag;
  uint64_t block_size = 0;
  std::optional<JournalRecord> journal;
};

struct BlockCacheStats {
  uint64_t capacity = 0;
  uint64_t used = 0;         // bytes of cached blocks (extents)
  uint64_t blocks = 0;       // cached blocks
  uint64_t uncommitted = 0;  // of which dirty or staged
  uint64_t files = 0;
  uint64_t evicted = 0;  // bytes evicted since open
  uint64_t journal_syncs = 0;  // durable journal writes since open (SetJournal)
};

class BlockCache {
 public:
  // Creates DIR if missing; drops data files the index does not know.
  // `max_blocks` bounds the blocks held whatever their size (each costs
  // memory for the in-memory index and often a small data file).
  static Result<std::unique_ptr<BlockCache>> Open(const std::string& dir, uint64_t capacity,
                                                  uint64_t max_blocks = 200000);
  ~BlockCache();
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // ---- cache files
  // The cache file of committed version (blob, etag), created if missing, in
  // use until Release. An empty etag (no committed blob) always makes a new
  // file. Journaled files are never returned here.
  Result<int64_t> Acquire(const std::string& blob, const std::string& etag, uint64_t block_size);
  // A known file by id (journal replay).
  Result<int64_t> AcquireId(int64_t id);
  // Ends one use; an unused file without blocks or journal is removed.
  void Release(int64_t id);
  // The data file. REQUIRES: acquired.
  int fd(int64_t id);
  std::optional<CacheFileInfo> Info(int64_t id);
  // The file now holds committed version (blob, etag); unused clean versions
  // of `blob` are dropped.
  Status Rekey(int64_t id, const std::string& blob, const std::string& etag);
  // A server-side copy made (to_blob, to_etag) a byte-for-byte copy of
  // (from_blob, from_etag) (a rename): the clean cache file of the source
  // version, unless in use or journaled, becomes the destination's (unused
  // versions of to_blob are dropped). False when nothing moved.
  bool MoveVersion(const std::string& from_blob, const std::string& from_etag,
                   const std::string& to_blob, const std::string& to_etag);
  // Forgets every block and the journal; the file goes at its last Release.
  Status Discard(int64_t id);

  // ---- blocks
  BlockState State(int64_t id, uint64_t k);
  // Records block k (starting at `offset`, nominal `length`) as holding
  // `extent` bytes from offset, in `state`. Writes the index when the state
  // or its place changes; extent growth alone is kept in memory.
  Status Set(int64_t id, uint64_t k, BlockState state, uint64_t offset, uint64_t length,
             uint64_t extent);
  // The file's layout changed to base block size `block_size`: its blocks
  // are replaced by `rows` in one transaction (the data file is untouched:
  // the caller made every byte the rows cover local).
  Status Relayout(int64_t id, uint64_t block_size, const std::vector<BlockRow>& rows);
  // Every cached block of the file.
  std::map<uint64_t, BlockState> Blocks(int64_t id);
  // Forgets blocks >= first (after a truncate; the caller truncates the data).
  Status DropFrom(int64_t id, uint64_t first);
  // Dirty and staged blocks become clean (now part of the committed version).
  Status MarkClean(int64_t id);
  uint64_t UncommittedBytes(int64_t id);
  // Pins protect a block (present or about to be) from eviction.
  void Pin(int64_t id, uint64_t k);
  void Unpin(int64_t id, uint64_t k);
  // Marks a block recently used.
  void Touch(int64_t id, uint64_t k);

  // ---- space
  // Evicts unpinned clean blocks, least recently used first, until `bytes`
  // more (in one more block) fit under the capacity and the block count
  // limit. False when they do not fit (what is left is dirty, staged or
  // pinned).
  bool MakeRoom(uint64_t bytes);
  uint64_t Capacity() const { return capacity_; }
  // kNoSpace when writing `bytes` of data would leave less than the reserve
  // free on the cache's disk. The reserve keeps room for the index and the
  // journal, whose updates commit what was written (with the disk full, a
  // commit uploaded the data, could not mark it clean, and its retry met
  // its own version as another writer's).
  Status CheckDiskRoom(uint64_t bytes) const;
  static constexpr uint64_t kDiskReserve = 8ull << 20;
  BlockCacheStats Stats();

  // ---- dirty journal
  // `durable`: the file's data and the record are on disk when it returns
  // (fdatasync of the data file, then a synced journal transaction).
  Status SetJournal(int64_t id, const JournalRecord& record, bool durable = false);
  Status ClearJournal(int64_t id);
  std::vector<CacheFileInfo> Journaled();

 private:
  using Key = std::pair<int64_t, uint64_t>;
  struct Block {
    BlockRow row;
    bool in_lru = false;
    std::list<Key>::iterator lru;
  };
  struct File {
    CacheFileInfo info;
    int fd = -1;
    int users = 0;
    bool discarded = false;
    uint64_t uncommitted = 0;
    std::map<uint64_t, Block> blocks;
  };

  BlockCache(std::string dir, uint64_t capacity, uint64_t max_blocks,
             std::unique_ptr<BlockIndex> index);
  bool Full(uint64_t bytes) const {  // REQUIRES: mu_
    return used_ + bytes > capacity_ || blocks_ + 1 > max_blocks_;
  }
  Status Load();
  std::string DataPath(int64_t id) const;
  File* Find(int64_t id);  // REQUIRES: mu_
  Result<int64_t> NewFile(const std::string& blob, const std::string& etag, uint64_t bsize);
  Status OpenData(File& f);
  void RemoveFile(int64_t id);                                      // REQUIRES: mu_
  void DropBlock(File& f, std::map<uint64_t, Block>::iterator it);  // REQUIRES: mu_
  void Account(File& f, const Block& b, int sign);                  // REQUIRES: mu_
  void LruInsert(Block& b);                                         // REQUIRES: mu_
  void LruErase(Block& b);                                          // REQUIRES: mu_
  void Punch(File& f, const BlockRow& row);
  void DropUnusedVersions(const std::string& blob, int64_t keep);  // REQUIRES: mu_
  Status RekeyLocked(File& f, const std::string& blob, const std::string& etag);  // REQUIRES: mu_

  const std::string dir_;
  const uint64_t capacity_;
  const uint64_t max_blocks_;
  std::mutex mu_;
  std::unique_ptr<BlockIndex> index_;                                // GUARDED_BY(mu_)
  std::map<int64_t, File> files_;                                    // GUARDED_BY(mu_)
  std::map<std::pair<std::string, std::string>, int64_t> versions_;  // (blob, etag) -> clean file
  std::list<Key> lru_;  // clean blocks, least recently used first
  std::map<Key, int> pins_;
  uint64_t used_ = 0;
  uint64_t blocks_ = 0;
  uint64_t uncommitted_ = 0;
  uint64_t evicted_ = 0;
  uint64_t journal_syncs_ = 0;
  int64_t clock_ = 0;  // access counter
};

}  // namespace stampfs
