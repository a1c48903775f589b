// FileData: reads, writes and size changes of an open file, under its lock.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "fs/data/file_data.h"
#include "fs/base/log.h"
#include "fs/data/pin_range.h"

namespace stampfs {

namespace {

Status ErrnoStatus(const std::string& what) { return LocalError(what, errno); }

Status PreadFully(int fd, char* buf, size_t n, uint64_t off) {
  size_t done = 0;
  while (done < n) {
    ssize_t got = pread(fd, buf + done, n - done, static_cast<off_t>(off + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return ErrnoStatus("read cache data");
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  std::memset(buf + done, 0, n - done);  // past the data file's end: a hole
  return Status::Ok();
}

Status PwriteFully(int fd, const char* buf, size_t n, uint64_t off) {
  size_t done = 0;
  while (done < n) {
    ssize_t put = pwrite(fd, buf + done, n - done, static_cast<off_t>(off + done));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return ErrnoStatus("write cache data");
    done += static_cast<size_t>(put);
  }
  return Status::Ok();
}

}  // namespace

Result<size_t> FileData::ReadLocked(const FilePtr& fp, Lock& lock, char* buf, size_t size,
                                    uint64_t off) {
  OpenFile& f = *fp;
  if (size == 0) return size_t{0};
  PinRange pins(cache_, f.cache_id, f.layout.IndexAt(off), f.layout.IndexAt(off + size - 1));
  bool reread = false, ahead = false;
  for (;;) {
    while (f.busy) f.cv.wait(lock);
    pins.Follow(f.cache_id);
    if (off >= f.size) return size_t{0};
    const uint64_t end = off + std::min<uint64_t>(size, f.size - off);
    const uint64_t first = f.layout.IndexAt(off), last = f.layout.IndexAt(end - 1);
    if (!ahead) Prefetch(fp, off, end);  // may start the stream this read then waits on
    ahead = true;
    bool relocked = false;
    Status s;
    for (uint64_t k = first; k <= last && s.ok() && !relocked; ++k) {
      s = EnsureLocal(f, lock, k, &relocked);
    }
    if (!s.ok()) {
      const bool stale = s.Is(Code::kPreconditionFailed) || s.Is(Code::kNotFound);
      if (!stale || reread || f.dirty) return s;
      reread = true;
      STAMPFS_RETURN_IF_ERROR(Reread(f, lock, s));
      continue;
    }
    if (relocked) continue;  // the file may have changed while unlocked
    STAMPFS_RETURN_IF_ERROR(PreadFully(f.fd, buf, end - off, off));
    for (uint64_t k = first; k <= last; ++k) cache_.Touch(f.cache_id, k);
    f.served = true;
    return static_cast<size_t>(end - off);
  }
}

// A pinned read failed (412/404) on a clean open file. Two cases go on:
// - the file was renamed: its new blob is the rename's server-side copy of
//   this version (IsCopyOf), so the cached blocks stay valid;
// - nothing was served yet: the entry lagged its blob (a commit whose entry
//   merge was lost); adopt the blob's version and read that.
// Otherwise the version changed under an open reader: an error, never a mix.
// REQUIRES: f.mu held via `lock`; !f.dirty.
Status FileData::Reread(OpenFile& f, Lock& lock, const Status& why) {
  const Status changed(Code::kPreconditionFailed, f.path + " changed while open: " + why.message());
  auto now = ns_.GetFile(f.ino, true);
  if (now.ok() && now->blob != f.blob && IsCopyOf(*now, f.base_etag) &&
      !now->blob_etag.empty()) {
    LogDebug(f.path + ": renamed while open; reading the moved blob");
    f.blob = now->blob;
    f.base_etag = now->blob_etag;
    f.path = now->path;
    return cache_.Rekey(f.cache_id, f.blob, f.base_etag);
  }
  if (f.served) return changed;
  auto st = Adopt(f.ino);
  STAMPFS_RETURN_IF_ERROR(st);
  if (st->blob == f.blob && st->blob_etag == f.base_etag) return changed;  // nothing newer
  LogInfo(f.path + ": the version named at open is gone; reading version " + st->blob_etag);
  f.busy = true;
  WaitIdle(f, lock);
  cache_.Release(f.cache_id);
  f.loaded = false;
  Status s = Bind(f, *st);
  f.busy = false;
  f.cv.notify_all();
  return s;
}

// Makes every block the write touches ready: no fetch or upload of it in
// flight, and a partially overwritten block of the base version fetched
// first (read-modify-write). Sets *relocked when it had to let go of the
// lock: the caller starts over.
Status FileData::PrepareWrite(OpenFile& f, Lock& lock, uint64_t off, uint64_t end, bool* relocked) {
  const uint64_t first = f.layout.IndexAt(off), last = f.layout.IndexAt(end - 1);
  for (uint64_t k = first; k <= last; ++k) {
    while (f.busy || f.uploading.count(k) || f.fetching.count(k)) {
      f.cv.wait(lock);
      *relocked = true;
    }
    if (*relocked) return Status::Ok();
    if (cache_.State(f.cache_id, k) != BlockState::kAbsent) continue;
    const uint64_t start = f.layout.StartOf(k);
    if (start >= f.remote_size) continue;  // a hole: zeros, nothing to keep
    const uint64_t valid_end = std::min(f.layout.EndOf(k), f.remote_size);
    if (off <= start && end >= valid_end) continue;  // every kept byte is overwritten
    STAMPFS_RETURN_IF_ERROR(EnsureLocal(f, lock, k, relocked));
    if (*relocked) return Status::Ok();
  }
  return Status::Ok();
}

Result<size_t> FileData::WriteLocked(const FilePtr& fp, Lock& lock, const char* buf, size_t size,
                                     uint64_t off, bool append) {
  OpenFile& f = *fp;
  if (size == 0) return size_t{0};
  while (f.busy) f.cv.wait(lock);
  STAMPFS_RETURN_IF_ERROR(Backpressure(fp, lock, size));
  // O_APPEND: at the end of the version this open file extends (validated
  // at open, and what its commit is conditional on), never at the kernel's
  // offset, which comes from an i_size that may predate another mount's
  // append (written there, it overwrote that mount's data).
  if (append) off = f.size;
  const uint64_t end = off + size;
  if (end < off || end > f.layout.MaxFileSize()) {
    return Status(Code::kTooLarge, f.path + ": beyond the largest file a block blob holds");
  }
  const uint64_t first = f.layout.IndexAt(off), last = f.layout.IndexAt(end - 1);
  PinRange pins(cache_, f.cache_id, first, last);
  for (;;) {
    while (f.busy) f.cv.wait(lock);
    pins.Follow(f.cache_id);
    bool relocked = false;
    STAMPFS_RETURN_IF_ERROR(PrepareWrite(f, lock, off, end, &relocked));
    if (!relocked) break;
  }
  // Another write of this mount moved the end while the lock was let go.
  if (append && off != f.size) return WriteLocked(fp, lock, buf, size, f.size, true);
  STAMPFS_RETURN_IF_ERROR(cache_.CheckDiskRoom(size));
  STAMPFS_RETURN_IF_ERROR(PwriteFully(f.fd, buf, size, off));
  const uint64_t old_size = f.size;
  const uint64_t new_size = std::max(old_size, end);
  for (uint64_t k = first; k <= last; ++k) {
    STAMPFS_RETURN_IF_ERROR(cache_.Set(f.cache_id, k, BlockState::kDirty, f.layout.StartOf(k),
                                       f.layout.SizeOf(k), f.layout.LengthIn(k, new_size)));
  }
  f.size = new_size;
  f.written += size;
  f.edits++;
  f.mtime_ns = Now();
  f.dirty = true;
  f.served = true;
  if (!f.journaled || f.journaled_size != f.size) STAMPFS_RETURN_IF_ERROR(Journal(f));
  ScheduleUploads(fp, lock, off, end, old_size);
  return size;
}

// REQUIRES: f.mu held via `lock`.
Status FileData::TruncateLocked(OpenFile& f, Lock& lock, uint64_t size) {
  while (f.busy) f.cv.wait(lock);
  if (size == f.size) return Status::Ok();
  if (size > f.layout.MaxFileSize()) {
    return Status(Code::kTooLarge, f.path + ": beyond the largest file a block blob holds");
  }
  f.busy = true;
  WaitIdle(f, lock);
  // The block holding the new end (shrink) or the old end (grow) keeps some
  // bytes and changes length: it must be local and is dirty.
  const uint64_t edge = std::min(size, f.size);
  const uint64_t k = f.layout.IndexAt(edge);
  const bool straddles = f.layout.StartOf(k) != edge;
  Status s;
  if (straddles) {
    PinRange pin(cache_, f.cache_id, k, k);
    bool relocked = false;
    s = EnsureLocal(f, lock, k, &relocked);
  }
  if (s.ok() && ftruncate(f.fd, static_cast<off_t>(size)) != 0) s = ErrnoStatus("truncate");
  if (s.ok() && size < f.size) {
    s = cache_.DropFrom(f.cache_id, f.layout.CountFor(size));
    f.remote_size = std::min(f.remote_size, size);
  }
  if (s.ok() && straddles) {
    s = cache_.Set(f.cache_id, k, BlockState::kDirty, f.layout.StartOf(k), f.layout.SizeOf(k),
                   f.layout.LengthIn(k, size));
  }
  if (s.ok()) {
    f.written += size > f.size ? size - f.size : f.size - size;
    f.edits++;
    f.size = size;
    f.mtime_ns = Now();
    f.dirty = true;
    f.served = true;
    f.next_read = f.prefetched = 0;
    s = Journal(f);
  }
  f.busy = false;
  f.cv.notify_all();
  return s;
}

}  // namespace stampfs
