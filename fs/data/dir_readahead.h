// Read-ahead across the small files of a directory: a reader opening a
// directory's files one after the other in listing order (`cat dir/*`,
// `grep -r`, rsync, tar c) would pay one round trip per file; once two opens
// in a row follow the listing, the next small files of the listing are
// fetched in parallel into the block cache ahead of it.
//
// Rules:
// - Only from this mount's cached listing (Namespace::FilesAfter: no
//   request), only files up to `max_file_size` that fit in their first block,
//   each GET pinned with If-Match to the ETag the listing saw and written
//   into the cache file of that exact (blob, ETag), so nothing is ever
//   served for another version (a stale listing costs a 412, no data).
// - Bounded: `files` ahead of the reader per directory, `max_bytes` queued
//   or in flight in all, `threads` GETs at once, a few directories tracked.
// - Stopped when the pattern stops: an open out of order in the directory
//   drops every fetch of it not started yet; so does shutdown.
// - Never blocks the opener that triggers it. An open of a file whose fetch
//   is under way waits for that fetch (it would GET the same bytes);
//   one queued is dropped and the opener reads the file itself.
// - A file loaded by FileData is claimed (Claim/Unclaim): no fetch starts
//   while it is, so a fetch never writes into a cache file an open file uses.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cache/block_cache.h"
#include "fs/namespace/namespace.h"
#include "fs/data/work_queue.h"
#include "storage/blob_store.h"

namespace stampfs {

struct DirReadAheadOptions {
  std::string container;
  size_t files = 32;                   // fetched ahead of the reader per directory; 0: off
  uint64_t max_file_size = 1ull << 20;  // larger files are left to the reader (and its stream)
  uint64_t max_bytes = 64ull << 20;     // queued or in flight, all directories
  uint64_t default_block_size = 4ull << 20;  // of files whose entry records none
  int threads = 16;
};

class DirReadAhead {
 public:
  DirReadAhead(Namespace& ns, BlobStore& blobs, BlockCache& cache, DirReadAheadOptions options);
  // Drops the fetches not started and waits for those under way.
  ~DirReadAhead();
  DirReadAhead(const DirReadAhead&) = delete;
  DirReadAhead& operator=(const DirReadAhead&) = delete;

  // Before `ino`'s cache file is acquired for an open: waits for its fetch
  // under way (until this thread's call is cancelled), drops one queued, and
  // keeps any from starting until Unclaim. Idempotent. kCancelled (nothing
  // claimed) when the wait is cancelled.
  Status Claim(uint64_t ino);
  void Unclaim(uint64_t ino);
  // `ino` was opened for reading: when the opens of its directory follow the
  // listing, the files after it are fetched ahead. Never waits on the network.
  void Opened(uint64_t ino);

  struct Stats {
    uint64_t fetched = 0;  // files fetched ahead
    uint64_t dropped = 0;  // queued fetches dropped (pattern stopped, claimed, shutdown)
  };
  Stats stats();

 private:
  struct Job {
    FileState file;
    std::string dir;
    uint64_t generation = 0;
    bool running = false;
  };
  struct Tracker {
    uint64_t generation = 0;
    uint64_t used = 0;                 // clock_ at the last open: the least used goes first
    std::vector<uint64_t> expected;    // the files right after the last one opened
    std::set<uint64_t> scheduled;      // files ahead of the reader already queued or fetched
  };
  static constexpr size_t kExpected = 4;    // an open this close after the last is in order
  static constexpr size_t kMaxTrackers = 64;

  void Run(uint64_t ino);                   // on a worker
  bool Fetch(const FileState& file);        // into the cache; true when fetched
  void Drop(std::map<uint64_t, Job>::iterator it);  // REQUIRES: mu_
  void TrimTrackers();                      // REQUIRES: mu_

  Namespace& ns_;
  BlobStore& blobs_;
  BlockCache& cache_;
  const DirReadAheadOptions options_;
  std::mutex mu_;  // a leaf: taken under an OpenFile's mu, never the other way
  std::condition_variable cv_;                // a running fetch ended
  std::map<uint64_t, Job> jobs_;              // by inode; GUARDED_BY(mu_)
  std::set<uint64_t> claimed_;                // GUARDED_BY(mu_)
  std::map<std::string, Tracker> trackers_;  // by directory path; GUARDED_BY(mu_)
  uint64_t bytes_ = 0;                        // of jobs_; GUARDED_BY(mu_)
  uint64_t clock_ = 0;                        // GUARDED_BY(mu_)
  bool stopping_ = false;                     // GUARDED_BY(mu_)
  Stats stats_;                               // GUARDED_BY(mu_)
  std::unique_ptr<WorkQueue> workers_;        // last: its tasks use everything above
};

}  // namespace stampfs
