// Rename of files and directories.
//
// Order: blobs are copied server-side to their new names first, then the
// table changes (one transaction when both names share a directory; insert
// in the new directory, then delete in the old one otherwise), then the old
// blobs are deleted. A directory's entries move partition by partition,
// deepest first, new rows written before old ones are deleted, so an
// interruption leaves the tree duplicated, never lost.
#include "fs/names.h"
#include "fs/namespace.h"
#include "storage/table_keys.h"

namespace stampfs {

namespace {

bool IsInside(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         (dir == "/" || path[dir.size()] == '/');
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
                                                   uint64_t new_parent,
                                                   const std::string& new_name, unsigned flags) {
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

  // Data first: the new names' blobs (or the whole subtree of a directory).
  Entity moved = *src;
  moved.partition_key = PartitionKeyForDirectory(to->parent_path);
  moved.row_key = RowKeyForName(new_name);
  moved.etag.clear();
  SetEntryName(new_name, &moved);
  moved.properties["ctime"] = NowNs();
  if (sattr->IsRegular()) {
    // The target's blob is overwritten only if it is the one the target entry names.
    Condition dest = replaced && !replaced->blob_etag.empty()
                         ? Condition::IfMatch(replaced->blob_etag)
                         : Condition::None();
    auto etag = CopyFileBlob(*src, to->path, dest);
    STAMPFS_RETURN_IF_ERROR(etag);
    moved.properties["blob"] = BlobNameFor(to->path);
    moved.properties["betag"] = *etag;
  } else if (sattr->IsDir()) {
    STAMPFS_RETURN_IF_ERROR(MoveChildren(from->path, to->path));
  }

  // Then the table.
  TableOperation put = replaced ? TableOperation::Replace(moved, Condition::IfMatch(dst->etag))
                                : TableOperation::Insert(moved);
  TableOperation del =
      TableOperation::Delete(src->partition_key, src->row_key, Condition::IfMatch(src->etag));
  if (from->parent_path == to->parent_path) {
    STAMPFS_RETURN_IF_ERROR(CommitInDirectory(from->parent_path, {del, put}, nullptr));
  } else {
    STAMPFS_RETURN_IF_ERROR(CommitInDirectory(to->parent_path, {put}, nullptr));
    del.condition = Condition::IfMatch("*");
    STAMPFS_RETURN_IF_ERROR(CommitInDirectory(from->parent_path, {del}, nullptr));
  }

  // Finally the old data.
  std::vector<std::string> orphaned;
  if (sattr->IsRegular()) {
    const std::string* old_blob = src->GetString("blob");
    const std::string* old_etag = src->GetString("betag");
    if (old_blob && old_etag && !old_etag->empty()) {
      blobs_.Delete(options_.container, *old_blob, Condition::IfMatch(*old_etag))
          .PermitUnchecked();
    }
    // A replaced file whose blob the copy did not overwrite (the source had
    // no data yet) leaves a stale blob behind: the caller deletes it.
    if (replaced && !replaced->blob_etag.empty() && moved.GetString("betag")->empty()) {
      orphaned.push_back(replaced->blob);
    }
  }
  // A replaced (empty) directory's "." row was overwritten by MoveChildren.
  if (replaced) inodes_.Detach(replaced->attr.ino);
  if (sattr->IsDir() && cache_) {
    cache_->DropPartition(PartitionKeyForDirectory(from->path)).PermitUnchecked();
  }
  inodes_.Move(sattr->ino, new_parent, new_name);
  return orphaned;
}

// Moves every entry of directory `from` (recursively) to directory `to`:
// blobs copied, new rows and the new "." row written, then old rows, old "."
// and old blobs deleted. Re-running it after an interruption converges.
Status Namespace::MoveChildren(const std::string& from, const std::string& to) {
  const std::string from_pk = PartitionKeyForDirectory(from);
  const std::string to_pk = PartitionKeyForDirectory(to);
  QueryOptions q;
  q.filter = FilterPartition(from_pk);
  table_requests++;
  auto rows = table_.Query(options_.table, q);
  STAMPFS_RETURN_IF_ERROR(rows);
  uint64_t dir_ino = 0;
  std::vector<TableOperation> puts, dels;
  std::vector<std::pair<std::string, std::string>> old_blobs;  // name, etag
  for (const Entity& e : *rows) {
    dels.push_back(TableOperation::Delete(from_pk, e.row_key, Condition::IfMatch("*")));
    if (e.row_key == kDotRowKey) {
      dir_ino = static_cast<uint64_t>(e.GetInt64("ino"));
      continue;
    }
    auto name = NameOfEntry(e);
    auto attr = AttrFromEntity(e);
    if (!name.ok() || !attr.ok()) continue;
    Entity moved = e;
    moved.partition_key = to_pk;
    moved.etag.clear();
    const std::string child_to = JoinPath(to, *name);
    if (attr->IsRegular()) {
      auto etag = CopyFileBlob(e, child_to, Condition::None());
      STAMPFS_RETURN_IF_ERROR(etag);
      if (!etag->empty()) old_blobs.emplace_back(*e.GetString("blob"), *e.GetString("betag"));
      moved.properties["blob"] = BlobNameFor(child_to);
      moved.properties["betag"] = *etag;
    } else if (attr->IsDir()) {
      STAMPFS_RETURN_IF_ERROR(MoveChildren(JoinPath(from, *name), child_to));
    }
    puts.push_back(TableOperation::Replace(moved, Condition::None()));
  }
  table_requests += (puts.size() + 99) / 100 + (dels.size() + 99) / 100 + 1;
  STAMPFS_RETURN_IF_ERROR(ExecuteInBatches(table_, options_.table, puts));
  // The new "." row last: its ETag is newer than every entry written above.
  auto dot = table_.Update(options_.table, DotRow(to, dir_ino), UpdateMode::kReplace,
                           Condition::None());
  STAMPFS_RETURN_IF_ERROR(dot);
  STAMPFS_RETURN_IF_ERROR(ExecuteInBatches(table_, options_.table, dels));
  for (const auto& [blob, etag] : old_blobs) {
    blobs_.Delete(options_.container, blob, Condition::IfMatch(etag)).PermitUnchecked();
  }
  if (cache_) {
    cache_->DropPartition(from_pk).PermitUnchecked();
    cache_->DropPartition(to_pk).PermitUnchecked();
  }
  return Status::Ok();
}

}  // namespace stampfs
