// Rename of files and directories.
//
// A rename inside one directory of an entry without data (a symlink, a file
// never committed) is one transaction. Every other rename (across
// directories, of a directory, of a file with a blob) writes an intent row
// first (fs/namespace/rename_intent.h) and then runs FinishRename, whose steps are
// idempotent, so a crash at any point is finished by the next mount or by
// fsck: blobs are copied server-side to their new names, the new entry is
// put, the old entry deleted, the old blobs deleted, the intent deleted.
// A directory's descendants move partition by partition (MoveChildren): the
// blobs of each directory's files are copied, then the directory is closed
// (new "." row written, old "." deleted If-Match the ETag of the listing the
// copies came from, so no other mount can add or change an entry behind the
// move), then its subdirectories, new rows, old blobs, old rows.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

#include "fs/namespace/dir_marker.h"
#include "fs/base/fault_points.h"
#include "fs/namespace/hard_links.h"
#include "fs/namespace/blob_entry.h"
#include "fs/base/log.h"
#include "fs/namespace/names.h"
#include "fs/namespace/namespace.h"
#include "fs/namespace/table_scan.h"
#include "storage/table_keys.h"

namespace stampfs {

namespace {

bool IsInside(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         (dir == "/" || path[dir.size()] == '/');
}

const std::string& StringOr(const Entity& e, const char* name) {
  static const std::string kEmpty;
  const std::string* s = e.GetString(name);
  return s ? *s : kEmpty;
}

// Closes directory `from` for a move to `to` (Namespace::MoveChildren):
// returns its entries (without ".") once its "." row is gone, after writing
// `to`'s "." row with the old one's properties (so a crash in between loses
// nothing). `before_close` runs on every listing before the close is tried
// (the one returned included). A `from` closed by an earlier run is only
// listed (and `to`'s "." written if missing: it was written before the close).
Result<std::vector<Entity>> CloseForMove(
    TableStore& table, const std::string& table_name, const std::string& from,
    const std::string& to, uint64_t dir_ino,
    const std::function<Status(const std::vector<Entity>&)>& before_close,
    std::atomic<uint64_t>* requests) {
  const std::string from_pk = PartitionKeyForDirectory(from);
  for (int attempt = 0; attempt < 100; ++attempt) {
    (*requests)++;
    auto rows = table.QueryPartition(table_name, from_pk);
    STAMPFS_RETURN_IF_ERROR(rows);
    auto dot = std::find_if(rows->begin(), rows->end(),
                            [](const Entity& e) { return e.row_key == kDotRowKey; });
    std::optional<Entity> old_dot;
    if (dot != rows->end()) {
      old_dot = *dot;
      rows->erase(dot);
    }
    STAMPFS_RETURN_IF_ERROR(before_close(*rows));
    Entity new_dot = DirectoryRow(to, dir_ino);
    if (!old_dot) {
      (*requests)++;
      auto made = table.Insert(table_name, new_dot);
      if (!made.ok() && !made.status().Is(Code::kAlreadyExists)) return made.status();
      return rows;
    }
    for (const auto& [k, v] : old_dot->properties) {
      if (k != "path" && k != "ino") new_dot.properties[k] = v;
    }
    (*requests) += 2;
    auto written = table.Update(table_name, new_dot, UpdateMode::kReplace, Condition::None());
    STAMPFS_RETURN_IF_ERROR(written);
    Status closed =
        table.Delete(table_name, from_pk, kDotRowKey, Condition::IfMatch(old_dot->etag));
    if (closed.ok()) {
      FaultPoint("rename.after_close");
      return rows;
    }
    // Another mount changed the directory since the query (412) or removed
    // its "." (404): list it again.
    if (!closed.Is(Code::kPreconditionFailed) && !closed.Is(Code::kNotFound)) return closed;
  }
  return Status(Code::kPreconditionFailed, from + " kept changing while being renamed");
}

// Copies version `etag` of blob `blob` to `to_blob` (server-side, pinned to
// that version; the destination is overwritten, as a rename replaces the
// target's data). The blob may hold another version than the entry names:
// another mount's commit whose entry merge has not landed (yet), or another
// tool's overwrite (a 412 on the source: SourceConditionNotMet). Then the
// version stored now, read from the blob, is copied instead (pinned to it)
// and returned in `newer`, for the moved entry to adopt. kNotFound: the blob
// is gone.
struct PinnedCopy {
  std::string copied;                   // the version of `blob` that was copied
  std::string etag;                     // the copy's ETag
  std::optional<BlobProperties> newer;  // `copied` when not the version asked for
};

Result<PinnedCopy> CopyVersionOrNewer(BlobStore& blobs, const std::string& container,
                                      const std::string& blob, std::string etag,
                                      const std::string& to_blob) {
  std::optional<BlobProperties> newer;
  for (int attempt = 0; attempt < 4; ++attempt) {
    auto copy = blobs.Copy(container, blob, to_blob, Condition::None(), etag);
    if (copy.ok()) return PinnedCopy{etag, *copy, newer};
    if (!copy.status().Is(Code::kPreconditionFailed)) return copy.status();
    auto props = blobs.GetProperties(container, blob);
    STAMPFS_RETURN_IF_ERROR(props);
    newer = *props;
    etag = props->etag;
  }
  return Status(Code::kPreconditionFailed, blob + ": the blob kept changing while being moved");
}

// Records on `moved` (the entry at the new name, blob `to_blob`) the version
// a PinnedCopy copied: the copy's ETag, and when it was a newer version than
// the entry named, that version's size, mtime and block size (from its
// properties, as the next access would adopt it).
void AdoptCopy(const PinnedCopy& copy, const std::string& to_blob, const std::string& to_path,
               Entity* moved) {
  moved->properties["blob"] = to_blob;
  if (!copy.newer) {
    moved->properties["betag"] = copy.etag;
  } else {
    BlobItem item{to_blob, *copy.newer};
    item.properties.etag = copy.etag;
    SetBlobProperties(item, moved);
    moved->properties["size"] = static_cast<int64_t>(copy.newer->size);
    moved->properties["mtime"] = BlobMtimeNs(item);
    moved->properties["ctime"] = NowNs();
    LogInfo(to_path + ": moved with the blob version written since its entry was (by another " +
            "mount or tool)");
  }
  NoteMovedFrom(copy.copied, moved);
}

// The newest blob version `e`'s blob is a rename's copy of ("": none).
std::string LastMovedFrom(const Entity& e) {
  const std::string* m = e.GetString(kMovedFromProperty);
  if (!m) return "";
  return m->substr(0, m->find(' '));
}

// Copies the blob of file row `row` to `to_path`'s blob and records it in
// `moved` (the row's copy); `*copied` gets the version of the old blob that
// was copied (to delete it after). The copy is pinned to the row's blob ETag;
// a newer version is copied and adopted (CopyVersionOrNewer). When the old
// blob is gone, a copy an earlier run made is adopted; if there is none, the
// entry moves as it is (fsck: missing-blob, as before).
Status MoveFileBlob(BlobStore& blobs, const std::string& container, const Entity& row,
                    const std::string& to_path, Entity* moved, std::string* copied) {
  const std::string& blob = StringOr(row, "blob");
  const std::string& etag = StringOr(row, "betag");
  copied->clear();
  if (IsLinkName(row)) return Status::Ok();  // its blob is its inode record's
  const std::string to_blob = BlobNameFor(to_path);
  moved->properties["blob"] = to_blob;
  if (etag.empty() || blob.empty()) return Status::Ok();
  auto copy = CopyVersionOrNewer(blobs, container, blob, etag, to_blob);
  if (copy.ok()) {
    *copied = copy->copied;
    AdoptCopy(*copy, to_blob, to_path, moved);
    return Status::Ok();
  }
  if (!copy.status().Is(Code::kNotFound)) return copy.status();
  auto there = blobs.GetProperties(container, to_blob);
  if (there.ok()) {
    BlobItem item{to_blob, *there};
    SetBlobProperties(item, moved);
    moved->properties["size"] = static_cast<int64_t>(there->size);
    moved->properties["mtime"] = BlobMtimeNs(item);
    moved->properties["ctime"] = NowNs();
    LogInfo(to_path + ": moved with the copy of its blob an earlier run made");
  } else if (there.status().Is(Code::kNotFound)) {
    LogWarning(to_path + ": blob " + blob + " is gone; the entry moves without it");
  } else {
    return there.status();
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> Namespace::Rename(uint64_t parent, const std::string& name,
                                                   uint64_t new_parent, const std::string& new_name,
                                                   unsigned flags, uint64_t* moved) {
  if (options_.read_only) return Status(Code::kReadOnly, "read-only mount");
  STAMPFS_RETURN_IF_ERROR(CheckCanDelete("rename"));
  std::lock_guard<std::mutex> lock(rename_mu_);
  std::unique_lock<std::shared_mutex> no_blob_attrs(blob_attrs_mu_);
  if (flags & kExchange) {
    // An exchange moves table rows: files created here and not yet committed
    // get theirs first (no deferred create starts while rename_mu_ is held).
    STAMPFS_RETURN_IF_ERROR(MaterializePending());
    return Exchange(parent, name, new_parent, new_name);
  }
  auto from = Locate(parent, name);
  STAMPFS_RETURN_IF_ERROR(from);
  auto to = Locate(new_parent, new_name, true);
  STAMPFS_RETURN_IF_ERROR(to);
  if (from->path != to->path) {
    if (auto fast = RenamePending(*from, new_parent, *to, moved)) {
      STAMPFS_RETURN_IF_ERROR(*fast);
      return std::vector<std::string>{};
    }
  }
  // A rename moves table rows: files created here and not yet committed get
  // theirs first (no deferred create starts while rename_mu_ is held).
  STAMPFS_RETURN_IF_ERROR(MaterializePending());
  auto src = FetchEntry(from->parent_path, name, true);
  STAMPFS_RETURN_IF_ERROR(src);
  auto sattr = AttrFromEntity(*src);
  STAMPFS_RETURN_IF_ERROR(sattr);
  if (from->path == to->path) return std::vector<std::string>{};
  if (sattr->IsDir() && IsInside(to->path, from->path)) {
    return Status(Code::kInvalidArgument, "cannot move a directory into itself");
  }
  // A pending entry left after MaterializePending lost its name to another
  // mount's entry (its commit makes a conflict copy): the table's decides.
  auto dst = FetchEntry(to->parent_path, new_name, true, false);
  if (!dst.ok() && !dst.status().Is(Code::kNotFound)) return dst.status();
  std::optional<FileState> replaced;
  std::optional<RemovalInFlight> removing;  // of a file the rename leaves with no name
  bool replaced_linked = false;  // the target is a hard link: its record loses a name
  if (dst.ok()) {
    if (flags & kNoReplace) return Status(Code::kAlreadyExists, to->path);
    STAMPFS_RETURN_IF_ERROR(CheckNotExchanging(*dst, to->path));
    // Two names of one file: nothing to do (POSIX).
    if (dst->GetInt64("ino") == src->GetInt64("ino")) return std::vector<std::string>{};
    auto dstate = FileStateOf(*dst, to->path);
    STAMPFS_RETURN_IF_ERROR(dstate);
    if (sattr->IsDir() && !dstate->attr.IsDir()) return Status(Code::kNotADirectory, to->path);
    if (!sattr->IsDir() && dstate->attr.IsDir()) return Status(Code::kIsADirectory, to->path);
    if (dstate->attr.IsDir()) {
      auto empty = CheckEmpty(PartitionKeyForDirectory(to->path));
      STAMPFS_RETURN_IF_ERROR(empty);
    }
    replaced = *dstate;
    if (IsLinkName(*dst)) {
      // Its blob may be named by the target path, which the source's copy
      // overwrites: it moves to another name of the file first.
      replaced_linked = true;
      auto rec = FetchInode(dstate->attr.ino, true);
      if (!rec.ok() && !rec.status().Is(Code::kNotFound)) return rec.status();
      if (rec.ok() && rec->GetInt64("nlink", 1) > 1) {
        STAMPFS_RETURN_IF_ERROR(KeepLinkBlob(&*rec, to->path));
      }
      if (rec.ok() && rec->GetInt64("nlink", 1) <= 1) removing.emplace(*this, dstate->attr.ino);
    }
  }

  std::vector<std::string> orphaned;
  if (replaced && !replaced_linked && replaced->attr.IsRegular()) {
    removing.emplace(*this, replaced->attr.ino);
  }
  const bool has_blob = sattr->IsRegular() && !StringOr(*src, "betag").empty();
  if (from->parent_path == to->parent_path && !sattr->IsDir() && !has_blob) {
    // Nothing but the entry moves: one transaction.
    Entity moved = *src;
    moved.row_key = RowKeyForName(new_name);
    moved.etag.clear();
    SetEntryName(new_name, &moved);
    moved.properties["ctime"] = NowNs();
    if (sattr->IsRegular() && !IsLinkName(*src)) moved.properties["blob"] = BlobNameFor(to->path);
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
    intent.from = from->path;
    intent.to = to->path;
    intent.ino = sattr->ino;
    intent.is_dir = sattr->IsDir();
    intent.no_replace = (flags & kNoReplace) != 0;
    intent.replaced_ino = replaced ? replaced->attr.ino : 0;
    intent.blob = StringOr(*src, "blob");
    intent.betag = StringOr(*src, "betag");
    STAMPFS_RETURN_IF_ERROR(WriteIntent(&intent));
    FaultPoint("rename.after_intent");
    bool settled = false;
    Status s = FinishRename(intent, &orphaned, &settled);
    if (!s.ok()) {
      // Decided but unfinished: the next rename, the next mount or fsck finishes it.
      if (!settled) LeaveUnfinished(intent);
      return s;
    }
  }
  if (replaced_linked) {
    Status s = LinkNameReplaced(replaced->attr.ino, to->path);
    if (!s.ok()) LogWarning(to->path + ": replaced, but its link count stays one too high: " + s.ToString());
  } else if (replaced) {
    Removed(replaced->attr.ino, replaced->attr.IsDir() ? nullptr : &*dst);
  }
  if (IsLinkName(*src)) {
    Status s = LinkNameMoved(sattr->ino, from->path, to->path);
    if (!s.ok()) LogWarning(to->path + ": renamed, but its blob or link paths were not updated: " + s.ToString());
  }
  if (sattr->IsDir() && cache_) {
    cache_->DropPartition(PartitionKeyForDirectory(from->path)).PermitUnchecked();
  }
  inodes_.Move(sattr->ino, new_parent, new_name);
  if (moved) *moved = sattr->ino;
  return orphaned;
}

Status Namespace::FinishRename(const RenameIntent& intent, std::vector<std::string>* orphaned,
                               bool* settled) {
  if (intent.Across()) return FinishExchangeAcross(intent, settled);
  if (intent.exchange) return FinishExchange(intent, settled);
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

  if (src_here && !dst_here && dst.ok()) {
    // A target another mount is exchanging (EBUSY), or one taken after the
    // rename was decided: nothing has moved yet that the taker did not
    // overwrite; the rename cannot happen.
    Status refused = CheckNotExchanging(*dst, intent.to);
    if (!refused.ok() && !refused.Is(Code::kConflict)) return refused;
    if (refused.ok() && ino_of(*dst) != intent.replaced_ino) {
      auto dattr = AttrFromEntity(*dst);
      if (intent.no_replace || !dattr.ok()) {
        refused = Status(Code::kAlreadyExists, intent.to);
      } else if (intent.is_dir != dattr->IsDir()) {
        refused = Status(intent.is_dir ? Code::kNotADirectory : Code::kIsADirectory, intent.to);
      } else if (dattr->IsDir()) {
        refused = StatusOf(CheckEmpty(PartitionKeyForDirectory(intent.to)));
      }
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
    const bool is_file = (EntryType(*src) == S_IFREG) && !IsLinkName(*src);
    const std::string& src_blob = StringOr(*src, "blob");
    // The version of the old blob the new name holds a copy of: deleted once
    // the table moved. The entry's, unless the copy found a newer one, or an
    // earlier run copied (the new entry records which: `movedfrom`).
    std::string old_version = StringOr(*src, "betag");
    if (dst_here && !LastMovedFrom(*dst).empty()) old_version = LastMovedFrom(*dst);
    if (intent.is_dir) {
      STAMPFS_RETURN_IF_ERROR(MoveChildren(intent.from, intent.to, intent.ino));
      FaultPoint("rename.after_copy");
    } else if (is_file && !dst_here) {
      // Rename replaces the target's data as well as its entry: unconditional.
      // Pinned to the version the entry names; when the blob holds a newer
      // one (another tool overwrote it, or another mount's commit whose entry
      // merge has not landed), that one moves and the new entry adopts it.
      const std::string to_blob = BlobNameFor(intent.to);
      moved.properties["blob"] = to_blob;
      if (!old_version.empty() && !src_blob.empty()) {
        auto copy = CopyVersionOrNewer(blobs_, options_.container, src_blob, old_version, to_blob);
        STAMPFS_RETURN_IF_ERROR(copy);
        AdoptCopy(*copy, to_blob, intent.to, &moved);
        old_version = copy->copied;
        BlobMoved({intent.ino, src_blob, copy->copied, to_blob, copy->etag});
      } else {
        moved.properties["betag"] = std::string();
      }
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
        auto put_done = CommitInDirectory(to_parent, {put}, &err, true);
        if (put_done.status().Is(Code::kNotFound) && err.failed_index == 1) {  // the "." merge
          return target_dir_gone(put_done.status(), StringOr(moved, "betag"));
        }
        STAMPFS_RETURN_IF_ERROR(put_done);
        FaultPoint("rename.after_insert");
        STAMPFS_RETURN_IF_ERROR(CommitInDirectory(from_parent, {del}, nullptr));
      }
      // A replaced file whose blob the copy did not overwrite (the source had
      // no data yet, or is a symlink) leaves a stale blob: the caller deletes it.
      const bool copied_over = is_file && !StringOr(*src, "betag").empty();
      if (dst.ok() && EntryType(*dst) == S_IFREG && !copied_over &&
          !StringOr(*dst, "betag").empty()) {
        orphaned->push_back(StringOr(*dst, "blob"));
      }
    }
    FaultPoint("rename.after_table");
    if (is_file && !StringOr(*src, "betag").empty() && !old_version.empty()) {
      blobs_.Delete(options_.container, src_blob, Condition::IfMatch(old_version))
          .PermitUnchecked();
    }
  } else if (dst_here) {
    // The table moved before a crash; only the old blob may be left: the
    // version the intent names, or the newer one the copy took (recorded in
    // the new entry), unless an entry at the old name names it now.
    if (!intent.is_dir && !intent.betag.empty()) {
      std::vector<std::string> versions{intent.betag};
      const std::string copied = LastMovedFrom(*dst);
      if (!copied.empty() && copied != intent.betag) versions.push_back(copied);
      for (const std::string& version : versions) {
        if (src.ok() && StringOr(*src, "betag") == version) continue;
        blobs_.Delete(options_.container, intent.blob, Condition::IfMatch(version))
            .PermitUnchecked();
      }
    }
  } else {
    // Removed, or renamed elsewhere by another mount, before or after this
    // rename moved it. The source's blob version stays only while an entry at
    // the old name names it (no entry names it: a rename's leftover, a
    // removal's or a move's that already copied it).
    if (!intent.is_dir && !intent.betag.empty() &&
        !(src.ok() && StringOr(*src, "betag") == intent.betag)) {
      blobs_.Delete(options_.container, intent.blob, Condition::IfMatch(intent.betag))
          .PermitUnchecked();
    }
    LogWarning(intent.Describe() + ": the entry is in neither place: dropped");
    STAMPFS_RETURN_IF_ERROR(drop_intent());
    return Status(Code::kNotFound, intent.from + " was removed or renamed by another mount");
  }
  // Before the intent goes, so a crash is finished by the roll-forward.
  if (intent.is_dir && options_.dir_markers) {
    STAMPFS_RETURN_IF_ERROR(MoveDirMarker(blobs_, options_.container, intent.from, intent.to));
  }
  if (intent.is_dir && cache_) {
    cache_->DropPartition(PartitionKeyForDirectory(intent.from)).PermitUnchecked();
    cache_->DropPartition(PartitionKeyForDirectory(intent.to)).PermitUnchecked();
  }
  return drop_intent();
}

// Moves every entry of directory `from` (recursively) to directory `to`
// (inode `dir_ino`). The blobs of its files are copied first, then `from` is
// closed: the new "." row is written (with the old one's properties) and
// the old "." row deleted If-Match the ETag of the listing the copies were
// made from. Every change to a directory's entries merges its "." row, so a
// 412 means the listing is stale (list again, copy what changed), and once
// the old "." is gone no other mount can add, change or remove an entry of
// `from` (their transactions fail with 404: ENOENT): the listing is final,
// and every blob it names was copied while the entry named it (a writer
// that commits to the old name later only loses its write, as for a
// removed file). Then subdirectories, the new rows with a last merge of the
// new "." (its ETag changes after every row is in), old blobs, old rows.
// Idempotent: a closed `from` is not closed again, an entry already in `to`
// with the same inode is not copied again, so re-running it after an
// interruption converges. Costs one blob copy per file below.
Status Namespace::MoveChildren(const std::string& from, const std::string& to, uint64_t dir_ino) {
  const std::string from_pk = PartitionKeyForDirectory(from);
  const std::string to_pk = PartitionKeyForDirectory(to);
  table_requests++;
  auto present = table_.QueryPartition(options_.table, to_pk);
  STAMPFS_RETURN_IF_ERROR(present);
  std::map<std::string, int64_t> moved_inos;  // rows already in `to`: RowKey -> ino
  for (const Entity& e : *present) moved_inos[e.row_key] = e.GetInt64("ino");
  auto already_moved = [&](const Entity& e) {
    auto done = moved_inos.find(e.row_key);
    return done != moved_inos.end() && done->second == e.GetInt64("ino");
  };
  struct Copy {
    std::string row_etag;  // the row's betag when copied
    std::string copied;    // the old blob's version that was copied
    Entity moved;          // the new row
  };
  std::map<std::string, Copy> copies;  // file rows by RowKey
  auto copy_blobs = [&](const std::vector<Entity>& rows) -> Status {
    for (const Entity& e : rows) {
      if (EntryType(e) != S_IFREG || already_moved(e)) continue;
      auto name = NameOfEntry(e);
      if (!name.ok()) continue;
      auto it = copies.find(e.row_key);
      if (it != copies.end() && it->second.row_etag == StringOr(e, "betag") &&
          it->second.moved.GetInt64("ino") == e.GetInt64("ino")) {
        continue;
      }
      Copy c{StringOr(e, "betag"), "", e};
      c.moved.partition_key = to_pk;
      c.moved.etag.clear();
      STAMPFS_RETURN_IF_ERROR(
          MoveFileBlob(blobs_, options_.container, e, JoinPath(to, *name), &c.moved, &c.copied));
      if (!c.copied.empty()) {
        BlobMoved({static_cast<uint64_t>(e.GetInt64("ino")), StringOr(e, "blob"), c.copied,
                   StringOr(c.moved, "blob"), StringOr(c.moved, "betag")});
      }
      copies[e.row_key] = std::move(c);
    }
    return Status::Ok();
  };
  auto rows = CloseForMove(table_, options_.table, from, to, dir_ino, copy_blobs, &table_requests);
  STAMPFS_RETURN_IF_ERROR(rows);
  std::vector<TableOperation> puts, dels;
  std::vector<std::pair<std::string, std::string>> old_blobs;  // name, etag
  for (const Entity& e : *rows) {
    dels.push_back(TableOperation::Delete(from_pk, e.row_key, Condition::IfMatch("*")));
    auto name = NameOfEntry(e);
    auto attr = AttrFromEntity(e);
    if (!name.ok() || !attr.ok()) continue;
    if (attr->IsDir()) {
      STAMPFS_RETURN_IF_ERROR(MoveChildren(JoinPath(from, *name), JoinPath(to, *name), attr->ino));
      // While its old row exists, so a re-run after a crash moves it too.
      if (options_.dir_markers) {
        STAMPFS_RETURN_IF_ERROR(
            MoveDirMarker(blobs_, options_.container, JoinPath(from, *name), JoinPath(to, *name)));
      }
    }
    auto copy = copies.find(e.row_key);
    std::string old_etag = StringOr(e, "betag");
    if (!already_moved(e)) {
      Entity moved = e;
      if (copy != copies.end()) {
        moved = copy->second.moved;
        old_etag = copy->second.copied;
        copies.erase(copy);
      }
      moved.partition_key = to_pk;
      moved.etag.clear();
      puts.push_back(TableOperation::Replace(moved, Condition::None()));
    }
    if (attr->IsRegular() && !old_etag.empty())
      old_blobs.emplace_back(StringOr(e, "blob"), old_etag);
  }
  // Copies of entries removed or replaced before the close name no file.
  for (const auto& [row_key, c] : copies) {
    const std::string& etag = StringOr(c.moved, "betag");
    if (etag.empty()) continue;
    blobs_.Delete(options_.container, StringOr(c.moved, "blob"), Condition::IfMatch(etag))
        .PermitUnchecked();
  }
  // Last, in the transaction of the last rows: the new "." ETag changes after
  // every entry is in, so a mount that listed `to` meanwhile lists it again.
  Entity bump{to_pk, kDotRowKey, {{"ino", static_cast<int64_t>(dir_ino)}}, {}};
  puts.push_back(TableOperation::Merge(bump, Condition::IfMatch("*")));
  table_requests += (puts.size() + 99) / 100 + (dels.size() + 99) / 100;
  STAMPFS_RETURN_IF_ERROR(ExecuteInBatches(table_, options_.table, puts));
  FaultPoint("rename.after_partition");
  // Old blobs before old rows: while an old row exists, a re-run still knows its blob.
  for (const auto& [blob, etag] : old_blobs) {
    blobs_.Delete(options_.container, blob, Condition::IfMatch(etag)).PermitUnchecked();
  }
  STAMPFS_RETURN_IF_ERROR(LinkNamesMoved(from, to, *rows));
  STAMPFS_RETURN_IF_ERROR(ExecuteInBatches(table_, options_.table, dels));
  if (cache_) {
    cache_->DropPartition(from_pk).PermitUnchecked();
    cache_->DropPartition(to_pk).PermitUnchecked();
  }
  return Status::Ok();
}

}  // namespace stampfs
