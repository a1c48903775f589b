// FileData: repairing entries that lag behind their blob, and replaying the
// dirty journal after a crash.
//
// Blob commit and entry merge are two requests. When a crash (or a failed
// merge) falls between them, the entry still names the old blob ETag while
// the blob holds newer data. The blob is the truth for data: the entry adopts
// the blob's ETag, size and mtime (from the blob metadata stampfs writes,
// else Last-Modified) when an open or a pinned read finds them different.
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "fs/base/log.h"
#include "fs/data/file_data.h"
#include "fs/namespace/blob_times.h"
#include "fs/namespace/inode_table.h"
#include "fs/namespace/names.h"

namespace stampfs {

namespace {

uint64_t MetaNumber(const BlobMetadata& meta, const std::string& name, uint64_t fallback) {
  auto it = meta.find(name);
  if (it == meta.end() || it->second.empty()) return fallback;
  char* end = nullptr;
  unsigned long long v = std::strtoull(it->second.c_str(), &end, 10);
  return *end == '\0' ? v : fallback;
}

}  // namespace

Result<FileState> FileData::Adopt(uint64_t ino) {
  auto st = ns_.GetFile(ino, true);
  STAMPFS_RETURN_IF_ERROR(st);
  blob_requests_++;
  auto props = blobs_.GetProperties(options_.container, st->blob);
  if (props.status().Is(Code::kNotFound)) return st;  // no blob to adopt
  STAMPFS_RETURN_IF_ERROR(props);
  if (props->etag == st->blob_etag) return st;
  const bool ours = props->metadata.count("stampfs") > 0;
  int64_t mtime = props->last_modified * 1000000000LL;
  // Metadata names are case-insensitive ("Mtime": rclone).
  for (const auto& [key, value] : props->metadata) {
    if (strcasecmp(key.c_str(), "mtime") == 0) mtime = ParseBlobMtime(value).value_or(mtime);
  }
  const uint64_t bsize = MetaNumber(props->metadata, "bsize", 0);
  auto attr = ns_.CommitFile(ino, props->size, mtime, props->etag, st->blob_etag,
                             ValidBlockSize(bsize) ? bsize : 0);
  STAMPFS_RETURN_IF_ERROR(attr);
  // The kernel may hold the old size: a read clipped to it comes back short,
  // and the next one past it asks for the new size (never a cut version).
  if (props->size != st->attr.size) KernelStale(ino);
  const std::string what = st->path + ": the entry named blob version " +
                           (st->blob_etag.empty() ? "(none)" : st->blob_etag) +
                           " but the blob is at " + props->etag;
  if (ours) {
    LogInfo(what + " (a commit whose entry update was lost): adopted it");
  } else {
    LogWarning(what + ", written by another tool: adopted its size");
  }
  return ns_.GetFile(ino, true);
}

Result<FileState> FileData::Validate(uint64_t ino, const FileState& st) {
  blob_requests_++;
  auto props = blobs_.GetProperties(options_.container, st.blob);
  if (props.status().Is(Code::kNotFound)) return st;
  STAMPFS_RETURN_IF_ERROR(props);
  if (props->etag == st.blob_etag) return st;
  return Adopt(ino);
}

// The attributes of `path`, looked up from the root; every lookup counted is
// listed in `looked_up` for ForgetLookups.
Result<Attr> FileData::Resolve(const std::string& path, std::vector<uint64_t>* looked_up) {
  auto attr = ns_.GetAttr(kRootIno);
  size_t pos = 1;
  while (attr.ok() && pos < path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string::npos) slash = path.size();
    const std::string name = path.substr(pos, slash - pos);
    pos = slash + 1;
    if (name.empty()) continue;
    attr = ns_.Lookup(attr->ino, name);
    if (attr.ok()) looked_up->push_back(attr->ino);
  }
  return attr;
}

void FileData::ForgetLookups(const std::vector<uint64_t>& looked_up) {
  for (uint64_t ino : looked_up) ns_.Forget(ino, 1);
}

Status FileData::ReplayJournal() {
  // Directories' attribute changes first: the pipeline retries what is left.
  for (uint64_t ino : ns_.ReplayDeferred()) Enqueue(ino, 0);
  const std::vector<CacheFileInfo> journaled = cache_.Journaled();
  if (journaled.empty()) return Status::Ok();
  LogInfo("dirty journal: " + std::to_string(journaled.size()) +
          " file(s) with changes not committed before the last stop");
  for (const CacheFileInfo& info : journaled) {
    Status s = ReplayOne(info);
    if (!s.ok()) {
      LogError("dirty journal: " + info.journal->path + ": " + s.ToString() +
               "; the changes stay in the cache journal");
    }
  }
  return Status::Ok();
}

size_t FileData::CommitAll(std::chrono::milliseconds budget) {
  const auto deadline = std::chrono::steady_clock::now() + budget;
  std::vector<FilePtr> files;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [ino, f] : files_) files.push_back(f);
  }
  // One file: committed, or counted as left (its changes stay journaled).
  auto commit_one = [this, deadline](const FilePtr& fp) -> bool {
    Lock lock(fp->mu);
    if (!fp->loaded || !fp->dirty) return true;
    if (std::chrono::steady_clock::now() >= deadline) {
      LogWarning(fp->path + ": no time left to commit; the changes stay in the cache journal " +
                 "for the next mount");
      return false;
    }
    Status s = CommitLocked(fp, lock);
    if (fp->loaded && fp->dirty) {
      LogWarning(fp->path + ": not committed (" + s.ToString() +
                 "); the changes stay in the cache journal");
      return false;
    }
    LogInfo("committed " + fp->path);
    Dequeue(fp->ino);
    if (fp->refs == 0) Closed(fp, lock);
    return true;
  };
  if (!commits_) {
    size_t left = 0;
    for (const FilePtr& fp : files) left += commit_one(fp) ? 0 : 1;
    SweepUnanswered(true);
    return left + CommitDeferredAll(deadline);
  }
  // In parallel on the pipeline's threads (their entry changes share batches).
  struct Tally {
    std::mutex mu;
    std::condition_variable cv;
    size_t done = 0, left = 0;
  } tally;
  for (const FilePtr& fp : files) {
    commits_->Submit([&tally, &commit_one, fp] {
      const bool ok = commit_one(fp);
      std::lock_guard<std::mutex> lock(tally.mu);
      tally.done++;
      if (!ok) tally.left++;
      tally.cv.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> lock(tally.mu);
    tally.cv.wait(lock, [&] { return tally.done == files.size(); });
  }
  SweepUnanswered(true);
  return tally.left + CommitDeferredAll(deadline);
}

std::vector<std::string> FileData::Drain(std::chrono::milliseconds budget) {
  using std::chrono::milliseconds;
  using std::chrono::steady_clock;
  const auto deadline = steady_clock::now() + budget;
  for (milliseconds pause(200);; pause = std::min(pause * 2, milliseconds(5000))) {
    const auto rest = std::chrono::duration_cast<milliseconds>(deadline - steady_clock::now());
    const size_t left = CommitAll(std::max(rest, milliseconds(0)));
    std::vector<std::string> paths;
    for (const CacheFileInfo& info : cache_.Journaled()) {
      if (info.journal) paths.push_back(info.journal->path);
    }
    if (left == 0 && paths.empty()) return paths;
    if (steady_clock::now() + pause >= deadline) {
      if (paths.empty()) {
        paths.push_back("(attribute changes of " + std::to_string(left) + " directories)");
      }
      return paths;
    }
    std::this_thread::sleep_for(pause);
  }
}

// Directories' deferred attribute changes, after the files (their commits
// touch the directories' partitions, not the entries these change).
size_t FileData::CommitDeferredAll(std::chrono::steady_clock::time_point deadline) {
  size_t left = 0;
  for (uint64_t ino : ns_.DeferredInos()) {
    Status s = std::chrono::steady_clock::now() < deadline ? ns_.CommitDeferred(ino)
                                                           : Status(Code::kTimeout, "no time left");
    if (s.ok() && !ns_.HasDeferred(ino)) {
      Dequeue(ino);
      continue;
    }
    LogWarning("directory inode " + std::to_string(ino) + ": attribute change not committed (" +
               s.ToString() + "); it stays in the cache journal");
    left++;
  }
  return left;
}

// Commits one journaled file with the preconditions it had (the conflict
// policy applies), or saves it as a conflict copy when its entry is gone or
// names another file now.
Status FileData::ReplayOne(const CacheFileInfo& info) {
  const JournalRecord& j = *info.journal;
  auto id = cache_.AcquireId(info.id);
  STAMPFS_RETURN_IF_ERROR(id);
  std::vector<uint64_t> held;
  auto where = Resolve(j.path, &held);
  uint64_t ino = j.ino;
  // Journaled while its create was deferred (attributes recorded): its entry
  // was never inserted, even when its first blob write landed (base ETag).
  const bool never_inserted = j.base_etag.empty() || j.mode != 0;
  if (where.status().Is(Code::kNotFound) && never_inserted) {
    // A new file whose entry was never inserted (created without O_EXCL,
    // the daemon died before its first commit): created under its name.
    auto parent = Resolve(ParentPath(j.path), &held);
    if (parent.ok() && parent->IsDir()) {
      // With the attributes it had in the mount that died (journaled since
      // schema 3; older rows: 0644 and this process's owner).
      const bool known = j.mode != 0;
      auto made = ns_.Create(parent->ino, BaseName(j.path), known ? j.mode & 07777 : 0644,
                             known ? j.uid : getuid(), known ? j.gid : getgid());
      if (made.ok()) {
        held.push_back(made->ino);
        ino = made->ino;
        where = made;
      }
    }
  }
  if (!where.ok() && !where.status().Is(Code::kNotFound)) {
    // Only a name read as gone or as another file's sends the data to a copy.
    ForgetLookups(held);
    cache_.Release(*id);
    return where.status();
  }
  auto fp = std::make_shared<OpenFile>(ino);
  OpenFile& f = *fp;
  Lock lock(f.mu);
  f.cache_id = *id;
  f.fd = cache_.fd(*id);
  f.layout = BlockLayout(ValidBlockSize(info.block_size) ? info.block_size : options_.block_size);
  f.blob = info.blob;
  f.base_etag = j.base_etag;
  f.path = j.path;
  f.size = j.size;
  f.remote_size = j.remote_size;
  f.mtime_ns = j.mtime_ns;
  f.tag = j.tag;
  f.commit_ids = j.commit_ids;
  f.dirty = f.journaled = f.loaded = f.served = true;
  f.journaled_size = j.size;
  f.refs = 1;
  f.attr.mode = S_IFREG | 0644;
  f.attr.uid = getuid();
  f.attr.gid = getgid();
  Status s;
  if (where.ok() && where->ino == ino && where->IsRegular()) {
    f.attr = *where;
    ns_.Pin(ino);
    s = CommitLocked(fp, lock);
    ns_.Unpin(ino);
    if (s.ok()) LogInfo("dirty journal: committed " + j.path);
    if (!f.dirty) s = Status::Ok();  // a conflict resolved by a copy (logged)
  } else {
    f.busy = true;
    auto copy = SaveConflictCopy(fp, lock, j.path);
    f.busy = false;
    s = copy.status();
    if (s.ok()) {
      LogWarning("dirty journal: " + j.path + " was removed or replaced before its changes " +
                 "were committed; they were saved as " + *copy);
      cache_.Discard(f.cache_id).PermitUnchecked();
      // A blob write of this file that landed (a create's known base, or a
      // version carrying one of its ids: a send whose answer was lost, also
      // of a committed file another mount removed meanwhile) is no file's,
      // unless a regular file holds the name now (its entry may have
      // adopted that version). Unanswered now: swept later (by id).
      const bool unnamed =
          where.status().Is(Code::kNotFound) || (where.ok() && !where->IsRegular());
      std::string landed = unnamed && j.mode != 0 ? j.base_etag : "";
      if (unnamed && landed.empty() && !f.commit_ids.empty()) {
        auto own = OwnCommitStored(f, &landed);
        if (!own.ok()) LeftUnanswered(f.blob, f.commit_ids);
        if (!own.ok() || *own == 0) landed.clear();
      }
      if (!landed.empty()) DeleteVersion(f.blob, landed);
    }
  }
  ForgetLookups(held);
  WaitIdle(f, lock);
  cache_.Release(f.cache_id);
  f.loaded = false;
  return s;
}

}  // namespace stampfs
