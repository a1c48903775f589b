// Attributes set through the data path. Times set while a file is open
// (futimens before close, as tar x and cp -a do): the open copy's mtime is
// what its commit writes and what stat shows. A file not open here: a mode,
// owner or mtime change also reaches its blob's metadata
// (Namespace::SetAttrWithBlob); its cached blocks and the version the
// kernel's page cache holds follow the blob's new ETag (same bytes).
#include <sys/stat.h>

#include "fs/data/file_data.h"

namespace stampfs {

Result<Attr> FileData::SetAttr(uint64_t ino, const SetAttrRequest& req) {
  if (async()) {
    // A directory's change waits in the journal for the pipeline, as a
    // closed file's does (Namespace::DeferSetAttr).
    if (auto deferred = ns_.DeferSetAttr(ino, req)) {
      if (deferred->ok()) Enqueue(ino, options_.commit_delay_ms);
      return *deferred;
    }
  }
  FilePtr f = Enter(ino);  // an open of the file waits until the blob and entry agree
  Lock lock(f->mu);
  if (f->loaded) {
    if (req.mtime_ns) f->mtime_ns = *req.mtime_ns;  // for its next commit's metadata
    if (req.mode) f->attr.mode = (f->attr.mode & S_IFMT) | (*req.mode & 07777);
    if (req.uid) f->attr.uid = *req.uid;
    if (req.gid) f->attr.gid = *req.gid;
    if (req.mode || req.uid || req.gid || req.mtime_ns) f->attrs_changed_on = f->base_etag;
    lock.unlock();
    Leave(f);
    auto set = ns_.SetAttr(ino, req);
    // A closed file waiting for its commit (commit=async): its journal row
    // carries the new attributes (a replay after a crash keeps them).
    Lock relock(f->mu);
    if (set.ok() && f->loaded && f->dirty && f->refs == 0 && f->journaled && !f->busy) {
      Journal(*f, true).PermitUnchecked();
    }
    return set;
  }
  BlobVersionChange change;
  auto attr = ns_.SetAttrWithBlob(ino, req, &change);
  if (attr.ok() && !change.new_etag.empty()) {
    cache_.MoveVersion(change.blob, change.old_etag, change.blob, change.new_etag);  // same bytes
    auto seen = recent_.Get(ino);
    if (seen && seen->etag == change.old_etag) {
      recent_.Put(ino, {change.new_etag, attr->size, attr->mtime_ns, attr->ctime_ns});
    }
  }
  lock.unlock();
  Leave(f);
  EraseIfUnused(ino, f);
  return attr;
}

// A change made while the file was open (the kernel sends a close's
// release after close(2) returned, so `cp f x; touch -d ... x` often lands
// here) that no commit wrote since: the blob's metadata gets it now.
// REQUIRES: f.mu held; the last release, with nothing to commit.
void FileData::SyncAttrsAtClose(OpenFile& f) {
  const bool pending = !f.attrs_changed_on.empty() && f.attrs_changed_on == f.base_etag;
  f.attrs_changed_on.clear();
  if (!pending || f.NameRemoved()) return;
  SetAttrRequest req;
  req.mode = f.attr.mode & 07777;
  req.uid = f.attr.uid;
  req.gid = f.attr.gid;
  req.mtime_ns = f.mtime_ns;
  BlobVersionChange change;
  auto attr = ns_.SetAttrWithBlob(f.ino, req, &change);
  if (!attr.ok() || change.new_etag.empty() || change.blob != f.blob) return;
  if (cache_.Rekey(f.cache_id, f.blob, change.new_etag).ok()) f.base_etag = change.new_etag;
}

}  // namespace stampfs
