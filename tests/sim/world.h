// The simulated world: one shared fake account (FakeBlobStore +
// FakeTableStore) and several mounts of it, each seeing the account through
// its own FaultPlan decorators and keeping its own cache directory, assembled
// as fs/daemon/main.cc assembles a mount (Namespace, MetaCache, BlockCache,
// FileData). Time is a simulated clock that only the driver advances.
//
// Kill (kill -9): the mount's objects are destroyed without CommitAll. This
// is faithful because ~FileData only waits for uploads under way and commits
// nothing, and every other object keeps nothing the cache dir does not (the
// SQLite files, the sparse data files and the dirty journal persist).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cache/block_cache.h"
#include "cache/meta_cache.h"
#include "fs/admin/foreign_view.h"
#include "fs/data/file_data.h"
#include "fs/namespace/namespace.h"
#include "storage/fakes.h"

namespace stampfs::sim {

inline constexpr const char* kContainer = "simc";
inline constexpr const char* kTable = "simt";
inline constexpr uint64_t kBlockSize = 64 * 1024;
// Files stay below this (one Put Blob): no background staging, so the order
// of store calls, and with it every fault, is decided by the seed alone.
inline constexpr uint64_t kSinglePutLimit = 2 * kBlockSize;
inline constexpr int64_t kTtlMs = 1000;
// -o foreign_ttl of the mounts of a run with the foreign actor (foreign.h).
inline constexpr int64_t kForeignTtlMs = 30000;

struct SimMount {
  int id = 0;
  std::string cache_dir;
  std::shared_ptr<FaultPlan> table_plan;
  std::shared_ptr<FaultPlan> blob_plan;
  std::unique_ptr<TableStore> table;  // the shared table through `table_plan`
  std::unique_ptr<BlobStore> blobs;   // the shared container through `blob_plan`
  std::unique_ptr<MetaCache> meta;
  std::unique_ptr<Namespace> ns;
  std::unique_ptr<BlockCache> blocks;
  std::unique_ptr<FileData> data;
  // -o foreign_ttl (runs with the foreign actor): wired as fs/daemon/main.cc does.
  std::unique_ptr<ForeignView> foreign;
  bool up() const { return data != nullptr; }
};

class World {
 public:
  // `root`: a fresh directory holding one cache dir per mount.
  World(int mounts, std::string root, ConflictPolicy policy);
  ~World();

  // Starts `m` on its cache dir as fs/daemon/main.cc does: Init (rolls intents
  // forward), ReserveInoRange, ListRoot, BlockCache, FileData, ReplayJournal.
  // A failed step leaves the mount down; the status says which.
  Status Start(SimMount& m);
  // kill -9: drops the mount's objects; nothing is committed.
  void Kill(SimMount& m);
  // A clean unmount: CommitAll, then the objects go.
  size_t Unmount(SimMount& m);

  std::vector<SimMount>& mounts() { return mounts_; }
  TableStore& raw_table() { return *table_; }
  BlobStore& raw_blobs() { return *blobs_; }

  int64_t now_ns() const { return now_ns_; }
  // -o commit=async for mounts started from now on (no pipeline thread: the
  // schedule's pump steps run CommitDue).
  void set_async(bool async) { async_ = async; }
  // -o foreign_ttl=`ttl_ms` for mounts started from now on (0: off).
  void set_foreign_ttl(int64_t ttl_ms) { foreign_ttl_ms_ = ttl_ms; }
  void Advance(int64_t ms) { now_ns_ += ms * 1000000; }

  // A mount on a new cache dir with no faults (the final reader).
  std::unique_ptr<SimMount> FreshMount(Status* started);

 private:
  std::unique_ptr<TableStore> table_;
  std::unique_ptr<BlobStore> blobs_;
  std::vector<SimMount> mounts_;
  std::string root_;
  ConflictPolicy policy_;
  bool async_ = false;
  int64_t foreign_ttl_ms_ = 0;
  int64_t now_ns_ = 1'700'000'000'000'000'000;
  int fresh_ = 0;
};

}  // namespace stampfs::sim
