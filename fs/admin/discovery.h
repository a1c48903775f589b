// -o discover=SECONDS: a mount that periodically imports what other tools
// wrote to its container (the same work as `stampfs import --refresh`,
// fs/admin/import.h): new blobs get entries, entries follow blobs that changed,
// entries of committed files whose blob is gone are removed. Each round
// lists the whole container and reads the whole table, so its cost grows
// with their size; the mount's caches see the changes through the "." ETags
// like any other mount's changes.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "storage/blob_store.h"
#include "storage/table_store.h"

namespace stampfs {

class Discovery {
 public:
  // Starts the thread: the first round after `interval_s` seconds.
  Discovery(TableStore& table, BlobStore& blobs, std::string container, std::string table_name,
            double interval_s);
  ~Discovery();  // stops the thread (waits for a round in progress)
  Discovery(const Discovery&) = delete;
  Discovery& operator=(const Discovery&) = delete;

 private:
  void Loop();
  void Round();

  TableStore& table_;
  BlobStore& blobs_;
  const std::string container_;
  const std::string table_name_;
  const double interval_s_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace stampfs
