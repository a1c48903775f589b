// -o foreign_ttl=SECONDS: a mount that shows what other tools write into
// its container, one directory at a time, as the kernel reads it (issue 30;
// docs/semantics.md, "Other tools' changes"). Namespace asks Check(dir)
// before a listing of a directory and after a lookup in it found nothing;
// a directory checked less than foreign_ttl ago costs nothing, any other
// is brought to its blobs by DirRefresher (one List Blobs of its prefix,
// one partition query, and the writes of what differs). Directories nobody
// reads cost nothing.
//
// A check is a revalidation: its reads get offline_after to answer, and
// without an answer the directory is shown as the table has it (retried
// after at most 5 s). One check per directory runs at a time; a reader
// arriving meanwhile waits for it (and sees what it found).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

#include "fs/admin/dir_refresh.h"

namespace stampfs {

struct ForeignViewStats {
  uint64_t checks = 0;    // directories refreshed
  uint64_t changes = 0;   // entries created, updated or removed by them
  uint64_t failures = 0;  // checks without an answer or with an error
};

class ForeignView {
 public:
  // `options`: as for DirRefresher. `ttl_ms` > 0.
  ForeignView(TableStore& table, BlobStore& blobs, ImportOptions options, int64_t ttl_ms,
              int64_t offline_after_ms, std::function<int64_t()> now_ms = {});

  // True when the check changed the directory's entries in the table.
  bool Check(const std::string& dir_path);
  // Forgets when `dir_path` was checked: the next Check refreshes it (an
  // event said it changed).
  void Expire(const std::string& dir_path);
  ForeignViewStats stats() const;

 private:
  struct Dir {
    int64_t next_ms = 0;  // no check before this time
    bool running = false;
    bool changed = false;  // what the last check found
  };
  bool Refresh(const std::string& dir_path);

  DirRefresher refresher_;
  const int64_t ttl_ms_;
  const int64_t offline_after_ms_;
  std::function<int64_t()> now_ms_;
  mutable std::mutex mu_;
  std::condition_variable done_;
  std::unordered_map<std::string, Dir> dirs_;  // GUARDED_BY(mu_)
  ForeignViewStats stats_;                     // GUARDED_BY(mu_)
};

}  // namespace stampfs
