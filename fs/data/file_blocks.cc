// FileData: moving blocks between the cache and the blob store. Fetches are
// single-flight per block; uploads stream from the cache file, bounded per
// file; writers wait for room in the cache (backpressure).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "fs/data/file_data.h"
#include "fs/base/log.h"
#include "storage/stats.h"

namespace stampfs {

namespace {
// Blocks a read found cached, and blocks fetched from the blob store (reads,
// read-modify-write and prefetch).
Counter g_cache_hits{"cache.hits"};
Counter g_cache_misses{"cache.misses"};
}  // namespace

// File data sent to the blob store (Put Blob and Put Block bodies).
Counter g_data_up{"bytes.data_up"};

// Makes block k's bytes local when they belong to the base version and are
// not cached. One fetch per block at a time; others wait for it, and for the
// read-ahead stream when it brings the block next. A wait ends when this
// thread's call is cancelled (fs/fuse/interrupts.h).
// REQUIRES: `lock` holds f.mu; block k is pinned. Sets *relocked when the
// lock was let go (the caller re-checks what it knew).
Status FileData::EnsureLocal(OpenFile& f, Lock& lock, uint64_t k, bool* relocked) {
  while (f.fetching.count(k) || StreamDelivers(f, k)) {
    if (CurrentlyCancelled()) return Cancelled("read of " + f.path + ": waiting for a fetch");
    f.cv.wait_for(lock, std::chrono::milliseconds(250));
    *relocked = true;
  }
  if (cache_.State(f.cache_id, k) != BlockState::kAbsent) {
    g_cache_hits.Add();
    return Status::Ok();
  }
  const uint64_t start = f.layout.StartOf(k);
  if (start >= f.remote_size) return Status::Ok();  // never committed: a hole of zeros
  const uint64_t len = std::min(f.layout.SizeOf(k), f.remote_size - start);
  FetchJob job{f.blob, f.base_etag, f.fd, start, len};
  const int64_t id = f.cache_id;
  f.fetching.insert(k);
  cache_.MakeRoom(len);  // reads may exceed the cap while only uncommitted data is left
  *relocked = true;
  lock.unlock();
  Status s = Fetch(job);
  lock.lock();
  f.fetching.erase(k);
  if (s.ok()) {
    s = cache_.Set(id, k, BlockState::kClean, start, f.layout.SizeOf(k), len);
  } else {
    DropPartial(job);
  }
  f.cv.notify_all();
  return s;
}

// A ranged GET pinned to the version (If-Match), streamed into the cache file.
Status FileData::Fetch(const FetchJob& job) {
  CountFetch();
  const int fd = job.fd;
  const uint64_t base = job.offset;
  auto r = blobs_.Read(
      options_.container, job.blob, job.offset, job.length, Condition::IfMatch(job.etag),
      [fd, base](uint64_t at, const char* data, size_t len) {
        return pwrite(fd, data, len, static_cast<off_t>(base + at)) == static_cast<ssize_t>(len);
      });
  if (!r.ok()) return r.status().WithContext("read " + job.blob);
  if (r->bytes != job.length) {
    return Status(Code::kCorruption, "read " + job.blob + ": got " + std::to_string(r->bytes) +
                                         " bytes of " + std::to_string(job.length) +
                                         " (blob size " + std::to_string(r->properties.size) + ")");
  }
  return Status::Ok();
}

void FileData::CountFetch() {
  g_cache_misses.Add();
  blob_requests_++;
}

// A failed fetch may have written part of the block: absent blocks must read
// as zeros.
void FileData::DropPartial(const FetchJob& job) {
  if (fallocate(job.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(job.offset),
                static_cast<off_t>(job.length)) != 0) {
    LogWarning("cannot punch a hole in the block cache: " + std::string(std::strerror(errno)));
  }
}

Status FileData::PutBlock(const std::string& blob, const std::string& id, int fd, uint64_t offset,
                          uint64_t length) {
  HttpBody body;
  body.size = length;
  body.reader = [fd, offset](uint64_t at, char* out, size_t len) -> size_t {
    ssize_t n = pread(fd, out, len, static_cast<off_t>(offset + at));
    return n < 0 ? 0 : static_cast<size_t>(n);
  };
  blob_requests_++;
  g_data_up.Add(length);
  return blobs_.PutBlock(options_.container, blob, id, body).WithContext("stage block of " + blob);
}

// No fetch, upload or read-ahead stream in flight (a stream is stopped).
// REQUIRES: `lock` holds f.mu.
void FileData::WaitIdle(OpenFile& f, Lock& lock) {
  if (f.stream) f.stream->cancel.Cancel();
  while (!f.fetching.empty() || !f.uploading.empty() || f.stream) f.cv.wait(lock);
}

// Stages dirty block k in the background. A failure is kept in
// upload_error; the block stays dirty and the commit uploads it again.
// REQUIRES: `lock` holds fp->mu.
void FileData::StartUpload(const FilePtr& fp, Lock& lock, uint64_t k) {
  OpenFile& f = *fp;
  while (f.uploading.size() >= options_.max_uploads_per_file) f.cv.wait(lock);
  if (f.busy || f.uploading.count(k) || cache_.State(f.cache_id, k) != BlockState::kDirty) return;
  const uint64_t start = f.layout.StartOf(k);
  const uint64_t len = f.layout.LengthIn(k, f.size);
  if (len == 0) return;
  const std::string blob = f.blob, id = WriterBlockId(f.tag, k);
  const int64_t cache_id = f.cache_id;
  const int fd = f.fd;
  f.uploading.insert(k);
  uploads_.Submit([this, fp, k, start, len, blob, id, cache_id, fd] {
    Status s = PutBlock(blob, id, fd, start, len);
    std::lock_guard<std::mutex> guard(fp->mu);
    fp->uploading.erase(k);
    // Writers to block k waited for this upload, so it still holds what was sent.
    if (s.ok() && fp->cache_id == cache_id && fp->blob == blob &&
        cache_.State(cache_id, k) == BlockState::kDirty) {
      s = cache_.Set(cache_id, k, BlockState::kStaged, start, fp->layout.SizeOf(k), len);
    }
    if (!s.ok() && fp->upload_error.ok()) fp->upload_error = s;
    fp->cv.notify_all();
  });
}

// After a write ending at `end`: blocks it completed are staged while the
// writer goes on, once the file is large enough to be a block blob.
void FileData::ScheduleUploads(const FilePtr& fp, Lock& lock, uint64_t off, uint64_t end,
                               uint64_t old_size) {
  OpenFile& f = *fp;
  if (f.size <= options_.single_put_limit) return;
  // The file just became a block blob: its earlier blocks are due too.
  uint64_t k = old_size <= options_.single_put_limit ? 0 : f.layout.IndexAt(off);
  for (; f.layout.EndOf(k) <= end; ++k) StartUpload(fp, lock, k);
}

// Uploads `blocks` to `blob` with ids (tag, k), at most max_uploads_per_file
// at a time, and waits for all. Blocks not cached are read from the base
// version first (or are holes: zeros). When `same_blob`, staged blocks are
// recorded; otherwise (a conflict copy) a base block that is gone is written
// as zeros and counted in *lost.
// REQUIRES: `lock` holds fp->mu; fp->busy; no fetch or upload in flight.
Status FileData::RunUploads(const FilePtr& fp, Lock& lock, const std::string& blob, uint64_t tag,
                            const std::vector<uint64_t>& blocks, bool same_blob, uint64_t* lost) {
  OpenFile& f = *fp;
  struct Outcome {
    Status error;
    uint64_t lost = 0;
  };
  auto out = std::make_shared<Outcome>();  // GUARDED_BY(fp->mu)
  const int64_t cache_id = f.cache_id;
  for (uint64_t k : blocks) {
    while (f.uploading.size() >= options_.max_uploads_per_file) f.cv.wait(lock);
    if (!out->error.ok()) break;
    const uint64_t start = f.layout.StartOf(k), len = f.layout.LengthIn(k, f.size);
    const BlockState state = cache_.State(cache_id, k);
    const bool fetch = state == BlockState::kAbsent && start < f.remote_size;
    FetchJob job{f.blob, f.base_etag, f.fd, start,
                 fetch ? std::min(len, f.remote_size - start) : 0};
    if (fetch) cache_.MakeRoom(job.length);
    f.uploading.insert(k);
    cache_.Pin(cache_id, k);
    uploads_.Submit([this, fp, out, k, job, fetch, blob, tag, len, same_blob, cache_id] {
      Status s;
      bool fetched = false;
      if (fetch) {
        s = Fetch(job);
        fetched = s.ok();
        if (!s.ok()) DropPartial(job);
        if (!s.ok() && !same_blob && (s.Is(Code::kPreconditionFailed) || s.Is(Code::kNotFound))) {
          std::lock_guard<std::mutex> guard(fp->mu);
          out->lost += job.length;
          s = Status::Ok();  // the base is gone: zeros (reported by the caller)
        }
      }
      if (s.ok()) s = PutBlock(blob, WriterBlockId(tag, k), job.fd, job.offset, len);
      std::lock_guard<std::mutex> guard(fp->mu);
      fp->uploading.erase(k);
      const uint64_t nominal = fp->layout.SizeOf(k);
      if (fetched) {
        cache_.Set(cache_id, k, BlockState::kClean, job.offset, nominal, job.length)
            .PermitUnchecked();
      }
      if (s.ok() && same_blob && cache_.State(cache_id, k) == BlockState::kDirty) {
        s = cache_.Set(cache_id, k, BlockState::kStaged, job.offset, nominal, len);
      }
      if (!s.ok() && out->error.ok()) out->error = s;
      cache_.Unpin(cache_id, k);
      fp->cv.notify_all();
    });
  }
  while (!f.uploading.empty()) f.cv.wait(lock);
  if (lost) *lost += out->lost;
  return out->error;
}

// Waits until `bytes` more fit in the cache. Clean blocks are evicted first;
// when only uncommitted data is left, a writer holding a large share of it
// commits what it has (a checkpoint) so its blocks become clean; others wait
// for uploads and commits elsewhere. After backpressure_patience_ms without
// progress the write goes over the cap (logged) rather than hang or fail.
// REQUIRES: `lock` holds fp->mu; !fp->busy.
Status FileData::Backpressure(const FilePtr& fp, Lock& lock, uint64_t bytes) {
  OpenFile& f = *fp;
  auto last_progress = std::chrono::steady_clock::now();
  uint64_t last_uncommitted = cache_.Stats().uncommitted;
  for (;;) {
    if (cache_.MakeRoom(bytes)) return Status::Ok();
    const BlockCacheStats stats = cache_.Stats();
    if (f.dirty && cache_.UncommittedBytes(f.cache_id) >= stats.capacity / 4) {
      LogDebug(f.path + ": cache full of uncommitted data: committing what is written so far");
      STAMPFS_RETURN_IF_ERROR(CommitLocked(fp, lock));
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    if (stats.uncommitted < last_uncommitted) last_progress = now;
    last_uncommitted = stats.uncommitted;
    if (now - last_progress > std::chrono::milliseconds(options_.backpressure_patience_ms)) {
      LogWarning("block cache full of uncommitted data for " +
                 std::to_string(options_.backpressure_patience_ms) + " ms: " + f.path +
                 " writes over the cache_size cap");
      return Status::Ok();
    }
    f.cv.wait_for(lock, std::chrono::milliseconds(20));
  }
}

}  // namespace stampfs
