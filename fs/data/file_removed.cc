// FileData: files renamed, moved or removed while open. A removed file
// that is open here lives on in the cache alone (its data made local), and
// its blob is deleted If-Match the version its entry named; a blob a rename
// copied keeps its cached data under the copy's ETag.
#include "fs/base/log.h"
#include "fs/data/file_data.h"

namespace stampfs {

void FileData::Renamed(uint64_t ino) {
  FilePtr f = Find(ino);
  if (!f) return;
  Lock lock(f->mu);
  while (f->busy) f->cv.wait(lock);
  if (!f->loaded || !f->dirty || !f->journaled) return;
  auto path = ns_.KnownPath(ino);
  if (!path || *path == f->path) return;
  f->path = *path;
  Status s = Journal(*f, true);
  if (!s.ok()) LogWarning(*path + ": journaling the new name failed: " + s.ToString());
}

// The copy holds the same bytes under a new ETag: the cached blocks and the
// kernel's pages of the inode stay valid for it (never for another version:
// both are keyed by the exact ETag the copy got).
void FileData::BlobMoved(const BlobMove& move) {
  cache_.MoveVersion(move.from_blob, move.from_etag, move.to_blob, move.to_etag);
  auto seen = recent_.Get(move.ino);
  if (seen && seen->etag == move.from_etag) {
    seen->etag = move.to_etag;
    recent_.Put(move.ino, *seen);
  }
}

void FileData::Unlinked(const FileState& gone) {
  if (gone.attr.IsRegular() && gone.names_left == 0) {
    FollowBlobMove(gone.attr.ino, gone);
    Unlinked(gone.attr.ino, gone.blob, gone.blob_etag, gone.inode_record);
  }
}

void FileData::FollowBlobMove(uint64_t ino, const FileState& st) {
  FilePtr f = Find(ino);
  if (!f) return;
  Lock lock(f->mu);
  while (f->busy) f->cv.wait(lock);
  if (!f->loaded || st.blob == f->blob || st.blob_etag.empty() || f->base_etag.empty() ||
      !IsCopyOf(st, f->base_etag)) {
    return;
  }
  f->busy = true;
  WaitIdle(*f, lock);
  Moved(*f, st);  // staged blocks were the old blob's
  Status s = cache_.Rekey(f->cache_id, f->blob, f->base_etag);
  if (!s.ok()) LogWarning(f->path + ": following its moved blob: " + s.ToString());
  f->busy = false;
  f->cv.notify_all();
}

void FileData::Unlinked(uint64_t ino, const std::string& blob, const std::string& etag,
                        bool inode_record) {
  // The version the entry named; without one, this mount's commit of it
  // (whose entry merge did not land).
  std::string version = etag;
  std::string name = blob;
  if (FilePtr f = Find(ino)) {
    Lock lock(f->mu);
    if (f->loaded && version.empty() && f->blob == blob) version = f->base_etag;
    if (f->loaded && !f->commit_ids.empty() && (blob.empty() || f->blob == blob)) {
      // Sends that did not say whether they landed (an outage): the blob at
      // its name is this file's when it carries one of its ids, whatever
      // version the entry names (a new file's pending name names none).
      while (f->busy) f->cv.wait(lock);
      std::string stored;
      auto own = OwnCommitStored(*f, &stored);
      if (own.ok() && *own != 0) {
        version = stored;
        name = f->blob;
      } else if (!own.ok()) {
        LeftUnanswered(f->blob, f->commit_ids);
      }
    }
    // Open here: it lives on in the cache alone, so its blob goes now and a
    // new file of the name commits as a new file (SQLite's -wal).
    if (f->loaded && f->refs > 0 && KeepLocal(*f, lock).ok()) {
      DropChanges(*f).PermitUnchecked();
      f->unlinked = true;
      lock.unlock();
      if (!name.empty() && !version.empty()) DeleteVersion(name, version);
      if (inode_record) ns_.DropInodeRecord(ino);
      return;
    }
  }
  if (!name.empty() && !version.empty()) {
    return DeleteBlobWhenUnused(ino, name, Condition::IfMatch(version), inode_record);
  }
  if (inode_record) ns_.DropInodeRecord(ino);
  // A new file never committed: no blob to delete (the name may be another
  // mount's by now), but its journal must not outlive the name, or a replay
  // after a crash would create the file again.
  if (FilePtr f = Find(ino)) {
    Lock lock(f->mu);
    if (f->loaded) {
      DropChanges(*f).PermitUnchecked();
      f->unlinked = true;
    }
  }
}

void FileData::BeforeRemoval(uint64_t ino) {
  FilePtr f = Find(ino);
  if (!f) return;
  if (auto st = ns_.GetFile(ino); st.ok()) FollowBlobMove(ino, *st);
  Lock lock(f->mu);
  if (f->loaded && f->refs > 0) KeepLocal(*f, lock, false).PermitUnchecked();
}

// REQUIRES: `lock` holds f.mu.
Status FileData::KeepLocal(OpenFile& f, Lock& lock, bool pin, bool warn) {
  while (f.busy) f.cv.wait(lock);
  // The last close came first (a commit let the lock go): the file is gone
  // from memory and its cache file no longer this one's to pin.
  if (!f.loaded || f.refs == 0) return Status(Code::kNotFound, f.path + ": closed meanwhile");
  f.busy = true;
  WaitIdle(f, lock);
  Status s = MaterializeAll(f, lock, false, nullptr);
  if (s.ok() && pin) {
    // Dirty blocks are never evicted; nothing is read from a blob any more.
    for (const auto& [k, state] : cache_.Blocks(f.cache_id)) {
      if (state != BlockState::kClean) continue;
      s = cache_.Set(f.cache_id, k, BlockState::kDirty, f.layout.StartOf(k), f.layout.SizeOf(k),
                     f.layout.LengthIn(k, f.size));
      if (!s.ok()) break;
    }
    if (s.ok()) f.remote_size = 0;
  }
  f.busy = false;
  f.cv.notify_all();
  if (!s.ok() && warn) {
    LogWarning(f.path + ": removed while open, its data not made local: " + s.ToString());
  }
  return s;
}

// An answer that does not say whether the delete happened (a timeout, a cut
// connection) is resolved by reading what is stored: the version still
// there is deleted again; another version (a new file of the name) or none
// means done.
void FileData::DeleteVersion(const std::string& blob, const std::string& version) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    blob_requests_++;
    Status s = blobs_.Delete(options_.container, blob, Condition::IfMatch(version));
    if (s.ok() || s.Is(Code::kNotFound) || s.Is(Code::kPreconditionFailed)) return;
    blob_requests_++;
    auto props = blobs_.GetProperties(options_.container, blob);
    if (props.status().Is(Code::kNotFound) || (props.ok() && props->etag != version)) return;
    if (!props.ok()) break;
  }
  LogWarning(blob + ": the blob of a removed file may be left (version " + version + ")");
}

void FileData::DeleteBlobWhenUnused(uint64_t ino, const std::string& blob, const Condition& cond,
                                    bool inode_record) {
  if (FilePtr f = Find(ino)) {
    Lock lock(f->mu);
    if (f->loaded) {
      DropChanges(*f).PermitUnchecked();  // its name is gone: nothing to commit
      f->delete_on_close = blob;
      f->delete_condition = cond;
      f->drop_record = inode_record;
      if (f->refs > 0) return;  // deleted after the last close
      // Kept loaded after a failed commit and unused: drop it now.
      WaitIdle(*f, lock);
      Unload(*f);
      f->delete_on_close.clear();
      f->drop_record = false;  // dropped below
      lock.unlock();
      EraseIfUnused(ino, f);
      ns_.Unpin(ino);
    }
  }
  DeleteOrphan(blob, cond);
  if (inode_record) ns_.DropInodeRecord(ino);
}

void FileData::LeftUnanswered(const std::string& blob, std::vector<uint64_t> ids) {
  std::lock_guard<std::mutex> lock(unanswered_mu_);
  unanswered_.push_back({blob, std::move(ids)});
}

bool FileData::UnansweredDue() {
  std::lock_guard<std::mutex> lock(unanswered_mu_);
  return !unanswered_.empty() && NowMs() - unanswered_swept_ms_ >= 1000;
}

size_t FileData::SweepUnanswered(bool now) {
  std::vector<UnansweredSends> todo;
  {
    std::lock_guard<std::mutex> lock(unanswered_mu_);
    if (unanswered_.empty()) return 0;
    if (!now && NowMs() - unanswered_swept_ms_ < 1000) return unanswered_.size();
    unanswered_swept_ms_ = NowMs();
    todo.swap(unanswered_);
  }
  std::vector<UnansweredSends> open;
  for (UnansweredSends& u : todo) {
    std::string etag;
    auto own = CommitIdAt(u.blob, u.ids, &etag);
    if (!own.ok()) {
      open.push_back(std::move(u));
    } else if (*own != 0) {
      LogInfo(u.blob + ": a send of a file that left this name landed unanswered; deleting it");
      DeleteVersion(u.blob, etag);
    }
  }
  std::lock_guard<std::mutex> lock(unanswered_mu_);
  unanswered_.insert(unanswered_.end(), std::make_move_iterator(open.begin()),
                     std::make_move_iterator(open.end()));
  return unanswered_.size();
}

void FileData::DeleteOrphan(const std::string& blob, const Condition& cond) {
  if (cond.kind == Condition::Kind::kIfMatch && cond.etag != "*")
    return DeleteVersion(blob, cond.etag);
  blob_requests_++;
  blobs_.Delete(options_.container, blob, cond).PermitUnchecked();
}

}  // namespace stampfs
