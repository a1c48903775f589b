// fsck: files against blobs, blobs without entries, duplicate inode numbers.
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <map>
#include <vector>

#include "fs/namespace/attr.h"
#include "fs/namespace/dir_marker.h"
#include "fs/admin/fsck.h"
#include "fs/namespace/hard_links.h"
#include "fs/admin/import.h"
#include "fs/admin/import_plan.h"
#include "fs/namespace/blob_entry.h"
#include "fs/namespace/inode_table.h"
#include "fs/namespace/names.h"
#include "storage/table_keys.h"

namespace stampfs {

namespace {

// Blobs that no file entry names and folder markers whose directory has no
// entry. `removed(pk, rk)` hides entries a repair deleted.
template <typename Removed>
std::set<std::string> Unreferenced(const TableScan& scan, const std::vector<BlobItem>& blobs,
                                   const Removed& removed) {
  std::set<std::string> named;
  for (const auto& [pk, part] : scan.partitions) {
    if (part.path.empty()) continue;
    for (const auto& [rk, e] : part.entries) {
      if (removed(pk, rk) || EntryType(e) != S_IFREG) continue;
      auto name = NameOfEntry(e);
      if (name.ok() && !IsLinkName(e)) named.insert(EntryBlobName(e, JoinPath(part.path, *name)));
    }
  }
  for (const Entity& e : scan.other) {  // hard-linked files' blobs
    if (e.partition_key != kInodesPartition) continue;
    if (const std::string* b = e.GetString("blob")) named.insert(*b);
  }
  std::set<std::string> out;
  for (const BlobItem& b : blobs) {
    if (named.count(b.name)) continue;
    if (IsDirectoryMarker(b)) {
      const std::string path = MarkerPath(b);
      const Entity* e = path == "/" ? nullptr : scan.Find(ParentPath(path), BaseName(path));
      if (e && EntryType(*e) == S_IFDIR && !removed(e->partition_key, e->row_key)) continue;
    }
    out.insert(b.name);
  }
  return out;
}

}  // namespace

void Fsck::CheckFiles() {
  // Two entries naming one blob: unlinking either would delete the other's
  // data, and adopting the blob would make both claim it. Reported only.
  std::map<std::string, std::vector<std::string>> paths_of_blob;
  for (const EntryRef& ref : Entries(S_IFREG)) {
    if (IsLinkName(*ref.entry)) continue;  // CheckLinks
    paths_of_blob[EntryBlobName(*ref.entry, ref.path)].push_back(ref.path);
  }
  for (const EntryRef& ref : Entries(S_IFREG)) {
    if (IsLinkName(*ref.entry)) continue;
    const std::string blob = EntryBlobName(*ref.entry, ref.path);
    if (const auto& paths = paths_of_blob[blob]; paths.size() > 1) {
      if (paths.front() == ref.path) {
        std::string all;
        for (const std::string& p : paths) all += (all.empty() ? "" : ", ") + p;
        Add(FsckKind::kSharedBlob, ref.path, "blob " + blob + " is named by " + all);
      }
      continue;
    }
    const std::string* betag_p = ref.entry->GetString("betag");
    const std::string betag = betag_p ? *betag_p : "";
    auto it = blobs_by_name_.find(blob);
    if (it == blobs_by_name_.end()) {
      if (betag.empty()) continue;  // created, never committed: no blob yet
      FsckFinding& f = Add(FsckKind::kMissingBlob, ref.path, "its blob " + blob + " is missing");
      if (options_.repair) Done(f, RemoveEntry(ref), "removed the entry");
      continue;
    }
    const BlobItem& b = *it->second;
    if (b.properties.etag == betag) continue;
    FsckFinding& f = Add(FsckKind::kEtagMismatch, ref.path,
                         "entry has blob ETag " + (betag.empty() ? "(none)" : betag) +
                             ", blob " + blob + " has " + b.properties.etag +
                             " (a crash between blob commit and entry update?)");
    if (!options_.repair) continue;
    Entity props{ref.entry->partition_key, ref.entry->row_key, {}, {}};
    SetBlobProperties(b, &props);
    props.properties["size"] = static_cast<int64_t>(b.properties.size);
    props.properties["mtime"] = BlobMtimeNs(b);
    props.properties["ctime"] = options_.now_ns();
    Done(f, MergeEntry(ref, props.properties),
         "adopted the blob's size (" + std::to_string(b.properties.size) + "), mtime and ETag");
  }
}

void Fsck::CheckDuplicateInos() {
  struct Owner {
    int64_t ctime;
    std::string path;
    const EntryRef* ref;  // null for the root
  };
  std::vector<EntryRef> refs = Entries(0);
  std::map<uint64_t, std::vector<Owner>> by_ino;
  if (const ScannedPartition* root = scan_.Partition("/"); root && root->dot) {
    by_ino[static_cast<uint64_t>(root->dot->GetInt64("ino", kRootIno))].push_back(
        {INT64_MIN, "/", nullptr});
  }
  for (const EntryRef& ref : refs) {
    if (IsLinkName(*ref.entry)) continue;  // names of one file share its inode (CheckLinks)
    by_ino[static_cast<uint64_t>(ref.entry->GetInt64("ino"))].push_back(
        {ref.entry->GetInt64("ctime"), ref.path, &ref});
  }
  for (auto& [ino, owners] : by_ino) {
    if (owners.size() < 2) continue;
    std::sort(owners.begin(), owners.end(), [](const Owner& a, const Owner& b) {
      return a.ctime != b.ctime ? a.ctime < b.ctime : a.path < b.path;
    });
    for (size_t i = 1; i < owners.size(); ++i) {
      const EntryRef& ref = *owners[i].ref;
      FsckFinding& f = Add(FsckKind::kDuplicateIno, ref.path,
                           "inode " + std::to_string(ino) + " is also " + owners[0].path);
      if (!options_.repair) continue;
      auto fresh = ReserveInodes(table_, options_.table, 1);
      if (!fresh.ok()) {
        Done(f, fresh.status(), "");
        continue;
      }
      const int64_t n = static_cast<int64_t>(*fresh);
      Status s = MergeEntry(ref, {{"ino", n}});
      auto part = scan_.partitions.find(PartitionKeyForDirectory(ref.path));
      if (s.ok() && EntryType(*ref.entry) == S_IFDIR && part != scan_.partitions.end() &&
          part->second.dot) {
        Entity dot{part->first, kDotRowKey, {{"ino", n}}, {}};
        s = StatusOf(table_.Update(options_.table, dot, UpdateMode::kMerge, Condition::IfMatch("*")));
      }
      Done(f, s, "renumbered to " + std::to_string(n));
    }
  }
}

void Fsck::CheckUnreferencedBlobs() {
  auto removed = [this](const std::string& pk, const std::string& rk) {
    return removed_.count({pk, rk}) != 0;
  };
  std::vector<size_t> found;
  for (const std::string& name : Unreferenced(scan_, blob_list_, removed)) {
    if (handled_blobs_.count(name)) continue;
    Add(FsckKind::kBlobWithoutEntry, name, "no entry names this blob");
    found.push_back(report_.findings.size() - 1);
  }
  if (options_.repair && !found.empty()) RepairByImport(found);
}

// Blobs without entries are what an import adds: run one, then see which
// blobs have entries now.
void Fsck::RepairByImport(const std::vector<size_t>& findings) {
  ImportOptions o;
  o.container = options_.container;
  o.table = options_.table;
  o.uid = options_.uid;
  o.gid = options_.gid;
  o.now_ns = options_.now_ns;
  auto imported = Importer(table_, blobs_, o).Run();
  if (!imported.ok()) {
    for (size_t i : findings) Done(report_.findings[i], imported.status(), "");
    return;
  }
  std::map<std::string, std::string> reasons;
  for (const ImportProblem& p : imported->problems) reasons[p.blob] = p.reason;
  auto rescan = ScanTable(table_, options_.table);
  if (!rescan.ok()) {
    for (size_t i : findings) Done(report_.findings[i], rescan.status(), "");
    return;
  }
  auto none = [](const std::string&, const std::string&) { return false; };
  const std::set<std::string> still = Unreferenced(*rescan, blob_list_, none);
  for (size_t i : findings) {
    FsckFinding& f = report_.findings[i];
    if (!still.count(f.where)) {
      Done(f, Status::Ok(), "imported");
    } else {
      auto r = reasons.find(f.where);
      f.repair = "not imported: " + (r != reasons.end() ? r->second : "see stampfs import");
    }
  }
}

// Every directory but the root has its marker blob (dir_markers). A blob
// of that name that is not a marker is left alone.
void Fsck::CheckDirectoryMarkers() {
  for (const EntryRef& ref : Entries(S_IFDIR)) {
    if (IsLongPathBlob(BlobNameFor(ref.path))) continue;  // a long path has none
    auto it = blobs_by_name_.find(BlobNameFor(ref.path));
    if (it != blobs_by_name_.end() && IsDirMarkerBlob(it->second->properties)) continue;
    if (it != blobs_by_name_.end()) {
      Add(FsckKind::kMissingMarker, ref.path, "a blob that is not a marker has its name").repair =
          "left: rename or remove that blob";
      continue;
    }
    FsckFinding& f = Add(FsckKind::kMissingMarker, ref.path, "no directory marker blob");
    if (!options_.repair) continue;
    auto attr = AttrFromEntity(*ref.entry);
    Done(f, attr.ok() ? WriteDirMarker(blobs_, options_.container, ref.path, *attr) : attr.status(),
         "marker written");
  }
}

}  // namespace stampfs
