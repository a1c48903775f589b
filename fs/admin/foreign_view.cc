#include "fs/admin/foreign_view.h"

#include <algorithm>
#include <chrono>

#include "fs/base/log.h"

namespace stampfs {

namespace {

constexpr size_t kMaxTrackedDirectories = 100000;
constexpr int64_t kRetryMs = 5000;  // after a check without an answer

int64_t SystemNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ForeignView::ForeignView(TableStore& table, BlobStore& blobs, ImportOptions options, int64_t ttl_ms,
                         int64_t offline_after_ms, std::function<int64_t()> now_ms)
    : refresher_(table, blobs, std::move(options)),
      ttl_ms_(ttl_ms),
      offline_after_ms_(offline_after_ms),
      now_ms_(now_ms ? std::move(now_ms) : SystemNowMs) {}

bool ForeignView::Check(const std::string& dir_path) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (dirs_.size() > kMaxTrackedDirectories) dirs_.clear();  // each is checked once more
    Dir& d = dirs_[dir_path];
    if (d.running) {
      done_.wait(lock, [&] { return !dirs_[dir_path].running; });
      return dirs_[dir_path].changed;  // what it found, for this caller's cache too
    }
    if (now_ms_() < d.next_ms) return false;
    d.running = true;
  }
  const bool changed = Refresh(dir_path);
  {
    std::lock_guard<std::mutex> lock(mu_);
    dirs_[dir_path].running = false;
    dirs_[dir_path].changed = changed;
  }
  done_.notify_all();
  return changed;
}

bool ForeignView::Refresh(const std::string& dir_path) {
  auto report = refresher_.RefreshDirectory(dir_path, std::chrono::milliseconds(offline_after_ms_));
  const int64_t now = now_ms_();
  std::lock_guard<std::mutex> lock(mu_);
  Dir& d = dirs_[dir_path];
  stats_.checks++;
  if (!report.ok()) {
    d.next_ms = now + (report.status().Is(Code::kNotFound) ? ttl_ms_ : std::min(ttl_ms_, kRetryMs));
    if (!report.status().Is(Code::kNotFound)) {
      stats_.failures++;
      LogDebug("other tools' changes in " + dir_path +
               " not checked: " + report.status().ToString());
    }
    return false;
  }
  d.next_ms = now + ttl_ms_;
  const uint64_t changed =
      report->files_created + report->dirs_created + report->updated + report->removed;
  stats_.changes += changed;
  if (!report->errors.empty()) {
    stats_.failures++;
    d.next_ms = now + std::min(ttl_ms_, kRetryMs);
    for (const std::string& e : report->errors) LogDebug("other tools' changes: " + e);
  }
  for (const ImportProblem& p : report->problems) {
    LogDebug("other tools' blob not shown: " + p.blob + ": " + p.reason);
  }
  if (changed > 0) {
    LogInfo("other tools' changes in " + dir_path + ": " + std::to_string(report->files_created) +
            " files and " + std::to_string(report->dirs_created) + " directories new, " +
            std::to_string(report->updated) + " updated, " + std::to_string(report->removed) +
            " removed");
  }
  return changed > 0;
}

void ForeignView::Expire(const std::string& dir_path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = dirs_.find(dir_path);
  if (it != dirs_.end()) it->second.next_ms = 0;
}

ForeignViewStats ForeignView::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace stampfs
