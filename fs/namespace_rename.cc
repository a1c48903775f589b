// Rename of files and directories.
//
// A rename inside one directory of an entry without data (a symlink, a file
// never committed) is one transaction. Every other rename (across
// directories, of a directory, of a file with a blob) writes an intent row
// first (fs/rename_intent.h) and then runs FinishRename, whose steps are
// idempotent, so a crash at any point is finished by the next mount or by
// fsck: blobs are copied server-side to their new names, the new entry is
// put, the old entry deleted, the old blobs deleted, the intent deleted.
// A directory's descendants move partition by partition, deepest first
// (MoveChildren): new rows and the new "." row, old blobs, then old rows.
#include <sys/stat.h>
#include <unistd.h>

#include <map>

#include "fs/fault_points.h"
#include "fs/log.h"
#include "fs/names.h"
#include "fs/namespace.h"
#include "fs/table_scan.h"
#include "storage/table_keys.h"

namespace stampfs {

namespace {

bool IsInside(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         (dir == "/" || path[dir.size()] == '/');
}

// The entry property naming the intent that claimed the entry for a rename.
constexpr const char* kRenamingProperty = "renaming";

const std::string& StringOr(const Entity& e, const char* name) {
  static const std::string kEmpty;
  const std::string* s = e.GetString(name);
  return s ? *s : kEmpty;
}

}  // namespace

// Copies a committed file blob to `to_path`'s blob; returns the new blob ETag
// ("" when the file has no committed blob yet).
Result<std::string> Namespace::CopyFileBlob(const Entity& entry, const std::string& to_path,
                                            const Condition& dest) {
  const std::string* etag = entry.GetString("betag");
  const std::string* blob = entry.GetString("blob");
  if (!etag || etag->empty() || !blob) return std::string();
  return blobs_.Copy(options_.container, *blob, BlobNameFor(to_path), dest, *etag);
}

Result<std::vector<std::string>> Namespace::Rename(uint64_t parent, const std::string& name,
                                                   uint64_t new_parent, const std::string& new_name,
                                                   unsigned flags) {
  if (options_.read_only) return Status(Code::kReadOnly, "read-only mount");
  if (flags & kExchange) return Status(Code::kInvalidArgument, "RENAME_EXCHANGE is not supported");
  std::lock_guard<std::mutex> lock(rename_mu_);
  auto from = Locate(parent, name);
  STAMPFS_RETURN_IF_ERROR(from);
  auto to = Locate(new_parent, new_name);
  STAMPFS_RETURN_IF_ERROR(to);
  auto src = FetchEntry(from->parent_path, name, true);
  STAMPFS_RETURN_IF_ERROR(src);
  auto sattr = AttrFromEntity(*src);
  STAMPFS_RETURN_IF_ERROR(sattr);
  if (from->path == to->path) return std::vector<std::string>{};
  if (sattr->IsDir() && IsInside(to->path, from->path)) {
    return Status(Code::kInvalidArgument, "cannot move a directory into itself");
  }
  auto dst = FetchEntry(to->parent_path, new_name, true);
  if (!dst.ok() && !dst.status().Is(Code::kNotFound)) return dst.status();
  std::optional<FileState> replaced;
  if (dst.ok()) {
    if (flags & kNoReplace) return Status(Code::kAlreadyExists, to->path);
    auto dstate = FileStateOf(*dst, to->path);
    STAMPFS_RETURN_IF_ERROR(dstate);
    if (sattr->IsDir() && !dstate->attr.IsDir()) return Status(Code::kNotADirectory, to->path);
    if (!sattr->IsDir() && dstate->attr.IsDir()) return Status(Code::kIsADirectory, to->path);
    if (dstate->attr.IsDir()) {
      auto empty = CheckEmpty(PartitionKeyForDirectory(to->path));
      STAMPFS_RETURN_IF_ERROR(empty);
    }
    replaced = *dstate;
  }

  std::vector<std::string> orphaned;
  const bool has_blob = sattr->IsRegular() && !StringOr(*src, "betag").empty();
  if (from->parent_path == to->parent_path && !sattr->IsDir() && !has_blob) {
    // Nothing but the entry moves: one transaction.
    Entity moved = *src;
    moved.row_key = RowKeyForName(new_name);
    moved.etag.clear();
    SetEntryName(new_name, &moved);
    moved.properties["ctime"] = NowNs();
    if (sattr->IsRegular()) moved.properties["blob"] = BlobNameFor(to->path);
    TableOperation put = replaced ? TableOperation::Replace(moved, Condition::IfMatch(dst->etag))
                                  : TableOperation::Insert(moved);
    TableOperation del =
        TableOperation::Delete(src->partition_key, src->row_key, Condition::IfMatch(src->etag));
    STAMPFS_RETURN_IF_ERROR(CommitInDirectory(from->parent_path, {del, put}, nullptr));
    if (replaced && replaced->attr.IsRegular() && !replaced->blob_etag.empty()) {
      orphaned.push_back(replaced->blob);
    }
  } else {
    STAMPFS_RETURN_IF_ERROR(FinishPendingRenames());
    RenameIntent intent;
    intent.created_ns = NowNs();
    intent.id = NewIntentId(intent.created_ns);
    intent.from = from->path;
    intent.to = to->path;
    intent.ino = sattr->ino;
    intent.is_dir = sattr->IsDir();
    intent.no_replace = (flags & kNoReplace) != 0;
    intent.replaced_ino = replaced ? replaced->attr.ino : 0;
    intent.blob = StringOr(*src, "blob");
    intent.betag = StringOr(*src, "betag");
    intent.host = host_;
    intent.pid = getpid();
    intent.mount = mount_id_;
    table_requests++;
    auto written = table_.Insert(options_.table, IntentToEntity(intent));
    STAMPFS_RETURN_IF_ERROR(written);
    FaultPoint("rename.after_intent");
    bool settled = false;
    Status s = FinishRename(intent, &orphaned, &settled);
    if (!s.ok()) {
      // Decided but unfinished: the next rename, the next mount or fsck finishes it.
      if (!settled) pending_renames_.push_back(intent);
      return s;
    }
  }
  if (replaced) inodes_.Detach(replaced->attr.ino);
  if (sattr->IsDir() && cache_) {
    cache_->DropPartition(PartitionKeyForDirectory(from->path)).PermitUnchecked();
  }
  inodes_.Move(sattr->ino, new_parent, new_name);
  return orphaned;
}

Status Namespace::FinishRename(const RenameIntent& intent, std::vector<std::string>* orphaned,
                               bool* settled) {
  *settled = false;
  const std::string from_parent = ParentPath(intent.from);
  const std::string to_parent = ParentPath(intent.to);
  const std::string to_name = BaseName(intent.to);
  auto drop_intent = [&]() -> Status {
    table_requests++;
    Status s = table_.Delete(options_.table, kIntentsPartition, intent.id, Condition::IfMatch("*"));
    if (s.Is(Code::kNotFound)) s = Status::Ok();
    *settled = s.ok();
    return s;
  };
  auto src = FetchEntry(from_parent, BaseName(intent.from), true);
  if (!src.ok() && !src.status().Is(Code::kNotFound)) return src.status();
  auto dst = FetchEntry(to_parent, to_name, true);
  if (!dst.ok() && !dst.status().Is(Code::kNotFound)) return dst.status();
  const auto ino_of = [](const Entity& e) { return static_cast<uint64_t>(e.GetInt64("ino")); };
  const bool src_here = src.ok() && ino_of(*src) == intent.ino;
  const bool dst_here = dst.ok() && ino_of(*dst) == intent.ino;

  if (src_here && !dst_here && dst.ok() && ino_of(*dst) != intent.replaced_ino) {
    // The target was taken after the rename was decided: nothing has moved
    // yet that the taker did not overwrite; the rename cannot happen.
    auto dattr = AttrFromEntity(*dst);
    Status refused;
    if (intent.no_replace || !dattr.ok()) {
      refused = Status(Code::kAlreadyExists, intent.to);
    } else if (intent.is_dir != dattr->IsDir()) {
      refused = Status(intent.is_dir ? Code::kNotADirectory : Code::kIsADirectory, intent.to);
    } else if (dattr->IsDir()) {
      refused = StatusOf(CheckEmpty(PartitionKeyForDirectory(intent.to)));
    }
    if (!refused.ok()) {
      LogWarning(intent.Describe() + ": dropped: " + refused.ToString());
      STAMPFS_RETURN_IF_ERROR(drop_intent());
      return refused;
    }
  }

  // The target's directory was removed (by another mount) after the rename
  // was decided: undo what moved and drop the intent (ENOENT).
  auto target_dir_gone = [&](const Status& why, const std::string& copied_etag) -> Status {
    LogWarning(intent.Describe() + ": the target directory is gone: undone");
    if (intent.is_dir) {
      STAMPFS_RETURN_IF_ERROR(MoveChildren(intent.to, intent.from, intent.ino));
    } else if (!copied_etag.empty()) {
      blobs_.Delete(options_.container, BlobNameFor(intent.to), Condition::IfMatch(copied_etag))
          .PermitUnchecked();
    }
    STAMPFS_RETURN_IF_ERROR(drop_intent());
    return Status(Code::kNotFound, why.message());
  };
  if (src_here && !dst_here) {
    auto dir_dot = FetchDot(PartitionKeyForDirectory(to_parent));
    if (dir_dot.status().Is(Code::kNotFound)) return target_dir_gone(dir_dot.status(), "");
    STAMPFS_RETURN_IF_ERROR(dir_dot);
  }

  if (src_here && !dst_here) {
    // Claim the source for this intent, so that of two mounts renaming one
    // entry at once only one moves it (the other: ENOENT, nothing moved).
    Status claimed = ClaimForRename(intent, &*src);
    if (!claimed.ok()) {
      if (!claimed.Is(Code::kNotFound)) return claimed;
      LogWarning(intent.Describe() + ": dropped: " + claimed.message());
      STAMPFS_RETURN_IF_ERROR(drop_intent());
      return claimed;
    }
  }

  if (src_here) {
    Entity moved = *src;
    moved.properties.erase(kRenamingProperty);
    moved.partition_key = PartitionKeyForDirectory(to_parent);
    moved.row_key = RowKeyForName(to_name);
    moved.etag.clear();
    SetEntryName(to_name, &moved);
    moved.properties["ctime"] = NowNs();
    const bool is_file = (EntryType(*src) == S_IFREG);
    if (intent.is_dir) {
      STAMPFS_RETURN_IF_ERROR(MoveChildren(intent.from, intent.to, intent.ino));
      FaultPoint("rename.after_copy");
    } else if (is_file && !dst_here) {
      // Rename replaces the target's data as well as its entry: unconditional.
      auto etag = CopyFileBlob(*src, intent.to, Condition::None());
      STAMPFS_RETURN_IF_ERROR(etag);
      moved.properties["blob"] = BlobNameFor(intent.to);
      moved.properties["betag"] = *etag;
      FaultPoint("rename.after_copy");
    }
    TableOperation del =
        TableOperation::Delete(src->partition_key, src->row_key, Condition::IfMatch("*"));
    if (dst_here) {
      STAMPFS_RETURN_IF_ERROR(CommitInDirectory(from_parent, {del}, nullptr));
    } else {
      TableOperation put = dst.ok() ? TableOperation::Replace(moved, Condition::IfMatch(dst->etag))
                                    : TableOperation::Insert(moved);
      if (from_parent == to_parent) {
        STAMPFS_RETURN_IF_ERROR(CommitInDirectory(from_parent, {del, put}, nullptr));
      } else {
        BatchError err;
        auto put_done = CommitInDirectory(to_parent, {put}, &err);
        if (put_done.status().Is(Code::kNotFound) && err.failed_index == 1) {  // the "." merge
          return target_dir_gone(put_done.status(), StringOr(moved, "betag"));
        }
        STAMPFS_RETURN_IF_ERROR(put_done);
        FaultPoint("rename.after_insert");
        STAMPFS_RETURN_IF_ERROR(CommitInDirectory(from_parent, {del}, nullptr));
      }
      // A replaced file whose blob the copy did not overwrite (the source had
      // no data yet) leaves a stale blob: the caller deletes it.
      if (is_file && dst.ok() && StringOr(*src, "betag").empty() &&
          !StringOr(*dst, "betag").empty()) {
        orphaned->push_back(StringOr(*dst, "blob"));
      }
    }
    FaultPoint("rename.after_table");
    if (is_file && !StringOr(*src, "betag").empty()) {
      blobs_
          .Delete(options_.container, StringOr(*src, "blob"),
                  Condition::IfMatch(StringOr(*src, "betag")))
          .PermitUnchecked();
    }
  } else if (dst_here) {
    // The table moved before a crash; only the old blob may be left.
    if (!intent.is_dir && !intent.betag.empty()) {
      blobs_.Delete(options_.container, intent.blob, Condition::IfMatch(intent.betag))
          .PermitUnchecked();
    }
  } else {
    // Removed, or renamed elsewhere by another mount, before this rename moved it.
    LogWarning(intent.Describe() + ": the entry is in neither place: dropped");
    STAMPFS_RETURN_IF_ERROR(drop_intent());
    return Status(Code::kNotFound, intent.from + " was removed or renamed by another mount");
  }
  if (intent.is_dir && cache_) {
    cache_->DropPartition(PartitionKeyForDirectory(intent.from)).PermitUnchecked();
    cache_->DropPartition(PartitionKeyForDirectory(intent.to)).PermitUnchecked();
  }
  return drop_intent();
}

// Marks `src` (the source entry, read fresh) with the intent's id, If-Match
// its ETag. A mark of another intent that still exists means another rename
// of this entry was decided first: kNotFound. A mark whose intent is gone is
// stale (a rename undone or dropped) and is taken over.
Status Namespace::ClaimForRename(const RenameIntent& intent, Entity* src) {
  const std::string* mark = src->GetString(kRenamingProperty);
  if (mark && *mark == intent.id) return Status::Ok();
  if (mark && !mark->empty()) {
    table_requests++;
    auto other = table_.Get(options_.table, kIntentsPartition, *mark);
    if (other.ok())
      return Status(Code::kNotFound, intent.from + " is being renamed by another mount");
    if (!other.status().Is(Code::kNotFound)) return other.status();
  }
  Entity claim = *src;
  claim.etag.clear();
  claim.properties[kRenamingProperty] = intent.id;
  BatchError err;
  auto r = CommitInDirectory(ParentPath(intent.from),
                             {TableOperation::Replace(claim, Condition::IfMatch(src->etag))}, &err);
  if (!r.ok() && err.failed_index == 0 &&
      (r.status().Is(Code::kPreconditionFailed) || r.status().Is(Code::kNotFound))) {
    return Status(Code::kNotFound, intent.from + " was changed or renamed by another mount");
  }
  STAMPFS_RETURN_IF_ERROR(r);
  src->properties[kRenamingProperty] = intent.id;
  src->etag = r->etags[0];
  return Status::Ok();
}

// Moves every entry of directory `from` (recursively) to directory `to`
// (inode `dir_ino`): blobs copied, new rows and the new "." row written, old
// blobs deleted, then old rows (with the old "."). Idempotent: an entry
// already in `to` with the same inode is not copied again, so re-running it
// after an interruption converges. Costs one blob copy per file below.
Status Namespace::MoveChildren(const std::string& from, const std::string& to, uint64_t dir_ino) {
  const std::string from_pk = PartitionKeyForDirectory(from);
  const std::string to_pk = PartitionKeyForDirectory(to);
  table_requests += 2;
  auto rows = table_.QueryPartition(options_.table, from_pk);
  STAMPFS_RETURN_IF_ERROR(rows);
  auto present = table_.QueryPartition(options_.table, to_pk);
  STAMPFS_RETURN_IF_ERROR(present);
  std::map<std::string, int64_t> moved_inos;  // rows already in `to`: RowKey -> ino
  for (const Entity& e : *present) moved_inos[e.row_key] = e.GetInt64("ino");
  Entity new_dot = DotRow(to, dir_ino);
  std::vector<TableOperation> puts, dels;
  std::vector<std::pair<std::string, std::string>> old_blobs;  // name, etag
  for (const Entity& e : *rows) {
    dels.push_back(TableOperation::Delete(from_pk, e.row_key, Condition::IfMatch("*")));
    if (e.row_key == kDotRowKey) {
      for (const auto& [k, v] : e.properties) {
        if (k != "path" && k != "ino") new_dot.properties[k] = v;
      }
      continue;
    }
    auto name = NameOfEntry(e);
    auto attr = AttrFromEntity(e);
    if (!name.ok() || !attr.ok()) continue;
    const std::string child_to = JoinPath(to, *name);
    if (attr->IsDir()) {
      STAMPFS_RETURN_IF_ERROR(MoveChildren(JoinPath(from, *name), child_to, attr->ino));
    }
    const std::string& betag = StringOr(e, "betag");
    if (attr->IsRegular() && !betag.empty()) old_blobs.emplace_back(StringOr(e, "blob"), betag);
    auto done = moved_inos.find(e.row_key);
    if (done != moved_inos.end() && done->second == static_cast<int64_t>(attr->ino)) continue;
    Entity moved = e;
    moved.partition_key = to_pk;
    moved.etag.clear();
    if (attr->IsRegular()) {
      auto etag = CopyFileBlob(e, child_to, Condition::None());
      STAMPFS_RETURN_IF_ERROR(etag);
      moved.properties["blob"] = BlobNameFor(child_to);
      moved.properties["betag"] = *etag;
    }
    puts.push_back(TableOperation::Replace(moved, Condition::None()));
  }
  table_requests += (puts.size() + 99) / 100 + (dels.size() + 99) / 100 + 1;
  STAMPFS_RETURN_IF_ERROR(ExecuteInBatches(table_, options_.table, puts));
  // The new "." row last: its ETag is newer than every entry written above.
  auto dot = table_.Update(options_.table, new_dot, UpdateMode::kReplace, Condition::None());
  STAMPFS_RETURN_IF_ERROR(dot);
  FaultPoint("rename.after_partition");
  // Old blobs before old rows: while an old row exists, a re-run still knows its blob.
  for (const auto& [blob, etag] : old_blobs) {
    blobs_.Delete(options_.container, blob, Condition::IfMatch(etag)).PermitUnchecked();
  }
  STAMPFS_RETURN_IF_ERROR(ExecuteInBatches(table_, options_.table, dels));
  if (cache_) {
    cache_->DropPartition(from_pk).PermitUnchecked();
    cache_->DropPartition(to_pk).PermitUnchecked();
  }
  return Status::Ok();
}

}  // namespace stampfs
