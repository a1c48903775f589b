// -o foreign_ttl=SECONDS: a mount that shows what other tools write into
// its container, one directory at a time, as the kernel reads it (issue 30;
// docs/semantics.md, "Other tools' changes"). Namespace asks Check(dir, how)
// on listings and lookups in a directory and before the first open of a file
// in it; a directory checked less than foreign_ttl ago costs nothing, any
// other is brought to its blobs by DirRefresher (one List Blobs of its
// prefix, one partition query, and the writes of what differs). Directories
// nobody reads cost nothing.
//
// Who waits (Namespace::DirectoryCheck): a lookup that found nothing and an
// open wait for a check that is due; a listing waits only for a directory's
// first check; a lookup that found its name never waits. A check nobody
// waits for runs on this view's thread, and what it changes reaches the
// caches through OnChanged (the next read shows it).
//
// A check is a revalidation: its reads get offline_after to answer, and
// without an answer the directory is shown as the table has it (retried
// after at most 5 s). One check per directory runs at a time; a caller that
// would wait for a check already running waits for it (and sees what it
// found).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "fs/admin/dir_refresh.h"
#include "fs/namespace/namespace.h"
#include "storage/blob_events.h"

namespace stampfs {

struct ForeignViewStats {
  uint64_t checks = 0;    // directories refreshed
  uint64_t changes = 0;   // entries created, updated or removed by checks and events
  uint64_t failures = 0;  // checks without an answer or with an error
  uint64_t events = 0;    // events applied (each after a read of its blob)
  uint64_t stale_events = 0;  // events older than one applied for the same blob
};

class ForeignView {
 public:
  // `options`: as for DirRefresher. `ttl_ms` > 0.
  ForeignView(TableStore& table, BlobStore& blobs, ImportOptions options, int64_t ttl_ms,
              int64_t offline_after_ms, std::function<int64_t()> now_ms = {});
  ~ForeignView();  // Stop()
  // Stops the thread (a check in progress finishes first); checks after it
  // run on the caller's thread only. Before what OnChanged tells goes away.
  void Stop();
  ForeignView(const ForeignView&) = delete;
  ForeignView& operator=(const ForeignView&) = delete;

  // True when a check the caller waited for changed the directory's entries.
  bool Check(const std::string& dir_path, Namespace::DirectoryCheck how);
  // Waits until no check runs or waits to run on the thread (tests).
  void Settle();
  // -o events (fs/admin/change_events.h): the event's blob's entry brought to
  // what a read of the blob finds now (DirRefresher::RefreshBlob). An event
  // whose sequencer is older than the last one applied for its blob changes
  // nothing. A failure leaves the message to come back.
  Status ApplyEvent(const BlobEvent& event);
  ForeignViewStats stats() const;
  // Told of what a check or an event changed, in this order: each directory
  // whose entries changed (a cached copy of it is stale), then each inode
  // whose entry was updated or removed (the kernel's attributes of it are
  // stale; told after the directories, so asking again finds the new entry).
  // Set before serving.
  void OnChanged(std::function<void(const std::string& dir)> dir_changed,
                 std::function<void(uint64_t ino)> inode_changed) {
    dir_changed_ = std::move(dir_changed);
    inode_changed_ = std::move(inode_changed);
  }

 private:
  struct Dir {
    int64_t next_ms = 0;  // no check before this time
    bool running = false;
    bool changed = false;  // what the last check found
  };
  bool Refresh(const std::string& dir_path);
  // Runs `dir_path`'s check here; REQUIRES: its Dir marked running.
  bool RunCheck(const std::string& dir_path);
  void Loop();
  // `dirs`: the directories the report's changes are in.
  void TellChanged(const ImportReport& report, const std::vector<std::string>& dirs);

  DirRefresher refresher_;
  const int64_t ttl_ms_;
  const int64_t offline_after_ms_;
  std::function<int64_t()> now_ms_;
  std::function<void(const std::string&)> dir_changed_;
  std::function<void(uint64_t)> inode_changed_;
  mutable std::mutex mu_;
  std::condition_variable done_;
  std::unordered_map<std::string, Dir> dirs_;  // GUARDED_BY(mu_)
  std::deque<std::string> queued_;             // GUARDED_BY(mu_): checks for the thread
  bool stopping_ = false;                      // GUARDED_BY(mu_)
  std::condition_variable work_;
  std::thread thread_;  // started by the first check nobody waits for
  std::unordered_map<std::string, std::string> sequencers_;  // GUARDED_BY(mu_), by blob
  ForeignViewStats stats_;                     // GUARDED_BY(mu_)
};

}  // namespace stampfs
