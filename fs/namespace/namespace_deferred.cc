// Namespace: deferred directory attribute changes (commit=async).
//
// chmod, chown and utimens of a committed directory return once the change
// is journaled in the metadata cache (synchronous=FULL); the pipeline lands
// it within commit_delay as one replace of the directory's entry (If-Match;
// read again and applied again on 412), sharing the parent's transaction
// with the other entry changes arriving with it. Changes of one directory
// made before its commit coalesce: rsync's utimens and chmod after a mkdir,
// and its utimens after the directory's files, often cost one operation.
//
// Invariants (deferred_mu_): a change is journaled before it is in
// deferred_; every entry of its inode this mount reads (FetchEntry,
// ReadDir) shows it; it leaves deferred_ and the journal only when the table
// holds it (the generation it sent is still the latest) or no directory has
// its inode any more (rmdir here, or another mount's: dropped with a
// warning). A rename of a directory here commits every deferred change
// first (FileData::BeforeRename); one by another mount is found by the
// inode its "." row names (FindDirectory), and the change follows it. What
// a crash leaves is committed by the next mount (ReplayDeferred).
#include <sstream>

#include "fs/base/log.h"
#include "fs/namespace/hard_links.h"
#include "fs/namespace/names.h"
#include "fs/namespace/namespace.h"
#include "fs/namespace/table_scan.h"
#include "storage/table_keys.h"

namespace stampfs {

namespace {

// The journal's text of a change: "m=<mode> u=<uid> g=<gid> a=<ns> t=<ns>",
// each only when set.
std::string EncodeChange(const SetAttrRequest& r) {
  std::ostringstream out;
  if (r.mode) out << "m=" << *r.mode << ' ';
  if (r.uid) out << "u=" << *r.uid << ' ';
  if (r.gid) out << "g=" << *r.gid << ' ';
  if (r.atime_ns) out << "a=" << *r.atime_ns << ' ';
  if (r.mtime_ns) out << "t=" << *r.mtime_ns << ' ';
  return out.str();
}

Result<SetAttrRequest> DecodeChange(const std::string& text) {
  SetAttrRequest r;
  std::istringstream in(text);
  std::string field;
  while (in >> field) {
    if (field.size() < 3 || field[1] != '=') return Status(Code::kCorruption, "change " + text);
    int64_t v = 0;
    try {
      v = std::stoll(field.substr(2));
    } catch (const std::exception&) {
      return Status(Code::kCorruption, "change " + text);
    }
    switch (field[0]) {
      case 'm':
        r.mode = static_cast<uint32_t>(v);
        break;
      case 'u':
        r.uid = static_cast<uint32_t>(v);
        break;
      case 'g':
        r.gid = static_cast<uint32_t>(v);
        break;
      case 'a':
        r.atime_ns = v;
        break;
      case 't':
        r.mtime_ns = v;
        break;
      default:
        return Status(Code::kCorruption, "change " + text);
    }
  }
  return r;
}

void MergeChange(const SetAttrRequest& later, SetAttrRequest* into) {
  if (later.mode) into->mode = later.mode;
  if (later.uid) into->uid = later.uid;
  if (later.gid) into->gid = later.gid;
  if (later.atime_ns) into->atime_ns = later.atime_ns;
  if (later.mtime_ns) into->mtime_ns = later.mtime_ns;
}

}  // namespace

void Namespace::OverlayDeferred(Entity* entity) {
  std::lock_guard<std::mutex> lock(deferred_mu_);
  if (deferred_.empty() || entity->partition_key == kInodesPartition) return;
  auto it = deferred_.find(static_cast<uint64_t>(entity->GetInt64("ino")));
  if (it == deferred_.end()) return;
  if (entity->row_key == kDotRowKey) return;  // a directory's own "." row has no attributes of it
  ApplySetAttr(it->second.change, entity, it->second.ctime_ns).PermitUnchecked();
}

std::optional<Result<Attr>> Namespace::DeferSetAttr(uint64_t ino, const SetAttrRequest& req) {
  if (!cache_ || options_.read_only || ino == kRootIno || req.size) return std::nullopt;
  std::string path;
  auto e = FetchEntryOf(ino, &path, false);
  // Errors, files and hard-linked records: the change goes to the table now.
  if (!e.ok() || e->partition_key == kInodesPartition) return std::nullopt;
  auto attr = AttrFromEntity(*e);
  if (!attr.ok() || !attr->IsDir()) return std::nullopt;
  Deferred next;
  {
    std::lock_guard<std::mutex> lock(deferred_mu_);
    auto it = deferred_.find(ino);
    if (it != deferred_.end()) {
      next = it->second;
    } else {
      next.parent_path = ParentPath(path);
      next.name = BaseName(path);
    }
    MergeChange(req, &next.change);
    next.ctime_ns = NowNs();
    next.generation = ++deferred_generation_;
    Status journaled = cache_->PutDeferredAttrs(
        {ino, next.parent_path, next.name, EncodeChange(next.change), next.ctime_ns});
    if (!journaled.ok()) {
      LogWarning(path + ": could not journal a directory attribute change (" +
                 journaled.ToString() + "); it goes to the table now");
      return std::nullopt;
    }
    deferred_[ino] = next;
  }
  Entity shown = *e;
  STAMPFS_RETURN_IF_ERROR(ApplySetAttr(next.change, &shown, next.ctime_ns));
  auto changed = AttrFromEntity(shown);
  STAMPFS_RETURN_IF_ERROR(changed);
  return WithDirectoryAttrs(path, *changed);
}

bool Namespace::HasDeferred(uint64_t ino) {
  std::lock_guard<std::mutex> lock(deferred_mu_);
  return deferred_.count(ino) > 0;
}

std::vector<uint64_t> Namespace::DeferredInos() {
  std::lock_guard<std::mutex> lock(deferred_mu_);
  std::vector<uint64_t> out;
  for (const auto& [ino, d] : deferred_) out.push_back(ino);
  return out;
}

void Namespace::DropDeferred(uint64_t ino, uint64_t generation) {
  std::lock_guard<std::mutex> lock(deferred_mu_);
  auto it = deferred_.find(ino);
  if (it == deferred_.end() || (generation != 0 && it->second.generation != generation)) return;
  deferred_.erase(it);
  if (cache_) cache_->EraseDeferredAttrs(ino).PermitUnchecked();
}

// Where directory `ino` is now, from its "." row (which names its inode
// and, under a hashed key, its path): one query of the whole table, for the
// rare change that lost a race with a rename. This mount's unfinished
// renames are finished first; while any other rename is unfinished
// (~intents) a directory found nowhere may be on its way: kConflict, tried
// again later. kNotFound: the directory is gone.
Result<std::string> Namespace::FindDirectory(uint64_t ino) {
  {
    std::lock_guard<std::mutex> renaming(rename_mu_);
    STAMPFS_RETURN_IF_ERROR(FinishPendingRenames());
  }
  QueryOptions q;
  q.filter = "RowKey eq '.' and ino eq " + std::to_string(ino) + "L";
  std::string npk, nrk;
  do {
    table_requests++;
    auto page = table_.QueryPage(options_.table, q, npk, nrk);
    STAMPFS_RETURN_IF_ERROR(page);
    for (const Entity& dot : page->entities) {
      if (const Binary* p = dot.GetBinary("path")) return p->bytes;
      auto path = UnescapeKey(dot.partition_key);
      if (path.ok() && *path != "/") return *path;
    }
    npk = page->next_partition_key;
    nrk = page->next_row_key;
  } while (!npk.empty() || !nrk.empty());
  table_requests++;
  auto intents = table_.QueryPartition(options_.table, kIntentsPartition);
  STAMPFS_RETURN_IF_ERROR(intents);
  if (!intents->empty()) {
    return Status(Code::kConflict, "directory inode " + std::to_string(ino) +
                                       " not found while a rename is unfinished; retried");
  }
  return Status(Code::kNotFound, "directory inode " + std::to_string(ino) + " is gone");
}

// The directory moved (another mount's rename): its change follows it.
void Namespace::RelocateDeferred(uint64_t ino, const std::string& path, Deferred* d) {
  d->parent_path = ParentPath(path);
  d->name = BaseName(path);
  std::lock_guard<std::mutex> lock(deferred_mu_);
  auto it = deferred_.find(ino);
  if (it == deferred_.end()) return;
  it->second.parent_path = d->parent_path;
  it->second.name = d->name;
  if (cache_) {
    const Deferred& now = it->second;
    cache_
        ->PutDeferredAttrs({ino, now.parent_path, now.name, EncodeChange(now.change), now.ctime_ns})
        .PermitUnchecked();
  }
}

// One replace of the entry as stored with the change applied. The name
// gone or naming another inode is read fresh, then the directory is looked
// for by its inode (renamed by another mount: the change follows it);
// kNotFound only when no directory has that inode any more.
Status Namespace::LandDeferred(uint64_t ino, Deferred* d) {
  bool searched = false;
  // The directory is not where the change says (gone, moved, or its parent
  // closed by a rename under way): found by its inode once, then retried.
  auto search = [&]() -> Status {
    if (searched) {
      return Status(Code::kConflict,
                    JoinPath(d->parent_path, d->name) + " is being renamed; retried");
    }
    searched = true;
    auto moved = FindDirectory(ino);
    STAMPFS_RETURN_IF_ERROR(moved);
    if (*moved != JoinPath(d->parent_path, d->name)) {
      LogInfo(JoinPath(d->parent_path, d->name) + " was renamed to " + *moved +
              ": its deferred attribute change goes there");
      RelocateDeferred(ino, *moved, d);
    }
    return Status::Ok();
  };
  for (int attempt = 0; attempt < 6; ++attempt) {
    auto e = FetchStoredEntry(d->parent_path, d->name, attempt > 0, false);
    if (!e.ok() && !e.status().Is(Code::kNotFound)) return e.status();
    if (!e.ok() || static_cast<uint64_t>(e->GetInt64("ino")) != ino) {
      if (attempt == 0) continue;  // a stale cached row: read it fresh
      STAMPFS_RETURN_IF_ERROR(search());
      continue;
    }
    Entity updated = *e;
    STAMPFS_RETURN_IF_ERROR(ApplySetAttr(d->change, &updated, d->ctime_ns));
    updated.etag.clear();
    BatchError err;
    auto r = CommitGrouped(d->parent_path,
                           TableOperation::Replace(updated, Condition::IfMatch(e->etag)), &err);
    if (r.ok()) return Status::Ok();
    // The entry changed or went since it was read: decided on a fresh read.
    if (err.failed_index == 0 &&
        (r.status().Is(Code::kPreconditionFailed) || r.status().Is(Code::kNotFound)))
      continue;
    // The parent's "." row is gone: a rename (or rmdir) of it is under way.
    if (r.status().Is(Code::kNotFound)) {
      STAMPFS_RETURN_IF_ERROR(search());
      continue;
    }
    return r.status();
  }
  return Status(Code::kPreconditionFailed, "entry kept changing under concurrent updates");
}

Status Namespace::CommitDeferred(uint64_t ino) {
  Deferred d;
  {
    std::lock_guard<std::mutex> lock(deferred_mu_);
    auto it = deferred_.find(ino);
    if (it == deferred_.end()) return Status::Ok();
    d = it->second;
  }
  Status s;
  {
    // Deferred changes of one directory's subdirectories, due together,
    // wait for each other and share one transaction.
    GroupTicket ticket(*this, d.parent_path);
    s = LandDeferred(ino, &d);
  }
  if (s.Is(Code::kNotFound)) {
    LogWarning(JoinPath(d.parent_path, d.name) +
               ": removed by another mount before its chmod/chown/utimens reached the "
               "table; those changes went with it");
  } else if (!s.ok()) {
    return s;
  }
  DropDeferred(ino, d.generation);  // a later change stays for the next commit
  return Status::Ok();
}

std::vector<uint64_t> Namespace::ReplayDeferred() {
  if (!cache_ || options_.read_only) return {};
  std::vector<uint64_t> left;
  for (const DeferredAttrsRow& row : cache_->ListDeferredAttrs()) {
    auto change = DecodeChange(row.change);
    if (!change.ok()) {
      LogWarning("journaled attribute change of " + JoinPath(row.parent_path, row.name) +
                 " unreadable (" + change.status().ToString() + "); dropped");
      cache_->EraseDeferredAttrs(row.ino).PermitUnchecked();
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(deferred_mu_);
      deferred_[row.ino] = {row.parent_path, row.name, *change, row.ctime_ns,
                            ++deferred_generation_};
    }
    Status s = CommitDeferred(row.ino);
    if (s.ok()) {
      LogInfo("committed the journaled attribute change of " + JoinPath(row.parent_path, row.name));
    } else {
      LogWarning(JoinPath(row.parent_path, row.name) + ": journaled attribute change not " +
                 "committed yet (" + s.ToString() + "); the pipeline retries it");
      left.push_back(row.ino);
    }
  }
  return left;
}

}  // namespace stampfs
