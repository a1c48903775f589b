// The persistent metadata cache: table entities as last seen (with their
// ETags and when they were fetched), and per-directory generations (the ETag
// of the directory's "." row and whether the cached listing is complete).
//
// Invariant: a listing marked complete for partition P with dot ETag E holds
// exactly the entries the table had in P when P's "." row had ETag E. Writers
// that change P through the table must update the cache under the same rule
// (PutEntry/EraseEntry plus SetGeneration with the new "." ETag their batch
// returned) or call InvalidateListing(P).
//
// Thread-safe: one SQLite connection guarded by a mutex; WAL mode. Survives
// restarts: Open() of the same file sees everything written before.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "storage/status.h"
#include "storage/table_store.h"

struct sqlite3;

namespace stampfs {

struct CachedEntity {
  Entity entity;           // keys, properties and ETag as last read or written
  int64_t fetched_ms = 0;  // when the table last confirmed it (ms since epoch)
};

struct DirectoryGeneration {
  std::string dot_etag;      // ETag of the directory's "." row
  bool complete = false;     // every entry of the partition is cached
  int64_t validated_ms = 0;  // when dot_etag was last confirmed against the table
};

// A directory's chmod/chown/utimens acknowledged but not in the table yet
// (commit=async; fs/namespace/namespace_deferred.cc): one row per inode.
struct DeferredAttrsRow {
  uint64_t ino = 0;
  std::string parent_path;  // where its entry was when the change was made
  std::string name;
  std::string change;  // the SetAttrRequest, encoded by the namespace
  int64_t ctime_ns = 0;
};

class MetaCache {
 public:
  // `path` is a file (created if missing) or ":memory:".
  static Result<std::unique_ptr<MetaCache>> Open(const std::string& path);
  ~MetaCache();
  MetaCache(const MetaCache&) = delete;
  MetaCache& operator=(const MetaCache&) = delete;

  std::optional<CachedEntity> GetEntry(const std::string& partition_key,
                                       const std::string& row_key);
  Status PutEntry(const Entity& entity, int64_t now_ms);
  Status EraseEntry(const std::string& partition_key, const std::string& row_key);

  std::optional<DirectoryGeneration> GetGeneration(const std::string& partition_key);
  // Sets the "." ETag and completeness of a partition.
  Status SetGeneration(const std::string& partition_key, const DirectoryGeneration& generation);
  // Marks a partition's listing incomplete (its entries stay as hints).
  Status InvalidateListing(const std::string& partition_key);

  // Replaces every cached entry of the partition with `entries` and records
  // the generation as complete, in one SQLite transaction. With a `ticket`
  // (ReadTicket below), a listing just read: stored only as PutFetched is.
  Status PutListing(const std::string& partition_key, const std::vector<Entity>& entries,
                    const std::string& dot_etag, int64_t now_ms,
                    std::optional<uint64_t> ticket = std::nullopt);
  // Every cached entry of the partition (whatever its completeness), by RowKey.
  std::vector<CachedEntity> ListEntries(const std::string& partition_key);
  // At most `limit` cached entries of the partition after `row_key`, by RowKey.
  std::vector<CachedEntity> ListEntriesAfter(const std::string& partition_key,
                                             const std::string& row_key, size_t limit);

  // Forgets a partition entirely (entries and generation).
  Status DropPartition(const std::string& partition_key);

  // What a read found, stored unless this mount changed the partition while
  // the read was on the wire. A reader takes ReadTicket(P) before its request
  // and stores the answer with PutFetched, EraseFetched or ConfirmGeneration,
  // which do nothing when any write above (PutEntry, EraseEntry,
  // SetGeneration, InvalidateListing, PutListing, DropPartition) of P came
  // after the ticket: that write is newer than the answer (a lookup's answer
  // read before an unlink here must not bring the removed entry back).
  // Partitions share counters by hash: a collision only skips a store.
  uint64_t ReadTicket(const std::string& partition_key);
  Status PutFetched(const Entity& entity, int64_t now_ms, uint64_t ticket);
  Status EraseFetched(const std::string& partition_key, const std::string& row_key,
                      uint64_t ticket);
  // A "." ETag just read that matches the generation: validated_ms moves.
  Status ConfirmGeneration(const std::string& partition_key, const DirectoryGeneration& generation,
                           uint64_t ticket);

  // Deferred directory attribute changes. Put is durable when it returns
  // (synchronous=FULL); a row stays until its change is in the table.
  Status PutDeferredAttrs(const DeferredAttrsRow& row);
  Status EraseDeferredAttrs(uint64_t ino);
  std::vector<DeferredAttrsRow> ListDeferredAttrs();

  // mkdirs under way (Namespace::Mkdir): the new directory's inode and path,
  // from before its "." row is written until its entry is (or the row is
  // gone again). A row left by a crash names a "." row to check at the next
  // mount (Namespace::FinishMkdirs). Survives a kill -9 (WAL), not a power cut.
  Status PutMkdir(uint64_t ino, const std::string& path);
  Status EraseMkdir(uint64_t ino);
  std::vector<std::pair<uint64_t, std::string>> ListMkdirs();

 private:
  struct Statements;  // prepared statements, one per operation (meta_cache.cc)

  explicit MetaCache(sqlite3* db);
  // The partition's rows by RowKey: all, or `limit` after `*after`.
  std::vector<CachedEntity> ListRows(const std::string& partition_key, const std::string* after,
                                     size_t limit);
  // The partition's write counter (ReadTicket). REQUIRES: mu_ held.
  uint64_t& WritesOf(const std::string& partition_key);
  Status PutEntryLocked(const Entity& entity, int64_t now_ms);
  Status EraseEntryLocked(const std::string& partition_key, const std::string& row_key);
  Status SetGenerationLocked(const std::string& partition_key,
                             const DirectoryGeneration& generation);

  static constexpr size_t kWriteCounters = 64;

  std::mutex mu_;
  std::array<uint64_t, kWriteCounters> writes_{};  // GUARDED_BY(mu_)
  sqlite3* db_;                        // GUARDED_BY(mu_)
  std::unique_ptr<Statements> stmts_;  // GUARDED_BY(mu_); finalized before db_ closes
};

}  // namespace stampfs
