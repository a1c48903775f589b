#include "fs/admin/foreign_view.h"

#include <algorithm>
#include <chrono>

#include "fs/base/log.h"
#include "fs/namespace/inode_table.h"

namespace stampfs {

namespace {

constexpr size_t kMaxTrackedDirectories = 100000;
constexpr int64_t kRetryMs = 5000;  // after a check without an answer
constexpr size_t kMaxQueued = 10000;  // checks waiting for the thread

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

ForeignView::~ForeignView() { Stop(); }

void ForeignView::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool ForeignView::Check(const std::string& dir_path, Namespace::DirectoryCheck how) {
  using How = Namespace::DirectoryCheck;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (dirs_.size() > kMaxTrackedDirectories && queued_.empty()) {
      dirs_.clear();  // each is checked once more
    }
    Dir& d = dirs_[dir_path];
    const bool first = d.next_ms == 0;
    const bool wait = how == How::kWait || (how == How::kFirstListing && first);
    if (d.running) {
      if (!wait) return false;
      done_.wait(lock, [&] { return !dirs_[dir_path].running; });
      return dirs_[dir_path].changed;  // what it found, for this caller's cache too
    }
    if (now_ms_() < d.next_ms) return false;
    if (!wait && (stopping_ || queued_.size() >= kMaxQueued))
      return false;  // a later read asks again
    d.running = true;
    if (!wait) {
      queued_.push_back(dir_path);
      if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
      work_.notify_one();
      return false;
    }
  }
  return RunCheck(dir_path);
}

bool ForeignView::RunCheck(const std::string& dir_path) {
  const bool changed = Refresh(dir_path);
  {
    std::lock_guard<std::mutex> lock(mu_);
    dirs_[dir_path].running = false;
    dirs_[dir_path].changed = changed;
  }
  done_.notify_all();
  return changed;
}

void ForeignView::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_.wait(lock, [this] { return stopping_ || !queued_.empty(); });
    if (stopping_) return;
    const std::string dir = queued_.front();
    lock.unlock();
    RunCheck(dir);
    lock.lock();
    queued_.pop_front();  // after the check: Settle waits for it
    done_.notify_all();
  }
}

void ForeignView::Settle() {
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [this] { return queued_.empty(); });
}

bool ForeignView::Refresh(const std::string& dir_path) {
  auto report = refresher_.RefreshDirectory(dir_path, std::chrono::milliseconds(offline_after_ms_));
  if (report.ok()) TellChanged(*report, {dir_path});
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
  const uint64_t changed = report->changes();
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
    LogInfo("other tools' changes in " + dir_path + ": " + report->ChangeCounts());
  }
  return changed > 0;
}

Status ForeignView::ApplyEvent(const BlobEvent& event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sequencers_.find(event.blob);
    if (!event.sequencer.empty() && it != sequencers_.end() &&
        CompareSequencers(event.sequencer, it->second) < 0) {
      stats_.stale_events++;
      return Status::Ok();
    }
  }
  auto report = refresher_.RefreshBlob(event.blob);
  STAMPFS_RETURN_IF_ERROR(report);
  if (!report->errors.empty()) return Status(Code::kInternal, report->errors.front());
  const uint64_t changed = report->changes();
  if (changed > 0) {
    // The blob's directory, and those above it when directories were made.
    std::vector<std::string> dirs;
    auto dir = DirRefresher::DirectoryOfBlob(event.blob);
    for (std::string d = dir.value_or("/"); dir; d = ParentPath(d)) {
      dirs.push_back(d);
      if (d == "/" || report->dirs_created == 0) break;
    }
    TellChanged(*report, dirs);
    LogInfo("event " + event.id + " (" + event.api + " " + event.blob +
            "): " + report->ChangeCounts());
  }
  std::lock_guard<std::mutex> lock(mu_);
  stats_.events++;
  stats_.changes += changed;
  if (!event.sequencer.empty()) {
    if (sequencers_.size() > kMaxTrackedDirectories) sequencers_.clear();
    std::string& last = sequencers_[event.blob];
    if (last.empty() || CompareSequencers(last, event.sequencer) < 0) last = event.sequencer;
  }
  return Status::Ok();
}

void ForeignView::TellChanged(const ImportReport& report, const std::vector<std::string>& dirs) {
  if (report.changes() == 0) return;
  if (dir_changed_) {
    for (const std::string& d : dirs) dir_changed_(d);
  }
  if (inode_changed_) {
    for (uint64_t ino : report.changed_inos) {
      if (ino != 0) inode_changed_(ino);
    }
  }
}

ForeignViewStats ForeignView::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace stampfs
