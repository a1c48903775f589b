// Namespace changes inside one directory: mkdir, rmdir, create, symlink,
// unlink, setattr, xattrs, file commits.
#include <sys/stat.h>

#include <algorithm>

#include "fs/namespace/dir_marker.h"
#include "fs/namespace/hard_links.h"
#include "fs/base/log.h"
#include "fs/namespace/names.h"
#include "fs/namespace/namespace.h"
#include "fs/namespace/xattr.h"
#include "storage/table_keys.h"

namespace stampfs {

namespace {

Attr NewAttr(uint64_t ino, uint32_t mode, uint32_t uid, uint32_t gid) {
  Attr a;
  a.ino = ino;
  a.mode = mode;
  a.uid = uid;
  a.gid = gid;
  a.mtime_ns = a.ctime_ns = a.atime_ns = NowNs();
  return a;
}

}  // namespace

Entity Namespace::NewEntry(const std::string& dir_path, const std::string& name,
                           const Attr& attr) const {
  Entity e;
  e.partition_key = PartitionKeyForDirectory(dir_path);
  e.row_key = RowKeyForName(name);
  AttrToEntity(attr, &e);
  SetEntryName(name, &e);
  if (attr.IsRegular()) e.properties["blob"] = BlobNameFor(JoinPath(dir_path, name));
  return e;
}

Entity Namespace::DotRow(const std::string& dir_path, uint64_t ino) const {
  Entity dot{PartitionKeyForDirectory(dir_path), kDotRowKey, {}, {}};
  dot.properties["ino"] = static_cast<int64_t>(ino);
  if (IsHashedKey(dot.partition_key)) dot.properties["path"] = Binary{dir_path};
  return dot;
}

Result<Attr> Namespace::InsertEntry(uint64_t parent, const Located& loc, const Entity& entry) {
  if (PendingEntry(entry.partition_key, entry.row_key)) {
    return Status(Code::kAlreadyExists, loc.path);
  }
  BatchError err;
  auto r = CommitInDirectory(loc.parent_path, {TableOperation::Insert(entry)}, &err);
  STAMPFS_RETURN_IF_ERROR(r);
  auto attr = AttrFromEntity(entry);
  STAMPFS_RETURN_IF_ERROR(attr);
  inodes_.Remember(attr->ino, parent, loc.name, attr->IsDir());
  return attr;
}

Result<Attr> Namespace::Mkdir(uint64_t parent, const std::string& name, uint32_t mode, uint32_t uid,
                              uint32_t gid) {
  if (options_.read_only) return Status(Code::kReadOnly, "read-only mount");
  SettleOwnRenames();
  auto loc = Locate(parent, name, true);
  STAMPFS_RETURN_IF_ERROR(loc);
  auto ino = AllocateIno();
  STAMPFS_RETURN_IF_ERROR(ino);
  // Until its outcome is settled, a crash leaves the "." row to the next
  // mount (FinishMkdirs); `settled` erases the note.
  if (cache_) cache_->PutMkdir(*ino, loc->path).PermitUnchecked();
  const auto settled = [&] {
    if (cache_) cache_->EraseMkdir(*ino).PermitUnchecked();
  };
  // Step 1: the new directory's "." row. One already there without an entry
  // in the parent is an unfinished mkdir: adopt it.
  Entity dot = DotRow(loc->path, *ino);
  table_requests++;
  auto inserted = table_.Insert(options_.table, dot);
  bool adopted = false;
  if (!inserted.ok()) {
    if (!inserted.status().Is(Code::kAlreadyExists)) return inserted.status();
    auto existing = FetchEntry(loc->parent_path, name, true);
    if (existing.ok()) {
      settled();
      return Status(Code::kAlreadyExists, loc->path);
    }
    table_requests++;
    inserted = table_.Update(options_.table, dot, UpdateMode::kReplace, Condition::None());
    STAMPFS_RETURN_IF_ERROR(inserted);
    adopted = true;
  }
  // Step 2: the entry, in one transaction with the parent's "." row.
  Attr attr = NewAttr(*ino, S_IFDIR | (mode & 07777), uid, gid);
  auto r = InsertEntry(parent, *loc, NewEntry(loc->parent_path, name, attr));
  if (!r.ok()) {
    // The name is a file, or the parent vanished: our "." row must not stay.
    if (!adopted) {
      table_requests++;
      Status gone = table_.Delete(options_.table, dot.partition_key, kDotRowKey,
                                  Condition::IfMatch(*inserted));
      if (gone.ok() || gone.Is(Code::kNotFound) || gone.Is(Code::kPreconditionFailed)) settled();
    }
    return r.status();
  }
  settled();
  if (cache_) {
    // Known empty: its own "." row is the whole listing (no subdirectories).
    Entity listed = dot;
    listed.etag = *inserted;
    listed.properties[kSubdirsProperty] = int64_t{0};
    cache_->PutListing(dot.partition_key, {listed}, *inserted, NowMs()).PermitUnchecked();
  }
  if (options_.dir_markers) {
    Status m = WriteDirMarker(blobs_, options_.container, loc->path, *r);
    if (!m.ok())
      LogWarning("mkdir " + loc->path + ": directory marker not written: " + m.ToString());
  }
  return r;
}

// Mkdirs a crash (kill -9) interrupted, noted in the metadata cache: a "."
// row carrying the mkdir's inode, with no entry of that inode naming it and
// nothing else in its partition, is deleted (If-Match); anything else is
// left as it is (fsck reports what is wrong). An outcome that cannot be read
// now stays noted for the next mount.
void Namespace::FinishMkdirs() {
  if (!cache_ || options_.read_only) return;
  for (const auto& [ino, path] : cache_->ListMkdirs()) {
    auto entry = FetchEntry(ParentPath(path), BaseName(path), true, false);
    if (entry.ok() && static_cast<uint64_t>(entry->GetInt64("ino")) == ino) {
      cache_->EraseMkdir(ino).PermitUnchecked();  // it finished
      continue;
    }
    if (!entry.ok() && !entry.status().Is(Code::kNotFound)) continue;
    const std::string pk = PartitionKeyForDirectory(path);
    table_requests++;
    auto dot = table_.Get(options_.table, pk, kDotRowKey);
    if (!dot.ok() && !dot.status().Is(Code::kNotFound)) continue;
    if (dot.ok() && static_cast<uint64_t>(dot->GetInt64("ino")) == ino) {
      auto empty = CheckEmpty(pk);
      if (empty.status().Is(Code::kNotEmpty)) {
        LogWarning("mkdir " + path + " was interrupted, and its partition holds entries: " +
                   "left to stampfs fsck");
      } else {
        if (!empty.ok()) continue;
        table_requests++;
        Status s = table_.Delete(options_.table, pk, kDotRowKey, Condition::IfMatch(dot->etag));
        if (!s.ok() && !s.Is(Code::kNotFound) && !s.Is(Code::kPreconditionFailed)) continue;
        cache_->DropPartition(pk).PermitUnchecked();
        LogInfo("mkdir " + path + " was interrupted (a crash): its \".\" row is removed");
      }
    }
    cache_->EraseMkdir(ino).PermitUnchecked();
  }
}

Status Namespace::Rmdir(uint64_t parent, const std::string& name) {
  if (options_.read_only) return Status(Code::kReadOnly, "read-only mount");
  STAMPFS_RETURN_IF_ERROR(CheckCanDelete("rmdir"));
  auto loc = Locate(parent, name);
  STAMPFS_RETURN_IF_ERROR(loc);
  auto entry = FetchEntry(loc->parent_path, name, true);
  STAMPFS_RETURN_IF_ERROR(entry);
  auto attr = AttrFromEntity(*entry);
  STAMPFS_RETURN_IF_ERROR(attr);
  if (!attr->IsDir()) return Status(Code::kNotADirectory, loc->path);
  const std::string pk = PartitionKeyForDirectory(loc->path);
  auto dot_etag = CheckEmpty(pk);
  STAMPFS_RETURN_IF_ERROR(dot_etag);
  // Deleting "." with the ETag seen while checking: a create that raced us
  // changed it (412, ENOTEMPTY); once "." is gone, creates in it fail.
  if (!dot_etag->empty()) {
    table_requests++;
    Status s = table_.Delete(options_.table, pk, kDotRowKey, Condition::IfMatch(*dot_etag));
    if (s.Is(Code::kPreconditionFailed)) return Status(Code::kNotEmpty, loc->path);
    if (!s.ok() && !s.Is(Code::kNotFound)) return s;
  }
  if (cache_) cache_->DropPartition(pk).PermitUnchecked();
  // Before the entry goes: a crash in between leaves an unfinished rmdir
  // (finished by lookups), not a marker that an import would bring back.
  if (options_.dir_markers) {
    Status m = RemoveDirMarker(blobs_, options_.container, loc->path);
    if (!m.ok())
      LogWarning("rmdir " + loc->path + ": directory marker not removed: " + m.ToString());
  }
  auto r = CommitInDirectory(
      loc->parent_path,
      {TableOperation::Delete(entry->partition_key, entry->row_key, Condition::IfMatch("*"))},
      nullptr);
  STAMPFS_RETURN_IF_ERROR(r);
  inodes_.Detach(attr->ino);
  DropDeferred(attr->ino);  // its chmod/utimens went with it
  return Status::Ok();
}

// The "." ETag of an empty directory ("" when the "." row is already gone:
// an unfinished rmdir), or kNotEmpty.
Result<std::string> Namespace::CheckEmpty(const std::string& pk) {
  if (AnyPendingIn(pk)) return Status(Code::kNotEmpty, "directory not empty");
  QueryOptions q;
  q.filter = FilterPartition(pk);
  q.top = 2;
  std::string npk, nrk, dot_etag;
  do {
    table_requests++;
    auto page = table_.QueryPage(options_.table, q, npk, nrk);
    STAMPFS_RETURN_IF_ERROR(page);
    for (const Entity& e : page->entities) {
      if (e.row_key != kDotRowKey) return Status(Code::kNotEmpty, "directory not empty");
      dot_etag = e.etag;
    }
    npk = page->next_partition_key;
    nrk = page->next_row_key;
  } while (!npk.empty() || !nrk.empty());
  return dot_etag;
}

Result<Attr> Namespace::Create(uint64_t parent, const std::string& name, uint32_t mode,
                               uint32_t uid, uint32_t gid, bool deferred) {
  return CreateNode(parent, name, S_IFREG | (mode & 07777), 0, uid, gid, deferred);
}

// A new entry without a target: a regular file, FIFO, socket or device.
Result<Attr> Namespace::CreateNode(uint64_t parent, const std::string& name, uint32_t mode,
                                   uint64_t rdev, uint32_t uid, uint32_t gid, bool deferred) {
  if (options_.read_only) return Status(Code::kReadOnly, "read-only mount");
  SettleOwnRenames();
  auto loc = Locate(parent, name, true);
  STAMPFS_RETURN_IF_ERROR(loc);
  auto ino = AllocateIno();
  STAMPFS_RETURN_IF_ERROR(ino);
  Attr attr = NewAttr(*ino, mode, uid, gid);
  attr.rdev = rdev;
  if (deferred) return CreateDeferred(parent, *loc, attr);
  return InsertEntry(parent, *loc, NewEntry(loc->parent_path, name, attr));
}

Result<Attr> Namespace::Symlink(uint64_t parent, const std::string& name, const std::string& target,
                                uint32_t uid, uint32_t gid) {
  if (options_.read_only) return Status(Code::kReadOnly, "read-only mount");
  if (target.size() > 4095) return Status(Code::kNameTooLong, "symlink target too long");
  auto loc = Locate(parent, name, true);
  STAMPFS_RETURN_IF_ERROR(loc);
  auto ino = AllocateIno();
  STAMPFS_RETURN_IF_ERROR(ino);
  Attr attr = NewAttr(*ino, S_IFLNK | 0777, uid, gid);
  attr.size = target.size();
  Entity e = NewEntry(loc->parent_path, name, attr);
  e.properties["target"] = Binary{target};
  return InsertEntry(parent, *loc, e);
}

Result<Attr> Namespace::Mknod(uint64_t parent, const std::string& name, uint32_t mode,
                              uint64_t rdev, uint32_t uid, uint32_t gid) {
  const uint32_t type = mode & S_IFMT;
  if (type == S_IFREG || type == 0) return Create(parent, name, mode & 07777, uid, gid);
  if (type != S_IFIFO && type != S_IFSOCK && type != S_IFCHR && type != S_IFBLK) {
    return Status(Code::kInvalidArgument, "mknod of file type " + std::to_string(type));
  }
  const bool device = type == S_IFCHR || type == S_IFBLK;
  return CreateNode(parent, name, type | (mode & 07777), device ? rdev : 0, uid, gid, false);
}

Result<std::string> Namespace::ReadLink(uint64_t ino) {
  auto e = FetchEntryOf(ino, nullptr, false);
  STAMPFS_RETURN_IF_ERROR(e);
  const Binary* target = e->GetBinary("target");
  if (!target) return Status(Code::kInvalidArgument, "not a symlink");
  return target->bytes;
}

Result<FileState> Namespace::Unlink(uint64_t parent, const std::string& name) {
  if (options_.read_only) return Status(Code::kReadOnly, "read-only mount");
  STAMPFS_RETURN_IF_ERROR(CheckCanDelete("unlink"));
  auto loc = Locate(parent, name);
  STAMPFS_RETURN_IF_ERROR(loc);
  if (auto dropped =
          DropPending(PartitionKeyForDirectory(loc->parent_path), RowKeyForName(name), loc->path)) {
    return *dropped;  // never in the table
  }
  // The entry is deleted If-Match the ETag just read, so a directory that
  // replaced the name is never removed; an entry changed meanwhile (another
  // mount committed data to the file: 412) is read again.
  for (int attempt = 0; attempt < 4; ++attempt) {
    auto entry = FetchEntry(loc->parent_path, name, true);
    STAMPFS_RETURN_IF_ERROR(entry);
    auto state = FileStateOf(*entry, loc->path);
    STAMPFS_RETURN_IF_ERROR(state);
    if (state->attr.IsDir()) return Status(Code::kIsADirectory, loc->path);
    STAMPFS_RETURN_IF_ERROR(CheckNotExchanging(*entry, loc->path));
    if (IsLinkName(*entry)) {
      auto linked = UnlinkLinked(*loc, state->attr.ino);
      if (linked.status().Is(Code::kPreconditionFailed)) continue;
      return linked;
    }
    BatchError err;
    RemovalInFlight removing(*this, state->attr.ino);
    auto r = CommitInDirectory(loc->parent_path,
                               {TableOperation::Delete(entry->partition_key, entry->row_key,
                                                       Condition::IfMatch(entry->etag))},
                               &err);
    if (!r.ok() && err.failed_index == 0 && r.status().Is(Code::kPreconditionFailed)) continue;
    STAMPFS_RETURN_IF_ERROR(r);
    Removed(state->attr.ino, &*entry);
    return state;
  }
  return Status(Code::kPreconditionFailed, loc->path + " kept changing under concurrent updates");
}

Result<FileState> Namespace::FileStateOf(const Entity& entry, const std::string& path) const {
  auto attr = AttrFromEntity(entry);
  STAMPFS_RETURN_IF_ERROR(attr);
  FileState s;
  s.attr = *attr;
  s.path = path;
  s.entity_etag = entry.etag;
  if (const std::string* b = entry.GetString("blob")) s.blob = *b;
  if (const std::string* b = entry.GetString("betag")) s.blob_etag = *b;
  if (int64_t b = entry.GetInt64("bsize"); b > 0) s.block_size = static_cast<uint64_t>(b);
  if (const std::string* m = entry.GetString(kMovedFromProperty)) s.moved_from = SplitFields(*m, ' ');
  return s;
}

void NoteMovedFrom(const std::string& copied_etag, Entity* moved) {
  std::vector<std::string> list{copied_etag};
  if (const std::string* m = moved->GetString(kMovedFromProperty)) {
    for (std::string& etag : SplitFields(*m, ' ')) {
      if (list.size() == kMovedFromKept) break;
      if (etag != copied_etag) list.push_back(std::move(etag));
    }
  }
  std::string text;
  for (const std::string& etag : list) text += (text.empty() ? "" : " ") + etag;
  moved->properties[kMovedFromProperty] = text;
}

bool IsCopyOf(const FileState& st, const std::string& etag) {
  return !etag.empty() &&
         std::find(st.moved_from.begin(), st.moved_from.end(), etag) != st.moved_from.end();
}

// Read-modify-write of one entry, conditional on its ETag; a stale cached
// copy (412) is re-read from the table and the change applied again.
Result<Entity> Namespace::MergeEntry(uint64_t ino, const std::function<Status(Entity*)>& change) {
  if (options_.read_only) return Status(Code::kReadOnly, "read-only mount");
  if (auto pending = ChangePending(ino, change, false)) return *pending;
  for (int attempt = 0; attempt < 4; ++attempt) {
    std::string path;
    auto e = FetchEntryOf(ino, &path, attempt > 0);
    STAMPFS_RETURN_IF_ERROR(e);
    Entity updated = *e;
    STAMPFS_RETURN_IF_ERROR(change(&updated));
    updated.etag.clear();
    if (e->partition_key == kInodesPartition) {  // a hard-linked file's record
      auto r = PutInode(updated, Condition::IfMatch(e->etag));
      if (r.status().Is(Code::kPreconditionFailed)) continue;
      return r;
    }
    if (path == "/") {
      Status r = UpdateRootDot(*e, &updated);
      if (r.Is(Code::kPreconditionFailed)) continue;
      STAMPFS_RETURN_IF_ERROR(r);
      return updated;
    }
    BatchError err;
    auto r = CommitGrouped(ParentPath(path),
                           TableOperation::Replace(updated, Condition::IfMatch(e->etag)), &err);
    if (!r.ok() && err.failed_index == 0 && r.status().Is(Code::kPreconditionFailed)) continue;
    STAMPFS_RETURN_IF_ERROR(r);
    updated.etag = r->etags[0];
    return updated;
  }
  return Status(Code::kPreconditionFailed, "entry kept changing under concurrent updates");
}

// The root's attributes live on its "." row, which every transaction in the
// root merges ("changed", "touched"): a replace If-Match the row just read
// loses to a busy root on every attempt (tar's utime of "." while the
// pipeline commits the files it extracted into the root: EIO). Only the
// properties the change sets are merged (If-Match *: the row exists); a
// change that removes one (an xattr) replaces the row If-Match, as before.
Status Namespace::UpdateRootDot(const Entity& before, Entity* after) {
  after->properties.erase(kSubdirsProperty);  // the cache's, not the table's
  Entity changed{after->partition_key, after->row_key, {}, {}};
  bool removes = false;
  for (const auto& [name, value] : before.properties) {
    removes |= name != kSubdirsProperty && after->properties.count(name) == 0;
  }
  for (const auto& [name, value] : after->properties) {
    auto it = before.properties.find(name);
    if (it == before.properties.end() || !(it->second == value)) changed.properties[name] = value;
  }
  table_requests++;
  auto r =
      removes ? table_.Update(options_.table, *after, UpdateMode::kReplace,
                              Condition::IfMatch(before.etag))
              : table_.Update(options_.table, changed, UpdateMode::kMerge, Condition::IfMatch("*"));
  STAMPFS_RETURN_IF_ERROR(r);
  after->etag = *r;
  if (cache_) {
    cache_->InvalidateListing(after->partition_key).PermitUnchecked();
    if (removes) {
      cache_->PutEntry(*after, NowMs()).PermitUnchecked();
    } else {  // the row holds what other transactions merged meanwhile too
      cache_->EraseEntry(after->partition_key, kDotRowKey).PermitUnchecked();
    }
  }
  return Status::Ok();
}

Status Namespace::ApplySetAttr(const SetAttrRequest& req, Entity* entity,
                               std::optional<int64_t> at_ns) {
  auto attr = AttrFromEntity(*entity);
  STAMPFS_RETURN_IF_ERROR(attr);
  if (req.mode) attr->mode = (attr->mode & S_IFMT) | (*req.mode & 07777);
  if (req.uid) attr->uid = *req.uid;
  if (req.gid) attr->gid = *req.gid;
  if (req.size) {
    if (!attr->IsRegular()) return Status(Code::kInvalidArgument, "size of a non-file");
    attr->size = *req.size;
  }
  if (req.atime_ns) attr->atime_ns = *req.atime_ns;
  if (req.mtime_ns) attr->mtime_ns = *req.mtime_ns;
  attr->ctime_ns = at_ns ? std::max(attr->ctime_ns, *at_ns) : NowNs();
  AttrToEntity(*attr, entity);
  return Status::Ok();
}

Result<Attr> Namespace::SetAttr(uint64_t ino, const SetAttrRequest& req) {
  if (auto removed = SetRemovedAttr(ino, req)) return *removed;
  auto e = MergeEntry(ino, [&](Entity* entity) { return ApplySetAttr(req, entity); });
  if (e.status().Is(Code::kNotFound) && RemovedHere(ino)) {
    // Unlinked on this mount during the merge: the descriptors' copy.
    if (auto removed = SetRemovedAttr(ino, req)) return *removed;
  }
  STAMPFS_RETURN_IF_ERROR(e);
  auto attr = AttrFromEntity(*e);
  STAMPFS_RETURN_IF_ERROR(attr);
  if (!attr->IsDir()) return attr;
  auto path = PathOf(ino);  // a directory's times and st_nlink: from its partition
  STAMPFS_RETURN_IF_ERROR(path);
  return WithDirectoryAttrs(*path, *attr);
}

Result<FileState> Namespace::GetFile(uint64_t ino, bool fresh) {
  std::string path;
  auto e = FetchEntryOf(ino, &path, fresh);
  STAMPFS_RETURN_IF_ERROR(e);
  return FileStateOf(*e, path);
}

// The entry may name `blob_etag` only while the blob is at that version: its
// current "betag" must be `prev_etag` (what the commit was based on) or ours,
// or else the blob itself must still be at ours (the entry lagged). Otherwise
// another writer committed after us (based on our version): its merge names
// the newer ETag, and ours must not overwrite it (that left an entry naming
// one version over a blob holding another).
Result<Attr> Namespace::CommitFile(uint64_t ino, uint64_t size, int64_t mtime_ns,
                                   const std::string& blob_etag, const std::string& prev_etag,
                                   uint64_t block_size, const std::string& sent_to) {
  std::optional<Entity> superseded;
  auto apply = [&](Entity* entity) -> Status {
    const std::string* current = entity->GetString("betag");
    const std::string& named = current ? *current : std::string();
    if (named != prev_etag && named != blob_etag) {
      const std::string* blob = entity->GetString("blob");
      auto props = blobs_.GetProperties(options_.container, blob ? *blob : std::string());
      if (!props.ok() && !props.status().Is(Code::kNotFound)) return props.status();
      if (!props.ok() || props->etag != blob_etag) {
        superseded = *entity;
        return Status(Code::kPreconditionFailed, "a newer version was committed");
      }
    }
    auto attr = AttrFromEntity(*entity);
    STAMPFS_RETURN_IF_ERROR(attr);
    attr->size = size;
    attr->mtime_ns = mtime_ns;
    // The data changed when it was written (mtime), not when it reached
    // the container (commit=async commits later): a directory's time, taken
    // from its new entries' ctimes, does not move at the commit.
    attr->ctime_ns = std::max(attr->ctime_ns, std::min(mtime_ns, NowNs()));
    AttrToEntity(*attr, entity);
    entity->properties["betag"] = blob_etag;
    entity->properties.erase(kMovedFromProperty);  // new data, no longer a copy
    if (block_size > 0) entity->properties["bsize"] = static_cast<int64_t>(block_size);
    return Status::Ok();
  };
  // A deferred create's first commit inserts its entry.
  auto pending = ChangePending(ino, apply, true, sent_to);
  auto e = pending ? *pending : MergeEntry(ino, apply);
  if (superseded) return AttrFromEntity(*superseded);
  STAMPFS_RETURN_IF_ERROR(e);
  return AttrFromEntity(*e);
}

Result<std::string> Namespace::GetXattr(uint64_t ino, const std::string& name) {
  auto e = XattrEntity(ino);
  STAMPFS_RETURN_IF_ERROR(e);
  const Binary* b = e->GetBinary("xattr");
  if (!b) return Status(Code::kNoAttribute, name);
  auto map = DecodeXattrs(b->bytes);
  STAMPFS_RETURN_IF_ERROR(map);
  auto it = map->find(name);
  if (it == map->end()) return Status(Code::kNoAttribute, name);
  return it->second;
}

Result<std::vector<std::string>> Namespace::ListXattr(uint64_t ino) {
  auto e = XattrEntity(ino);
  STAMPFS_RETURN_IF_ERROR(e);
  std::vector<std::string> names;
  const Binary* b = e->GetBinary("xattr");
  if (!b) return names;
  auto map = DecodeXattrs(b->bytes);
  STAMPFS_RETURN_IF_ERROR(map);
  for (const auto& kv : *map) names.push_back(kv.first);
  return names;
}

Status Namespace::ChangeXattrs(uint64_t ino, const std::function<Status(XattrMap*)>& change) {
  auto apply = [&](Entity* entity) -> Status {
    XattrMap map;
    if (const Binary* b = entity->GetBinary("xattr")) {
      auto decoded = DecodeXattrs(b->bytes);
      STAMPFS_RETURN_IF_ERROR(decoded);
      map = std::move(*decoded);
    }
    STAMPFS_RETURN_IF_ERROR(change(&map));
    std::string encoded = EncodeXattrs(map);
    if (encoded.size() > kMaxPropertyValueBytes) {
      return Status(Code::kTooLarge, "extended attributes exceed 64 KiB per file");
    }
    entity->properties["ctime"] = NowNs();  // an attribute changed
    if (map.empty()) {
      entity->properties.erase("xattr");
    } else {
      entity->properties["xattr"] = Binary{encoded};
    }
    return Status::Ok();
  };
  // An unlinked open file: in memory until its last close, like fchmod.
  if (auto removed = ChangeRemoved(ino, apply)) return *removed;
  return StatusOf(MergeEntry(ino, apply));
}

Status Namespace::SetXattr(uint64_t ino, const std::string& name, const std::string& value,
                           int flags) {
  // POSIX ACLs would have to change the mode as well; refusing them makes
  // cp -a, tar and rsync fall back to chmod.
  if (name.rfind("system.posix_acl_", 0) == 0) {
    return Status(Code::kNotSupported, "POSIX ACLs are not supported");
  }
  return ChangeXattrs(ino, [&](XattrMap* map) -> Status {
    bool exists = map->count(name) != 0;
    if ((flags & kXattrCreate) && exists) return Status(Code::kAlreadyExists, name);
    if ((flags & kXattrReplace) && !exists) return Status(Code::kNoAttribute, name);
    (*map)[name] = value;
    return Status::Ok();
  });
}

Status Namespace::RemoveXattr(uint64_t ino, const std::string& name) {
  return ChangeXattrs(ino, [&](XattrMap* map) -> Status {
    if (map->erase(name) == 0) return Status(Code::kNoAttribute, name);
    return Status::Ok();
  });
}

}  // namespace stampfs
