// fsck: hard links (fs/namespace/hard_links.h). Each inode record against the names
// that use it: its count, its blob, records no name uses, names without one.
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "fs/admin/fsck.h"
#include "fs/admin/import_plan.h"
#include "fs/namespace/blob_entry.h"
#include "fs/namespace/hard_links.h"
#include "fs/namespace/inode_table.h"
#include "fs/namespace/names.h"

namespace stampfs {

namespace {

std::string Joined(const std::vector<std::string>& paths) {
  std::string all;
  for (const std::string& p : paths) all += (all.empty() ? "" : ", ") + p;
  return all;
}

}  // namespace

void Fsck::CheckLinks() {
  std::map<uint64_t, std::vector<std::string>> names;  // linked names by inode
  std::set<std::string> entry_blobs;                     // blobs named by unlinked entries
  for (const EntryRef& ref : Entries(0)) {  // files, symlinks and special files link
    if (EntryType(*ref.entry) == S_IFDIR) continue;
    if (IsLinkName(*ref.entry)) {
      names[static_cast<uint64_t>(ref.entry->GetInt64("ino"))].push_back(ref.path);
    } else if (EntryType(*ref.entry) == S_IFREG) {
      entry_blobs.insert(EntryBlobName(*ref.entry, ref.path));
    }
  }
  std::set<uint64_t> recorded;
  for (const Entity& rec : scan_.other) {
    if (rec.partition_key != kInodesPartition) continue;
    const uint64_t ino = static_cast<uint64_t>(rec.GetInt64("ino"));
    recorded.insert(ino);
    const std::string where = std::string(kInodesPartition) + " / " + rec.row_key;
    const std::string* blob_p = rec.GetString("blob");
    const std::string* betag_p = rec.GetString("betag");
    const std::string blob = blob_p ? *blob_p : "";
    const std::string betag = betag_p ? *betag_p : "";
    const auto& used = names[ino];
    if (used.empty()) {
      FsckFinding& f = Add(FsckKind::kOrphanInode, where,
                           "inode " + std::to_string(ino) + " has no name (blob " + blob + ")");
      if (!options_.repair) continue;
      Status s = table_.Delete(options_.table, rec.partition_key, rec.row_key,
                               Condition::IfMatch(rec.etag));
      // Its blob goes with it unless an entry names it (a link that stopped
      // after the record was written leaves the file's own entry).
      if (s.ok() && !betag.empty() && !entry_blobs.count(blob) && blobs_by_name_.count(blob)) {
        Status d = blobs_.Delete(options_.container, blob, Condition::IfMatch(betag));
        if (!d.Is(Code::kNotFound) && !d.Is(Code::kPreconditionFailed)) s = d;
        if (d.ok()) blobs_by_name_.erase(blob);
      }
      Done(f, s, "removed the record");
      continue;
    }
    std::map<std::string, PropertyValue> fix;
    auto it = blobs_by_name_.find(blob);
    if (!betag.empty() && it == blobs_by_name_.end()) {
      Add(FsckKind::kMissingBlob, where, "the blob " + blob + " of linked file " + used.front() +
                                             " is missing")
          .repair = "left alone";
    } else if (!betag.empty() && it->second->properties.etag != betag) {
      FsckFinding& f = Add(FsckKind::kEtagMismatch, where,
                           "record has blob ETag " + betag + ", blob " + blob + " has " +
                               it->second->properties.etag);
      if (options_.repair) {
        Entity props{rec.partition_key, rec.row_key, {}, {}};
        SetBlobProperties(*it->second, &props);
        props.properties["size"] = static_cast<int64_t>(it->second->properties.size);
        props.properties["mtime"] = BlobMtimeNs(*it->second);
        Done(f,
             StatusOf(table_.Update(options_.table, props, UpdateMode::kMerge,
                                    Condition::IfMatch(rec.etag))),
             "adopted the blob's size, mtime and ETag");
        continue;  // the record's ETag changed: the count is checked by the next run
      }
    }
    // What an unfinished blob move left: the old blob, or a copy at another
    // name's path. The record's blob holds the data; no other entry names these.
    if (!betag.empty() && it != blobs_by_name_.end()) {
      std::set<std::string> stale;
      if (const std::string* m = rec.GetString(kMovingProperty)) stale.insert(*m);
      for (const std::string& p : used) stale.insert(BlobNameFor(p));
      for (const std::string& name : stale) {
        auto s_it = blobs_by_name_.find(name);
        if (name == blob || entry_blobs.count(name) || s_it == blobs_by_name_.end()) continue;
        handled_blobs_.insert(name);
        FsckFinding& f = Add(FsckKind::kStaleLinkBlob, name,
                             "left by a move of linked file " + used.front() + "'s blob to " + blob);
        if (options_.repair) {
          Done(f,
               blobs_.Delete(options_.container, name,
                             Condition::IfMatch(s_it->second->properties.etag)),
               "deleted");
        }
      }
    }
    const int64_t nlink = rec.GetInt64("nlink", 1);
    std::vector<std::string> hinted = LinkPaths(rec);
    std::vector<std::string> names_sorted = used;
    std::sort(hinted.begin(), hinted.end());
    std::sort(names_sorted.begin(), names_sorted.end());
    if (nlink == static_cast<int64_t>(used.size()) && hinted != names_sorted) {
      // A rename of a directory above a name stopped before its record was
      // told: the hint that finds a surviving name for the blob is stale.
      FsckFinding& f = Add(FsckKind::kLinkPaths, where,
                           "paths name " + std::to_string(hinted.size()) + " paths, not the " +
                               std::to_string(used.size()) + " names " + Joined(used));
      if (options_.repair) {
        Entity props{rec.partition_key, rec.row_key, {}, {}};
        SetLinkPaths(used, &props);
        Done(f,
             StatusOf(table_.Update(options_.table, props, UpdateMode::kMerge,
                                    Condition::IfMatch(rec.etag))),
             "set to the names");
      }
      continue;
    }
    if (nlink == static_cast<int64_t>(used.size())) continue;
    FsckFinding& f = Add(FsckKind::kLinkCount, where,
                         "nlink " + std::to_string(nlink) + " but " +
                             std::to_string(used.size()) + " names: " + Joined(used));
    if (!options_.repair) continue;
    Entity props{rec.partition_key, rec.row_key, {}, {}};
    props.properties["nlink"] = static_cast<int64_t>(used.size());
    SetLinkPaths(used, &props);
    Done(f,
         StatusOf(table_.Update(options_.table, props, UpdateMode::kMerge,
                                Condition::IfMatch(rec.etag))),
         "set to " + std::to_string(used.size()));
  }
  for (const auto& [ino, paths] : names) {
    if (recorded.count(ino) || paths.empty()) continue;
    for (const std::string& p : paths) {
      Add(FsckKind::kMissingInode, p,
          "a hard link of inode " + std::to_string(ino) + " without its inode record (no data)")
          .repair = "left alone";
    }
  }
}

}  // namespace stampfs
