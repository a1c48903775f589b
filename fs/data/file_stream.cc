// FileData: read-ahead. A sequential reader gets the blocks ahead of it in
// one ranged GET pinned with If-Match (BlobStore::ReadStream), written into
// the cache file as the bytes arrive; each block is marked cached the moment
// its last byte is written, so a reader waits only for the block it needs.
//
// Protocol (all under the file's mu):
// - at most one stream per file, at most fetch_threads in all (each holds a
//   fetch thread for its length);
// - the stream owns the block arriving (it is in `fetching`: readers and
//   writers of it wait); when the block is complete it is marked clean and
//   the stream claims the next one, unless that one is cached, dirty or
//   fetched by a reader that jumped ahead (its bytes are then skipped), or
//   the cache has no room left (the stream ends);
// - a reader of the block after the one arriving waits for the stream; one
//   further ahead fetches its block itself (EnsureLocal);
// - WaitIdle (last close, truncate, commit, a new version, shutdown) cancels
//   the stream and waits for it to end. A block not complete when the stream
//   ends is punched out and never marked cached; the next sequential read
//   starts a new stream from there.
#include <unistd.h>

#include <algorithm>

#include "fs/data/file_data.h"
#include "fs/base/log.h"

namespace stampfs {

// Sequential readers (a read starting where the last one ended) get a stream
// of up to stream_window bytes (and at most a quarter of the cache) ahead of
// them; the next one starts when less than half a window is left ahead. A
// GET costs the service about the same whatever its length (on Azurite a
// 16 MiB range reads at ~480 MiB/s, a whole 1 GiB blob at 650-980 MiB/s), and a
// window of 256 MiB makes that cost a few percent of a stream while the cache
// keeps room for other files. Called before the read's blocks are made local,
// so a cold read waits on the stream instead of a GET of its own.
// REQUIRES: fp->mu held.
void FileData::Prefetch(const FilePtr& fp, uint64_t off, uint64_t end) {
  OpenFile& f = *fp;
  const bool sequential = off == f.next_read;
  f.next_read = end;
  if (!sequential) {
    f.prefetched = 0;
    return;
  }
  if (f.stream) return;
  const uint64_t reader = f.layout.IndexAt(off);
  const uint64_t bytes = std::min(options_.stream_window, cache_.Capacity() / 4);
  const uint64_t window = std::max<uint64_t>(1, bytes / f.layout.SizeOf(reader));
  const uint64_t limit = f.layout.CountFor(std::min(f.remote_size, f.size));
  const uint64_t horizon = std::min(limit, reader + window);
  auto absent = [&](uint64_t k) {
    return !f.fetching.count(k) && cache_.State(f.cache_id, k) == BlockState::kAbsent;
  };
  uint64_t from = std::max(reader, f.prefetched);
  while (from < horizon && !absent(from)) ++from;
  f.prefetched = from;
  if (from >= horizon || from > reader + window / 2) return;  // enough is ahead
  uint64_t to = from + 1;
  while (to < horizon && absent(to)) ++to;
  // The reader's own block alone it reads as well itself; every fetch thread
  // streaming: blocks are read on demand.
  if ((from == reader && to == from + 1) || streams_.load() >= options_.fetch_threads) return;
  auto st = std::make_shared<Stream>();
  st->cache_id = f.cache_id;
  st->etag = f.base_etag;
  st->layout = f.layout;
  st->next = from;
  st->end = to;
  if (!Claim(f, *st) || !st->owned) return;  // no room in the cache
  const uint64_t start = f.layout.StartOf(from);
  FetchJob job{f.blob, f.base_etag, f.fd, start,
               std::min(f.layout.StartOf(to), f.remote_size) - start};
  f.stream = st;
  f.prefetched = to;
  streams_++;
  fetches_.Submit([this, fp, st, job] { RunStream(fp, st, job); });
}

// On a fetch thread; ends with st gone from the file and its block released.
void FileData::RunStream(const FilePtr& fp, const std::shared_ptr<Stream>& st,
                         const FetchJob& job) {
  OpenFile& f = *fp;
  const BlockLayout& layout = st->layout;
  const uint64_t stop = job.offset + job.length;
  uint64_t pos = job.offset;  // the next byte; ReadStream never restarts
  auto sink = [&](uint64_t, const char* data, size_t len) {
    while (len > 0) {
      if (st->cancel.cancelled()) return false;
      const uint64_t k = layout.IndexAt(pos);
      const uint64_t block_end = std::min(layout.EndOf(k), stop);
      const size_t n = static_cast<size_t>(std::min<uint64_t>(len, block_end - pos));
      if (st->owned && pwrite(job.fd, data, n, static_cast<off_t>(pos)) != static_cast<ssize_t>(n))
        return false;
      pos += n;
      data += n;
      len -= n;
      if (pos == block_end) {
        std::lock_guard<std::mutex> guard(f.mu);
        if (!Landed(f, *st, k, block_end)) return false;
      }
    }
    return true;
  };
  Status s;
  if (!st->cancel.cancelled()) {
    ScopedCancelToken scoped(&st->cancel);
    CountFetch();
    s = blobs_
            .ReadStream(options_.container, job.blob, job.offset, job.length,
                        Condition::IfMatch(job.etag), sink,
                        std::chrono::milliseconds(options_.stream_stall_ms))
            .status();
  }
  std::lock_guard<std::mutex> guard(f.mu);
  if (st->owned) {
    const uint64_t at = layout.StartOf(st->next);
    DropPartial(
        FetchJob{job.blob, job.etag, job.fd, at, std::min(layout.EndOf(st->next), stop) - at});
    f.fetching.erase(st->next);
    cache_.Unpin(st->cache_id, st->next);
    st->owned = false;
  }
  if (!s.ok() && !st->cancel.cancelled()) {
    LogDebug(f.path + ": read-ahead stopped at block " + std::to_string(st->next) + ": " +
             s.ToString());
  }
  if (f.stream == st) f.stream = nullptr;
  f.prefetched = std::min(f.prefetched, st->next);  // the next stream starts there
  streams_--;
  f.cv.notify_all();
}

// Makes st.next the stream's if it is still wanted. False: the stream ends.
// REQUIRES: f.mu held.
bool FileData::Claim(OpenFile& f, Stream& st) {
  const uint64_t k = st.next;
  if (st.cancel.cancelled() || f.cache_id != st.cache_id || f.base_etag != st.etag) return false;
  if (f.fetching.count(k) || cache_.State(st.cache_id, k) != BlockState::kAbsent) return true;
  if (!cache_.MakeRoom(st.layout.SizeOf(k))) return false;  // only uncommitted data is left
  f.fetching.insert(k);
  cache_.Pin(st.cache_id, k);
  st.owned = true;
  return true;
}

// Block k's bytes up to `end` arrived: it is cached (when the stream wrote
// it), and the stream moves to the next. False: the stream ends.
// REQUIRES: f.mu held.
bool FileData::Landed(OpenFile& f, Stream& st, uint64_t k, uint64_t end) {
  Status s;
  if (st.owned) {
    f.fetching.erase(k);
    if (f.cache_id == st.cache_id && f.base_etag == st.etag) {
      const uint64_t at = st.layout.StartOf(k);
      s = cache_.Set(st.cache_id, k, BlockState::kClean, at, st.layout.SizeOf(k), end - at);
    }
    cache_.Unpin(st.cache_id, k);
    st.owned = false;
    f.cv.notify_all();
  }
  st.next = k + 1;
  if (!s.ok()) {
    LogWarning(f.path + ": read-ahead: " + s.ToString());
    return false;
  }
  return st.next >= st.end || Claim(f, st);
}

// Block k comes with the stream soon: it is the one after the block
// arriving. Readers of blocks further ahead fetch them themselves.
// REQUIRES: f.mu held.
bool FileData::StreamDelivers(const OpenFile& f, uint64_t k) const {
  const Stream* st = f.stream.get();
  return st && !st->cancel.cancelled() && k == st->next + 1 && k < st->end;
}

}  // namespace stampfs
