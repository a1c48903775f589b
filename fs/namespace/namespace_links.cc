// Hard links (fs/namespace/hard_links.h, docs/design.md "Hard links"): the inode
// record, link, unlink of a linked name, and what renames of linked names
// change in the record. Every step leaves each name readable: the record's
// count is raised before a name is inserted and lowered after one is
// deleted, and the blob moves to a surviving name (copy, record, old blob
// deleted) before the name it was named by goes.
#include <sys/stat.h>

#include "fs/base/fault_points.h"
#include "fs/namespace/hard_links.h"
#include "fs/base/log.h"
#include "fs/namespace/names.h"
#include "fs/namespace/namespace.h"
#include "storage/table_keys.h"

namespace stampfs {

namespace {

constexpr int kAttempts = 4;

std::string Str(const Entity& e, const char* name) {
  const std::string* v = e.GetString(name);
  return v ? *v : std::string();
}

// The properties of an entry that belong to the inode, not the name: a
// file's data, a symlink's target, a device's number.
constexpr const char* kInodeOnly[] = {"blob", "betag", "bsize", "xattr", "size", "target", "rdev"};

}  // namespace

void Namespace::NoteLinked(uint64_t ino) {
  std::lock_guard<std::mutex> lock(linked_mu_);
  linked_inos_.insert(ino);
}

bool Namespace::KnownLinked(uint64_t ino) {
  std::lock_guard<std::mutex> lock(linked_mu_);
  return linked_inos_.count(ino) != 0;
}

Result<Entity> Namespace::FetchInode(uint64_t ino, bool fresh) {
  const std::string rk = InodeRowKey(ino);
  if (cache_ && !fresh) {
    auto ce = cache_->GetEntry(kInodesPartition, rk);
    if (ce && NowMs() - ce->fetched_ms < options_.ttl_ms) return ce->entity;
  }
  auto r = GetRow(kInodesPartition, rk);
  if (r.ok()) NoteLinked(ino);
  return r;
}

Result<Entity> Namespace::ResolveLink(const Entity& entry, bool fresh) {
  if (!IsLinkName(entry)) return entry;
  const uint64_t ino = static_cast<uint64_t>(entry.GetInt64("ino"));
  NoteLinked(ino);
  auto r = FetchInode(ino, fresh);
  // A linked name without its record has no data (fsck: missing-inode).
  if (r.status().Is(Code::kNotFound)) {
    return Status(Code::kCorruption, "inode record of " + std::to_string(ino) + " is missing");
  }
  return r;
}

Result<Entity> Namespace::PutInode(const Entity& record, const Condition& cond) {
  Entity stored = record;
  stored.etag.clear();
  table_requests++;
  auto r = table_.Update(options_.table, stored, UpdateMode::kReplace, cond);
  if (cache_) {
    if (r.ok()) {
      stored.etag = *r;
      cache_->PutEntry(stored, NowMs()).PermitUnchecked();
    } else {
      cache_->EraseEntry(kInodesPartition, record.row_key).PermitUnchecked();
    }
  }
  STAMPFS_RETURN_IF_ERROR(r);
  stored.etag = *r;
  return stored;
}

Result<Entity> Namespace::ChangeInode(uint64_t ino, const std::function<Status(Entity*)>& change) {
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    auto rec = FetchInode(ino, true);
    STAMPFS_RETURN_IF_ERROR(rec);
    Entity updated = *rec;
    STAMPFS_RETURN_IF_ERROR(change(&updated));
    auto r = PutInode(updated, Condition::IfMatch(rec->etag));
    if (r.status().Is(Code::kPreconditionFailed)) continue;
    return r;
  }
  return Status(Code::kPreconditionFailed, "inode record kept changing under concurrent updates");
}

// A name of the record's inode other than `except`, from its paths, each
// read back (it must still be a linked name of the inode).
Result<Entity> Namespace::LiveLinkName(const Entity& record, const std::string& except,
                                       std::string* path) {
  const uint64_t ino = static_cast<uint64_t>(record.GetInt64("ino"));
  for (const std::string& p : LinkPaths(record)) {
    if (p == except) continue;
    auto e = FetchEntry(ParentPath(p), BaseName(p), true, false);
    if (e.status().Is(Code::kNotFound)) continue;
    STAMPFS_RETURN_IF_ERROR(e);
    if (!IsLinkName(*e) || static_cast<uint64_t>(e->GetInt64("ino")) != ino) continue;
    *path = p;
    return e;
  }
  return Status(Code::kNotFound, "no known name of inode " + std::to_string(ino));
}

// The name this mount knew for `ino` was unlinked or replaced: another one.
Result<Entity> Namespace::FindLinkName(uint64_t ino, std::string* path) {
  auto rec = FetchInode(ino, true);
  STAMPFS_RETURN_IF_ERROR(rec);
  return LiveLinkName(*rec, "", path);
}

Result<Attr> Namespace::Link(uint64_t ino, uint64_t new_parent, const std::string& new_name) {
  if (options_.read_only) return Status(Code::kReadOnly, "read-only mount");
  auto to = Locate(new_parent, new_name, true);
  STAMPFS_RETURN_IF_ERROR(to);
  if (IsPending(ino)) {
    return Status(Code::kNotPermitted, to->path + ": the file to link is not committed yet");
  }
  std::lock_guard<std::mutex> lock(rename_mu_);  // no rename of this mount moves the name meanwhile
  if (PendingEntry(PartitionKeyForDirectory(to->parent_path), RowKeyForName(new_name))) {
    return Status(Code::kAlreadyExists, to->path);
  }
  const int64_t now = NowNs();
  std::optional<Entity> record;
  std::optional<Entity> name_entry;
  for (int attempt = 0; attempt < kAttempts && !record; ++attempt) {
    std::string path;
    auto name = FetchNameOf(ino, &path, true);
    if (name.status().Is(Code::kNotFound) && KnownLinked(ino)) name = FindLinkName(ino, &path);
    STAMPFS_RETURN_IF_ERROR(name);
    auto attr = AttrFromEntity(*name);
    STAMPFS_RETURN_IF_ERROR(attr);
    if (attr->IsDir()) return Status(Code::kNotPermitted, path + ": hard link to a directory");
    STAMPFS_RETURN_IF_ERROR(CheckNotExchanging(*name, path));
    // Symlinks and special files have no blob: their record holds the
    // target or rdev, and nothing waits for a commit.
    if (attr->IsRegular() && !name->GetString("betag") && !IsLinkName(*name)) {
      return Status(Code::kNotPermitted, path + ": the file to link is not committed yet");
    }
    if (IsLinkName(*name)) {
      // Raised before the new name exists: never fewer than the names.
      auto r = ChangeInode(ino, [&](Entity* rec) -> Status {
        rec->properties["nlink"] = rec->GetInt64("nlink", 1) + 1;
        rec->properties["ctime"] = now;
        AddLinkPath(to->path, rec);
        return Status::Ok();
      });
      STAMPFS_RETURN_IF_ERROR(r);
      record = *r;
      name_entry = *name;
      continue;
    }
    // The first link: the record takes the entry's attributes and data
    // (replacing one an earlier attempt left: this entry is not linked, so
    // no name uses it), then the entry points at it If-Match its ETag (a
    // commit landing meanwhile: read again).
    Entity rec = *name;
    rec.partition_key = kInodesPartition;
    rec.row_key = InodeRowKey(ino);
    rec.etag.clear();
    rec.properties.erase("name");
    rec.properties.erase(kCreatedProperty);
    rec.properties.erase(kRenamingProperty);
    rec.properties["nlink"] = int64_t{2};
    rec.properties["ctime"] = now;
    SetLinkPaths({path, to->path}, &rec);
    auto put = PutInode(rec, Condition::None());
    STAMPFS_RETURN_IF_ERROR(put);
    FaultPoint("link.after_record");
    Entity marked = *name;
    marked.etag.clear();
    for (const char* p : kInodeOnly) marked.properties.erase(p);
    marked.properties[kLinkedProperty] = int64_t{1};
    BatchError err;
    auto r = CommitGrouped(ParentPath(path), TableOperation::Replace(marked, Condition::IfMatch(name->etag)),
                           &err);
    if (!r.ok() && err.failed_index == 0 && r.status().Is(Code::kPreconditionFailed)) continue;
    STAMPFS_RETURN_IF_ERROR(r);
    NoteLinked(ino);
    FaultPoint("link.after_mark");
    record = *put;
    name_entry = marked;
  }
  if (!record) return Status(Code::kPreconditionFailed, "the file kept changing while being linked");
  auto attr = AttrFromEntity(*record);
  STAMPFS_RETURN_IF_ERROR(attr);
  Entity entry = *name_entry;
  entry.partition_key = PartitionKeyForDirectory(to->parent_path);
  entry.row_key = RowKeyForName(new_name);
  entry.etag.clear();
  entry.properties.erase("name");
  entry.properties.erase(kRenamingProperty);
  entry.properties.erase(kCreatedProperty);
  entry.properties["ctime"] = now;
  SetEntryName(new_name, &entry);
  auto inserted = InsertEntry(new_parent, *to, entry);
  if (!inserted.ok()) {
    // The name was not made: the count goes back down (if this fails, it
    // stays one too high: fsck repairs it).
    ChangeInode(ino, [&](Entity* rec) -> Status {
      rec->properties["nlink"] = std::max<int64_t>(1, rec->GetInt64("nlink", 1) - 1);
      RemoveLinkPath(to->path, rec);
      return Status::Ok();
    }).status().PermitUnchecked();
    return inserted.status();
  }
  return attr;
}

// Copies the record's blob to `to_path`'s blob and points the record at the
// copy, then deletes the old blob (If-Match: a newer version another mount
// wrote is left and found by fsck). Nothing to do when it is named so already.
Status Namespace::MoveLinkBlob(Entity* record, const std::string& to_path) {
  const std::string to_blob = BlobNameFor(to_path);
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    const std::string blob = Str(*record, "blob");
    const std::string betag = Str(*record, "betag");
    if (blob == to_blob) return Status::Ok();
    Entity updated = *record;
    updated.properties["blob"] = to_blob;
    // Until the old blob is deleted, the record names it as left behind
    // (import skips it, fsck deletes it).
    if (!betag.empty()) updated.properties[kMovingProperty] = blob;
    std::string copied;
    if (!betag.empty()) {
      auto copy = blobs_.Copy(options_.container, blob, to_blob, Condition::None(), betag);
      if (!copy.ok() && !copy.status().Is(Code::kPreconditionFailed)) return copy.status();
      if (copy.ok()) {
        copied = *copy;
        updated.properties["betag"] = copied;
        // A file open on the old version reads and commits on the copy.
        NoteMovedFrom(betag, &updated);
      }
    }
    if (betag.empty() || !copied.empty()) {
      FaultPoint("link.after_blob_copy");
      auto r = PutInode(updated, Condition::IfMatch(record->etag));
      if (r.ok()) {
        *record = *r;
        if (!copied.empty()) BlobMoved({static_cast<uint64_t>(record->GetInt64("ino")), blob, betag, to_blob, copied});
        if (!betag.empty()) {
          FaultPoint("link.after_blob_record");
          Status d = blobs_.Delete(options_.container, blob, Condition::IfMatch(betag));
          if (d.ok() || d.Is(Code::kNotFound)) {
            Entity settled = *record;
            settled.properties.erase(kMovingProperty);
            auto s = PutInode(settled, Condition::IfMatch(record->etag));
            if (s.ok()) *record = *s;
          }
        }
        LogInfo("inode " + std::to_string(record->GetInt64("ino")) + ": blob moved to " + to_blob);
        return Status::Ok();
      }
      if (!copied.empty()) {
        blobs_.Delete(options_.container, to_blob, Condition::IfMatch(copied)).PermitUnchecked();
      }
      if (!r.status().Is(Code::kPreconditionFailed)) return r.status();
    }
    auto again = FetchInode(static_cast<uint64_t>(record->GetInt64("ino")), true);
    STAMPFS_RETURN_IF_ERROR(again);
    *record = *again;
  }
  return Status(Code::kPreconditionFailed, to_path + ": the blob kept changing while being moved");
}

// Before `leaving` stops naming the inode: when its path names the blob,
// the blob moves to another name found in the record's paths (each read
// back: it must still be this inode's linked name).
Status Namespace::KeepLinkBlob(Entity* record, const std::string& leaving) {
  if (Str(*record, "blob") != BlobNameFor(leaving)) return Status::Ok();
  const uint64_t ino = static_cast<uint64_t>(record->GetInt64("ino"));
  std::string survivor;
  auto e = LiveLinkName(*record, leaving, &survivor);
  if (e.ok()) return MoveLinkBlob(record, survivor);
  if (!e.status().Is(Code::kNotFound)) return e.status();
  // No other name is known (a directory above them was renamed): the blob
  // moves to a name of its own, which no path of the mount can take.
  LogWarning(leaving + ": no other name of inode " + std::to_string(ino) +
             " is known; its blob moves to " + BlobNameFor(LinkBlobPath(ino)));
  return MoveLinkBlob(record, LinkBlobPath(ino));
}

Result<FileState> Namespace::UnlinkLinked(const Located& loc, uint64_t ino) {
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    auto entry = FetchEntry(loc.parent_path, loc.name, true, false);
    STAMPFS_RETURN_IF_ERROR(entry);
    if (!IsLinkName(*entry) || static_cast<uint64_t>(entry->GetInt64("ino")) != ino) {
      return Status(Code::kPreconditionFailed, loc.path + " changed while being unlinked");
    }
    auto rec = FetchInode(ino, true);
    if (!rec.ok() && !rec.status().Is(Code::kNotFound)) return rec.status();
    const int64_t nlink = rec.ok() ? rec->GetInt64("nlink", 1) : 1;
    if (rec.ok() && nlink > 1) STAMPFS_RETURN_IF_ERROR(KeepLinkBlob(&*rec, loc.path));
    // The last name: a commit or setattr that finds it gone meanwhile waits
    // until the removal is recorded (RemovedHere).
    std::optional<RemovalInFlight> removing;
    if (rec.ok() && nlink <= 1) removing.emplace(*this, ino);
    BatchError err;
    auto r = CommitInDirectory(loc.parent_path,
                               {TableOperation::Delete(entry->partition_key, entry->row_key,
                                                       Condition::IfMatch(entry->etag))},
                               &err);
    if (!r.ok() && err.failed_index == 0 && r.status().Is(Code::kPreconditionFailed)) continue;
    STAMPFS_RETURN_IF_ERROR(r);
    FaultPoint("link.after_unlink_name");
    FileState state;
    if (rec.ok()) {
      auto s = FileStateOf(*rec, loc.path);
      STAMPFS_RETURN_IF_ERROR(s);
      state = *s;
    } else {
      auto s = FileStateOf(*entry, loc.path);
      STAMPFS_RETURN_IF_ERROR(s);
      state = *s;
    }
    state.names_left = static_cast<uint32_t>(std::max<int64_t>(0, nlink - 1));
    if (!rec.ok()) return state;
    if (nlink <= 1) return LastLinkGone(*rec, loc.path);
    auto lowered = ChangeInode(ino, [&](Entity* e) -> Status {
      e->properties["nlink"] = std::max<int64_t>(1, e->GetInt64("nlink", 1) - 1);
      e->properties["ctime"] = NowNs();
      RemoveLinkPath(loc.path, e);
      return Status::Ok();
    });
    if (!lowered.ok()) {
      LogWarning(loc.path + ": unlinked, but its link count stays one too high (fsck repairs "
                 "it): " + lowered.status().ToString());
    }
    state.blob.clear();  // other names keep it
    state.blob_etag.clear();
    return state;
  }
  return Status(Code::kPreconditionFailed, loc.path + " kept changing under concurrent updates");
}

// After the last name of `record`'s inode was deleted (REQUIRES: a
// RemovalInFlight of it): the count goes to 0, so no mount uses the record
// any more (FetchEntryOf, Link); descriptors open here keep its attributes
// (Removed). The caller deletes the blob, then the record (DropInodeRecord).
Result<FileState> Namespace::LastLinkGone(const Entity& record, const std::string& path) {
  const uint64_t ino = static_cast<uint64_t>(record.GetInt64("ino"));
  auto lowered = ChangeInode(ino, [&](Entity* e) -> Status {
    e->properties["nlink"] = std::max<int64_t>(0, e->GetInt64("nlink", 1) - 1);
    e->properties["ctime"] = NowNs();
    RemoveLinkPath(path, e);
    return Status::Ok();
  });
  FaultPoint("link.after_last_count");
  if (lowered.ok() && lowered->GetInt64("nlink") > 0) {
    // Another mount linked a name meanwhile: the file is its, with the blob.
    Status kept = KeepLinkBlob(&*lowered, path);
    if (!kept.ok()) LogWarning(path + ": unlinked, its blob not moved: " + kept.ToString());
    auto state = FileStateOf(*lowered, path);
    STAMPFS_RETURN_IF_ERROR(state);
    state->names_left = static_cast<uint32_t>(lowered->GetInt64("nlink"));
    state->blob.clear();
    state->blob_etag.clear();
    return state;
  }
  if (!lowered.ok() && !lowered.status().Is(Code::kNotFound)) {
    // Left at a count of 1 with no name: fsck removes it (orphan-inode).
    LogWarning(path + ": the last name is unlinked, but the link count of inode " +
               std::to_string(ino) + " was not lowered: " + lowered.status().ToString());
  }
  const Entity& last = lowered.ok() ? *lowered : record;
  Removed(ino, &last);
  auto state = FileStateOf(last, path);
  STAMPFS_RETURN_IF_ERROR(state);
  state->names_left = 0;
  if (state->blob_etag.empty()) {
    DropInodeRecord(ino);  // no blob: a symlink's or device's record
  } else {
    state->inode_record = true;
  }
  return state;
}

void Namespace::DropInodeRecord(uint64_t ino) {
  const std::string rk = InodeRowKey(ino);
  table_requests++;
  // If-Match *: a record with no name is written by no mount.
  Status s = table_.Delete(options_.table, kInodesPartition, rk, Condition::IfMatch("*"));
  if (!s.ok() && !s.Is(Code::kNotFound)) {
    LogWarning("inode record " + rk + " of a file with no name is left (fsck removes it): " +
               s.ToString());
  }
  if (cache_) cache_->EraseEntry(kInodesPartition, rk).PermitUnchecked();
}

Status Namespace::LinkNameMoved(uint64_t ino, const std::string& from, const std::string& to) {
  auto rec = FetchInode(ino, true);
  STAMPFS_RETURN_IF_ERROR(rec);
  if (Str(*rec, "blob") == BlobNameFor(from)) STAMPFS_RETURN_IF_ERROR(MoveLinkBlob(&*rec, to));
  return ChangeInode(ino, [&](Entity* e) -> Status {
           RemoveLinkPath(from, e);
           AddLinkPath(to, e);
           return Status::Ok();
         })
      .status();
}

// Nothing to do (no request) for rows without a linked name. Idempotent,
// and run while the old rows still exist, so a re-run of the rename after a
// crash finishes it.
Status Namespace::LinkNamesMoved(const std::string& from, const std::string& to,
                                 const std::vector<Entity>& rows) {
  for (const Entity& e : rows) {
    if (!IsLinkName(e)) continue;
    auto name = NameOfEntry(e);
    if (!name.ok()) continue;
    Status s = LinkNameMoved(static_cast<uint64_t>(e.GetInt64("ino")), JoinPath(from, *name),
                             JoinPath(to, *name));
    // A record or blob gone is fsck's (missing-inode, missing-blob).
    if (!s.ok() && !s.Is(Code::kNotFound)) return s;
  }
  return Status::Ok();
}

Status Namespace::LinkNameReplaced(uint64_t ino, const std::string& path) {
  auto r = ChangeInode(ino, [&](Entity* e) -> Status {
    e->properties["nlink"] = e->GetInt64("nlink", 1) - 1;
    e->properties["ctime"] = NowNs();
    RemoveLinkPath(path, e);
    return Status::Ok();
  });
  STAMPFS_RETURN_IF_ERROR(r);
  if (r->GetInt64("nlink") > 0) return Status::Ok();
  // No name left: descriptors open here keep the file (its data made local
  // before the rename), and its blob goes, then the record (If-Match: a blob
  // the rename copied over it is the new file's and stays).
  Removed(ino, &*r);
  const std::string betag = Str(*r, "betag");
  if (!betag.empty()) {
    blobs_.Delete(options_.container, Str(*r, "blob"), Condition::IfMatch(betag))
        .PermitUnchecked();
  }
  DropInodeRecord(ino);
  return Status::Ok();
}

}  // namespace stampfs
