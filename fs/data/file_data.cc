// FileData: opening and closing files, attributes of open files, the journal.
#include "fs/data/file_data.h"

#include <unistd.h>

#include <algorithm>

#include "fs/base/log.h"

namespace stampfs {

Result<ConflictPolicy> ParseConflictPolicy(const std::string& text) {
  if (text == "copy") return ConflictPolicy::kCopy;
  if (text == "fail") return ConflictPolicy::kFail;
  if (text == "overwrite") return ConflictPolicy::kOverwrite;
  return Status(Code::kInvalidArgument, "conflict=" + text + ": expected copy, fail or overwrite");
}

namespace {

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  std::string host = buf;
  for (char& c : host) {
    if (c == '/' || c == '\0') c = '_';
  }
  return host;
}

}  // namespace

FileData::FileData(Namespace& ns, BlobStore& blobs, BlockCache& cache, FileDataOptions options)
    : ns_(ns),
      blobs_(blobs),
      cache_(cache),
      options_(std::move(options)),
      fetches_(options_.fetch_threads),
      uploads_(options_.upload_threads) {
  if (options_.host.empty()) options_.host = HostName();
  if (!options_.now_ns) options_.now_ns = NowNs;
  if (!ValidBlockSize(options_.block_size)) options_.block_size = kDefaultBlockSize;
  if (options_.max_uploads_per_file == 0) options_.max_uploads_per_file = 1;
  if (options_.commit_threads > 0) {
    options_.commit_threads =
        std::min<int>(options_.commit_threads, static_cast<int>(kMaxUploadSlots));
    upload_slots_ =
        std::make_unique<std::counting_semaphore<kMaxUploadSlots>>(options_.commit_threads);
    commits_ = std::make_unique<WorkQueue>(options_.commit_threads * kCommitsPerUploadSlot);
    if (options_.async_commit) scheduler_ = std::thread([this] { RunScheduler(); });
  }
  ns_.OnBlobMoved([this](const BlobMove& move) { BlobMoved(move); });
  DirReadAheadOptions ahead;
  ahead.container = options_.container;
  ahead.files = options_.dir_readahead;
  ahead.max_file_size = options_.dir_readahead_size;
  ahead.max_bytes = std::min<uint64_t>(64ull << 20, cache_.Capacity() / 8);
  ahead.default_block_size = options_.block_size;
  ahead.threads = options_.dir_readahead_threads;
  ahead_ = std::make_unique<DirReadAhead>(ns_, blobs_, cache_, std::move(ahead));
}

FileData::~FileData() {
  ns_.OnBlobMoved(nullptr);
  ahead_.reset();  // no fetch ahead writes the cache from here on
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  if (scheduler_.joinable()) scheduler_.join();
  commits_.reset();  // queued commits submitted already return at once (stopping_)
  // Files still open at unmount keep their journal: the next mount commits them.
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [ino, f] : files_) {
    Lock file_lock(f->mu);
    WaitIdle(*f, file_lock);
    if (f->loaded) cache_.Release(f->cache_id);
    f->loaded = false;
  }
}

FileData::FilePtr FileData::Find(uint64_t ino) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(ino);
  return it == files_.end() ? nullptr : it->second;
}

FileData::FilePtr FileData::Enter(uint64_t ino) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = files_[ino];
  if (!slot) slot = std::make_shared<OpenFile>(ino);
  slot->opening++;  // keeps a concurrent last Release from dropping the map entry
  return slot;
}

void FileData::Leave(const FilePtr& f) {
  std::lock_guard<std::mutex> lock(mu_);
  f->opening--;
}

// The kernel sends RELEASE asynchronously: a new open of the same inode may
// already be under way and must keep the entry it found in the map.
void FileData::EraseIfUnused(uint64_t ino, const FilePtr& f) {
  std::lock_guard<std::mutex> map_lock(mu_);
  std::lock_guard<std::mutex> lock(f->mu);
  auto it = files_.find(ino);
  if (it != files_.end() && it->second == f && f->refs == 0 && f->opening == 0 && !f->loaded) {
    files_.erase(it);
  }
}

// REQUIRES: f.mu held, !f.loaded.
Status FileData::Bind(OpenFile& f, const FileState& st) {
  BlockLayout layout(ValidBlockSize(st.block_size) ? st.block_size : options_.block_size);
  // Until Unload: no read-ahead writes the cache file this one uses.
  if (ahead_) STAMPFS_RETURN_IF_ERROR(ahead_->Claim(f.ino));
  auto id = cache_.Acquire(st.blob, st.blob_etag, layout.base());
  if (!id.ok() && ahead_) ahead_->Unclaim(f.ino);
  STAMPFS_RETURN_IF_ERROR(id);
  f.cache_id = *id;
  f.fd = cache_.fd(*id);
  f.layout = layout;
  f.blob = st.blob;
  f.base_etag = st.blob_etag;
  f.path = st.path;
  f.attr = st.attr;
  f.size = st.attr.size;
  f.remote_size = st.blob_etag.empty() ? 0 : st.attr.size;
  f.mtime_ns = st.attr.mtime_ns;
  f.tag = NewWriterTag();
  f.commit_ids.clear();
  f.dirty = f.journaled = f.entity_stale = f.served = false;
  f.written = f.rewrite_waste = 0;
  f.merged_ctime = 0;
  f.upload_error = Status::Ok();
  f.next_read = f.prefetched = 0;
  f.loaded = true;
  return Status::Ok();
}

// REQUIRES: f.mu held, idle (no fetch or upload in flight).
void FileData::Unload(OpenFile& f) {
  if (!f.loaded) return;
  if (f.NameRemoved()) cache_.Discard(f.cache_id).PermitUnchecked();
  f.unlinked = false;
  cache_.Release(f.cache_id);
  f.fd = -1;
  f.loaded = false;
  if (ahead_) ahead_->Unclaim(f.ino);
}

Status FileData::Load(OpenFile& f, const OpenFlags& flags) {
  // Other tools' changes in its directory (once per foreign_ttl): a version
  // adopted there is the one opened, and the kernel's size of it is dropped.
  if (!flags.created && ns_.CheckDirectoryOf(f.ino)) KernelStale(f.ino);
  auto st = ns_.GetFile(f.ino, false);
  if (st.status().Is(Code::kNotFound)) {
    // The kernel resolved the name to this inode before its name was
    // removed or replaced (an open racing a rename over it): ESTALE makes it
    // walk the path again and open what the name holds now.
    return Status(Code::kStale, st.status().message());
  }
  STAMPFS_RETURN_IF_ERROR(st);
  if (!st->attr.IsRegular()) return Status(Code::kIsADirectory, st->path);
  // A writer must start from the blob's current version: an entry that lags
  // (a commit whose entry merge was lost) would make its commit a conflict.
  if (flags.writable && !flags.created) {
    st = Validate(f.ino, *st);
    STAMPFS_RETURN_IF_ERROR(st);
  }
  return Bind(f, *st);
}

Result<OpenResult> FileData::Open(uint64_t ino, OpenFlags flags) {
  FilePtr f = Enter(ino);
  Lock lock(f->mu);
  OpenResult result;
  Status s;
  const bool first = !f->loaded;
  const bool kept = !first && f->refs == 0;  // closed, its changes waiting to commit
  if (first) {
    s = Load(*f, flags);
    if (s.ok()) ns_.Pin(ino);  // until the file is unloaded
  } else {
    result.keep_cache = true;  // every open here shares this copy
  }
  if (s.ok()) f->refs++;
  // The kernel resolved the name before a rename over it began, and this
  // open came after BeforeRemoval: its data is made local before the
  // rename's copy overwrites the blob (f->mu is held from Load to here, and
  // the rename's Unlinked takes it before RenameDone). Once the copy is
  // made there is nothing left to read: ESTALE, and the kernel walks the
  // path again to what the name holds now. The kernel gets no handle (no
  // RELEASE follows): a kept file goes back to waiting (its commit is the
  // rename's to decide), else this is its last close.
  if (s.ok() && Replacing(ino) && !KeepLocal(*f, lock, false, false).ok()) {
    const std::string path = f->path;
    const bool back = kept && f->refs == 1;
    if (back) f->refs--;
    lock.unlock();
    Leave(f);
    if (!back) Release(ino).PermitUnchecked();
    return Status(Code::kStale, path + " was replaced while being opened");
  }
  lock.unlock();
  Leave(f);
  if (!s.ok()) {
    EraseIfUnused(ino, f);
    return s;
  }
  if (first && !flags.writable && ahead_) ahead_->Opened(ino);
  lock.lock();
  if (first) {
    auto seen = recent_.Get(ino);
    result.keep_cache = !f->base_etag.empty() && seen && seen->etag == f->base_etag;
  }
  result.handle = f->conflicts;
  if (flags.created && !f->dirty) {
    f->dirty = true;  // even an empty new file gets its blob
    s = Journal(*f);
  }
  if (s.ok() && flags.truncate && (f->size != 0 || f->base_etag.empty())) {
    s = TruncateLocked(*f, lock, 0);
    result.keep_cache = false;
  }
  if (!s.ok()) {
    lock.unlock();
    Release(ino).PermitUnchecked();
    return s;
  }
  return result;
}

Result<size_t> FileData::Read(uint64_t ino, char* buf, size_t size, uint64_t offset) {
  FilePtr f = Find(ino);
  if (!f) return Status(Code::kInvalidArgument, "file is not open");
  Lock lock(f->mu);
  if (!f->loaded) return Status(Code::kInvalidArgument, "file is not open");
  return ReadLocked(f, lock, buf, size, offset);
}

Result<size_t> FileData::Write(uint64_t ino, const char* buf, size_t size, uint64_t offset,
                               bool append, uint64_t handle) {
  FilePtr f = Find(ino);
  if (!f) return Status(Code::kInvalidArgument, "file is not open");
  Lock lock(f->mu);
  if (!f->loaded) return Status(Code::kInvalidArgument, "file is not open");
  if (f->name_lost || (handle != kAnyHandle && handle != f->conflicts)) {
    return Status(Code::kPreconditionFailed,
                  f->path + ": another writer's version replaced this open file's data, which " +
                      "was saved as a conflict copy: reopen to write");
  }
  return WriteLocked(f, lock, buf, size, offset, append);
}

Status FileData::Flush(uint64_t ino) {
  FilePtr f = Find(ino);
  if (!f) return Status::Ok();
  Lock lock(f->mu);
  if (!f->loaded) return Status::Ok();
  if (!options_.async_commit) return CommitLocked(f, lock);
  // A flush is no promise of durability (close(2) after dup2 flushes a file
  // still being written): the journal row follows the data, the last
  // release makes it durable and queues the commit.
  if (!f->dirty || f->busy || f->NameRemoved()) return Status::Ok();
  // Durable before close(2) returns (docs/semantics.md): the release that
  // queues the file comes after, and a power cut between them lost the data.
  if (f->synced_edits != f->edits) STAMPFS_RETURN_IF_ERROR(Journal(*f, true));
  lock.unlock();
  // close(2) waits for this answer (not for the release that queues the
  // file): the queue's bound holds the writer back here.
  return WaitForRoom();
}

Status FileData::Sync(uint64_t ino) {
  FilePtr f = Find(ino);
  if (!f) return Status::Ok();
  Lock lock(f->mu);
  if (!f->loaded) return Status::Ok();
  Status s = CommitLocked(f, lock);
  if (s.ok() && !f->dirty) {
    Dequeue(ino);  // nothing left for the pipeline
    // Closed and queued (a rename's BeforeRename): unloaded here, as the
    // pipeline's commit would have done.
    if (f->refs == 0) Closed(f, lock);
  }
  return s;
}

Status FileData::Release(uint64_t ino) {
  FilePtr f = Find(ino);
  if (!f) return Status::Ok();
  Lock lock(f->mu);
  if (!f->loaded || f->refs == 0) return Status::Ok();
  // close(2) flushed already; the last release commits whatever is left.
  if (f->refs > 1) {
    f->refs--;
    return Status::Ok();
  }
  if (options_.async_commit && f->dirty && !f->NameRemoved()) {
    // Durable here (a kill -9 or a power loss keeps it), committed later;
    // a flush made the same data durable already (close(2)).
    Status journaled = Journal(*f, f->synced_edits != f->edits);
    if (journaled.ok()) {
      f->refs--;
      Enqueue(ino, options_.commit_delay_ms);
      return Status::Ok();
    }
    LogWarning(f->path + ": journaling at close failed (" + journaled.ToString() +
               "); committing now");
  }
  Status s = CommitLocked(f, lock);  // refs stays 1: an open meanwhile shares the file
  if (--f->refs > 0) return s;
  WaitIdle(*f, lock);
  // An open while WaitIdle let the lock go (sqlite3 closes a database and
  // opens it again at once) shares the file: it stays loaded.
  if (f->refs > 0) return s;
  if (f->dirty && !s.Is(Code::kPreconditionFailed)) {
    // The service failed: the file stays loaded with its changes (opens here
    // see them); the next close or fsync commits them (async: the pipeline
    // retries), or the next mount replays them from the journal.
    LogWarning(f->path + ": closed with changes not committed (" + s.ToString() +
               "); they are kept and committed by the next close or fsync");
    if (options_.async_commit) Enqueue(ino, options_.commit_delay_ms);
    return s;
  }
  if (f->dirty) {
    LogWarning(f->path + ": closed with changes that conflict; they stay in the cache journal");
  }
  Closed(f, lock);
  return s;
}

// The last open is gone and nothing is left to commit (or it conflicts):
// the file leaves memory, its orphaned blob is deleted. Unlocks `lock`.
// REQUIRES: `lock` holds fp->mu; fp->refs == 0; idle.
void FileData::Closed(const FilePtr& fp, Lock& lock) {
  OpenFile& f = *fp;
  if (!f.loaded) return;
  if (!f.dirty) {
    SyncAttrsAtClose(f);
    recent_.Put(f.ino, {f.base_etag, f.size, f.mtime_ns, f.merged_ctime});
  }
  std::string orphan = f.delete_on_close;
  const Condition orphan_condition = f.delete_condition;
  const bool drop_record = f.drop_record;
  Unload(f);
  f.delete_on_close.clear();
  f.drop_record = false;
  lock.unlock();
  EraseIfUnused(f.ino, fp);
  ns_.Unpin(f.ino);
  if (!orphan.empty()) DeleteOrphan(orphan, orphan_condition);
  if (drop_record) ns_.DropInodeRecord(f.ino);
}

Status FileData::Truncate(uint64_t ino, uint64_t size) {
  auto opened = Open(ino, OpenFlags{false, false, true});
  STAMPFS_RETURN_IF_ERROR(opened);
  Status s;
  {
    FilePtr f = Find(ino);
    Lock lock(f->mu);
    s = TruncateLocked(*f, lock, size);
  }
  Status r = Release(ino);
  return s.ok() ? r : s;
}

Status FileData::Fallocate(uint64_t ino, int mode, uint64_t offset, uint64_t length) {
  if (mode != 0) return Status(Code::kNotSupported, "fallocate mode " + std::to_string(mode));
  FilePtr f = Find(ino);
  if (!f) return Status(Code::kInvalidArgument, "file is not open");
  Lock lock(f->mu);
  if (!f->loaded) return Status(Code::kInvalidArgument, "file is not open");
  // Blob storage has no preallocation: only the size changes.
  if (offset + length <= f->size) return Status::Ok();
  return TruncateLocked(*f, lock, offset + length);
}

bool FileData::OverrideAttr(uint64_t ino, Attr* attr) {
  // While the file is open here its size is this mount's, committed or not;
  // after it closed, an entry older than this mount's last merge (read
  // before the merge finished) is not shown either. Either would shrink the
  // kernel's i_size after a later write (O_APPEND offsets come from it).
  FilePtr f = Find(ino);
  if (f) {
    std::unique_lock<std::mutex> lock(f->mu, std::try_to_lock);
    if (!lock.owns_lock()) {
      if (f->committing) {  // not waiting for the commit's sends
        attr->size = f->committing_size;
        attr->mtime_ns = f->committing_mtime_ns;
        attr->ctime_ns = std::max<int64_t>(attr->ctime_ns, attr->mtime_ns);
        return true;
      }
      lock.lock();
    }
    if (f->loaded) {
      attr->size = f->size;
      attr->mtime_ns = f->mtime_ns;
      // A change of data is a change of the inode (a write or ftruncate is
      // seen with its ctime at once, not at the commit's entry merge).
      attr->ctime_ns = std::max(attr->ctime_ns, f->mtime_ns);
      return true;
    }
  }
  // (An entry read before the merge has a ctime no newer than the merged
  // one: a commit keeps the data's ctime, which tar or cp -a may have set
  // before the merge.)
  auto seen = recent_.Get(ino);
  if (!seen || seen->ctime_ns == 0 || attr->ctime_ns > seen->ctime_ns) return false;
  attr->size = seen->size;
  attr->mtime_ns = seen->mtime_ns;
  attr->ctime_ns = seen->ctime_ns;
  return true;
}

std::optional<Attr> FileData::OpenAttr(uint64_t ino) {
  FilePtr f = Find(ino);
  if (!f) return std::nullopt;
  std::lock_guard<std::mutex> lock(f->mu);
  if (!f->loaded || f->refs == 0) return std::nullopt;
  Attr a = f->attr;
  a.ino = ino;
  a.size = f->size;
  a.mtime_ns = f->mtime_ns;
  a.ctime_ns = std::max(a.ctime_ns, f->mtime_ns);
  return a;
}

// Records (or updates) the journal row naming this file's uncommitted data.
// An unlinked file's data has nowhere to go: it is not journaled (nor one
// unlinked before its first commit).
// REQUIRES: f.mu held, f.dirty.
Status FileData::Journal(OpenFile& f, bool durable) {
  if (f.NameRemoved()) return Status::Ok();
  JournalRecord r;
  if (auto pending = ns_.PendingAttr(f.ino)) {
    // A new file's attributes live in this mount until its first commit.
    r.mode = pending->mode;
    r.uid = pending->uid;
    r.gid = pending->gid;
  }
  r.ino = f.ino;
  r.path = f.path;
  r.base_etag = f.base_etag;
  r.size = f.size;
  r.remote_size = f.remote_size;
  r.mtime_ns = f.mtime_ns;
  r.tag = f.tag;
  r.commit_ids = f.commit_ids;
  STAMPFS_RETURN_IF_ERROR(cache_.SetJournal(f.cache_id, r, durable));
  f.journaled = true;
  f.journaled_size = f.size;
  if (durable) f.synced_edits = f.edits;
  return Status::Ok();
}

}  // namespace stampfs
