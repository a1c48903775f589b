// Read-ahead across the small files of a directory (fs/data/dir_readahead.h).
#include "fs/data/dir_readahead.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "fs/data/block_layout.h"
#include "storage/cancel.h"
#include "storage/stats.h"

namespace stampfs {

namespace {
Counter g_ahead_files{"readahead.files"};      // small files fetched ahead of their reader
Counter g_ahead_dropped{"readahead.dropped"};  // queued and dropped (pattern stopped, opened)
}  // namespace

DirReadAhead::DirReadAhead(Namespace& ns, BlobStore& blobs, BlockCache& cache,
                           DirReadAheadOptions options)
    : ns_(ns),
      blobs_(blobs),
      cache_(cache),
      options_(std::move(options)),
      workers_(std::make_unique<WorkQueue>(std::max(1, options_.threads))) {}

DirReadAhead::~DirReadAhead() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      if (it->second.running) {
        ++it;
      } else {
        Drop(it++);
      }
    }
  }
  workers_.reset();  // the queued tasks find no job; the running ones finish
}

Status DirReadAhead::Claim(uint64_t ino) {
  std::unique_lock<std::mutex> lock(mu_);
  claimed_.insert(ino);
  for (;;) {
    auto it = jobs_.find(ino);
    if (it == jobs_.end()) return Status::Ok();
    if (!it->second.running) {
      Drop(it);
      return Status::Ok();
    }
    // The fetch writes the cache file the open is about to use: never both.
    if (CurrentlyCancelled()) {
      claimed_.erase(ino);
      return Cancelled("open: waiting for the read-ahead of the file");
    }
    cv_.wait_for(lock, std::chrono::milliseconds(250));
  }
}

void DirReadAhead::Unclaim(uint64_t ino) {
  std::lock_guard<std::mutex> lock(mu_);
  claimed_.erase(ino);
}

void DirReadAhead::Opened(uint64_t ino) {
  if (options_.files == 0) return;
  auto ahead = ns_.FilesAfter(ino, options_.files);  // SQLite only
  if (!ahead) return;
  std::vector<uint64_t> submit;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    Tracker& t = trackers_[ahead->dir];
    t.used = ++clock_;
    const bool in_order = std::find(t.expected.begin(), t.expected.end(), ino) != t.expected.end();
    t.expected.clear();
    for (size_t i = 0; i < ahead->files.size() && i < kExpected; ++i) {
      t.expected.push_back(ahead->files[i].attr.ino);
    }
    if (!in_order) {
      // Not (or no longer) going through the listing: what is queued for
      // this directory is not wanted.
      t.generation++;
      t.scheduled.clear();
      for (auto it = jobs_.begin(); it != jobs_.end();) {
        if (!it->second.running && it->second.dir == ahead->dir) {
          Drop(it++);
        } else {
          ++it;
        }
      }
    } else {
      std::set<uint64_t> ahead_now;  // what stays scheduled: the files still ahead
      for (const FileState& f : ahead->files) {
        const uint64_t fi = f.attr.ino;
        if (t.scheduled.count(fi)) {
          ahead_now.insert(fi);
          continue;
        }
        if (f.attr.size == 0 || f.attr.size > options_.max_file_size) continue;
        if (claimed_.count(fi) || jobs_.count(fi)) continue;
        if (bytes_ + f.attr.size > options_.max_bytes) break;
        jobs_[fi] = Job{f, ahead->dir, t.generation};
        bytes_ += f.attr.size;
        ahead_now.insert(fi);
        submit.push_back(fi);
      }
      t.scheduled = std::move(ahead_now);
    }
    TrimTrackers();
  }
  for (uint64_t fi : submit) workers_->Submit([this, fi] { Run(fi); });
}

void DirReadAhead::Run(uint64_t ino) {
  FileState file;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(ino);
    if (it == jobs_.end() || it->second.running) return;  // dropped, or another task's
    auto t = trackers_.find(it->second.dir);
    if (stopping_ || claimed_.count(ino) || t == trackers_.end() ||
        t->second.generation != it->second.generation) {
      Drop(it);
      return;
    }
    it->second.running = true;
    file = it->second.file;
  }
  const bool fetched = Fetch(file);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(ino);
    if (it != jobs_.end()) {
      bytes_ -= it->second.file.attr.size;
      jobs_.erase(it);
    }
    if (fetched) stats_.fetched++;
  }
  if (fetched) g_ahead_files.Add();
  cv_.notify_all();
}

// The file's one block, pinned to the listed version, into the cache file
// of exactly that version. Nobody else writes that file meanwhile: the
// inode is not claimed (no open file uses it), and a claim waits for us.
bool DirReadAhead::Fetch(const FileState& file) {
  const BlockLayout layout(ValidBlockSize(file.block_size) ? file.block_size
                                                           : options_.default_block_size);
  const uint64_t size = file.attr.size;
  if (size == 0 || size > layout.SizeOf(0)) return false;
  auto id = cache_.Acquire(file.blob, file.blob_etag, layout.base());
  if (!id.ok()) return false;
  bool fetched = false;
  if (cache_.State(*id, 0) == BlockState::kAbsent && cache_.MakeRoom(size) &&
      cache_.CheckDiskRoom(size).ok()) {
    const int fd = cache_.fd(*id);
    auto r = blobs_.Read(options_.container, file.blob, 0, size,
                         Condition::IfMatch(file.blob_etag),
                         [fd](uint64_t at, const char* data, size_t len) {
                           return pwrite(fd, data, len, static_cast<off_t>(at)) ==
                                  static_cast<ssize_t>(len);
                         });
    if (r.ok() && r->bytes == size) {
      fetched = cache_.Set(*id, 0, BlockState::kClean, 0, layout.SizeOf(0), size).ok();
    }
    // Absent blocks read as zeros: nothing of a failed fetch stays.
    if (!fetched) (void)fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, size);
  }
  cache_.Release(*id);
  return fetched;
}

// REQUIRES: mu_; the job is not running.
void DirReadAhead::Drop(std::map<uint64_t, Job>::iterator it) {
  bytes_ -= it->second.file.attr.size;
  jobs_.erase(it);
  stats_.dropped++;
  g_ahead_dropped.Add();
}

// REQUIRES: mu_. A directory no longer tracked drops its queued fetches
// when they come up (Run finds no tracker).
void DirReadAhead::TrimTrackers() {
  while (trackers_.size() > kMaxTrackers) {
    auto oldest = std::min_element(trackers_.begin(), trackers_.end(), [](const auto& a,
                                                                          const auto& b) {
      return a.second.used < b.second.used;
    });
    trackers_.erase(oldest);
  }
}

DirReadAhead::Stats DirReadAhead::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace stampfs
