#include "fs/admin/discovery.h"

#include <unistd.h>

#include <chrono>

#include "fs/admin/import.h"
#include "fs/base/log.h"

namespace stampfs {

Discovery::Discovery(TableStore& table, BlobStore& blobs, std::string container,
                     std::string table_name, double interval_s)
    : table_(table),
      blobs_(blobs),
      container_(std::move(container)),
      table_name_(std::move(table_name)),
      interval_s_(interval_s) {
  thread_ = std::thread([this] { Loop(); });
}

Discovery::~Discovery() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Discovery::Loop() {
  const auto interval = std::chrono::milliseconds(static_cast<int64_t>(interval_s_ * 1000));
  std::unique_lock<std::mutex> lock(mu_);
  while (!wake_.wait_for(lock, interval, [this] { return stopping_; })) {
    lock.unlock();
    Round();
    lock.lock();
  }
}

void Discovery::Round() {
  ImportOptions o;
  o.container = container_;
  o.table = table_name_;
  o.refresh = true;
  o.uid = getuid();
  o.gid = getgid();
  auto report = Importer(table_, blobs_, o).Run();
  if (!report.ok()) {
    LogWarning("discover: " + report.status().ToString());
    return;
  }
  if (report->changes() > 0) LogInfo("discover: " + report->ChangeCounts());
  for (const ImportProblem& p : report->problems) {
    LogDebug("discover: not imported: " + p.blob + ": " + p.reason);
  }
}

}  // namespace stampfs
