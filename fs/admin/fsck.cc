// fsck: loading, bookkeeping and the checks of the directory structure.
// The checks of files, blobs and inode numbers are in fsck_files.cc.
#include "fs/admin/fsck.h"

#include <sys/stat.h>

#include "fs/namespace/attr.h"
#include "fs/namespace/hard_links.h"
#include "fs/namespace/inode_table.h"
#include "fs/namespace/names.h"
#include "fs/namespace/namespace.h"
#include "fs/namespace/rename_intent.h"
#include "storage/table_keys.h"

namespace stampfs {

namespace {

constexpr int64_t kFormatVersion = 1;  // as fs/namespace/namespace.cc writes it

bool ValidEntry(const Entity& e, std::string* name) {
  if (!e.Has("ino") || !e.Has("mode")) return false;
  auto n = NameOfEntry(e);
  if (!n.ok() || !CheckName(*n).ok()) return false;
  *name = *n;
  return true;
}

}  // namespace

const char* FsckKindName(FsckKind kind) {
  switch (kind) {
    case FsckKind::kMissingFsRow: return "missing-fs-row";
    case FsckKind::kInoCounter: return "ino-counter";
    case FsckKind::kOrphanDot: return "orphan-dot";
    case FsckKind::kDotInoMismatch: return "dot-ino-mismatch";
    case FsckKind::kMissingDot: return "missing-dot";
    case FsckKind::kOrphanPartition: return "orphan-partition";
    case FsckKind::kMissingBlob: return "missing-blob";
    case FsckKind::kEtagMismatch: return "etag-mismatch";
    case FsckKind::kSharedBlob: return "shared-blob";
    case FsckKind::kBlobWithoutEntry: return "blob-without-entry";
    case FsckKind::kDuplicateIno: return "duplicate-ino";
    case FsckKind::kUnknownRow: return "unknown-row";
    case FsckKind::kLinkCount: return "link-count";
    case FsckKind::kOrphanInode: return "orphan-inode";
    case FsckKind::kLinkPaths: return "link-paths";
    case FsckKind::kMissingInode: return "missing-inode";
    case FsckKind::kStaleLinkBlob: return "stale-link-blob";
    case FsckKind::kIntent: return "intent";
    case FsckKind::kMissingMarker: return "missing-marker";
  }
  return "?";
}

uint64_t FsckReport::unrepaired() const {
  uint64_t n = 0;
  for (const FsckFinding& f : findings) n += f.repaired ? 0 : 1;
  return n;
}

Fsck::Fsck(TableStore& table, BlobStore& blobs, FsckOptions options)
    : table_(table), blobs_(blobs), options_(std::move(options)) {
  if (!options_.now_ns) options_.now_ns = NowNs;
}

Result<FsckReport> Fsck::Run() {
  STAMPFS_RETURN_IF_ERROR(Load());
  if (CheckIntents()) {
    // Renames were rolled forward: check the tree they left.
    scan_ = TableScan{};
    blob_list_.clear();
    blobs_by_name_.clear();
    max_ino_ = 0;
    report_.files = report_.directories = 0;
    STAMPFS_RETURN_IF_ERROR(Load());
  }
  CheckUnknownRows();
  CheckFsRows();
  CheckDotRows();
  CheckDirectoryEntries();
  CheckOrphanPartitions();
  CheckFiles();
  CheckDuplicateInos();
  CheckLinks();
  if (options_.dir_markers) CheckDirectoryMarkers();
  CheckUnreferencedBlobs();
  return report_;
}

Status Fsck::Load() {
  Status s = blobs_.GetContainerProperties(options_.container);
  if (s.Is(Code::kNotFound)) {
    return Status(Code::kNotFound, "container " + options_.container + " does not exist");
  }
  STAMPFS_RETURN_IF_ERROR(s);
  auto scan = ScanTable(table_, options_.table);
  if (scan.status().Is(Code::kNotFound)) {
    return Status(Code::kNotFound, "table " + options_.table +
                                       " does not exist (mount or import the container first)");
  }
  STAMPFS_RETURN_IF_ERROR(scan);
  scan_ = std::move(*scan);
  ListOptions lo;
  lo.include_metadata = true;
  auto listing = blobs_.ListBlobs(options_.container, lo);
  if (!listing.ok()) return listing.status().WithContext("list container " + options_.container);
  blob_list_ = std::move(listing->blobs);
  for (const BlobItem& b : blob_list_) blobs_by_name_[b.name] = &b;
  report_.rows = scan_.rows;
  report_.blobs = blob_list_.size();
  for (auto& [pk, part] : scan_.partitions) {
    if (part.dot) {
      report_.directories++;
      max_ino_ = std::max(max_ino_, static_cast<uint64_t>(part.dot->GetInt64("ino")));
    }
    for (auto& [rk, e] : part.entries) {
      max_ino_ = std::max(max_ino_, static_cast<uint64_t>(e.GetInt64("ino")));
      if (EntryType(e) == S_IFREG) report_.files++;
    }
  }
  return Status::Ok();
}

std::vector<Fsck::EntryRef> Fsck::Entries(uint32_t type) {
  std::vector<EntryRef> out;
  for (auto& [pk, part] : scan_.partitions) {
    if (part.path.empty()) continue;
    for (auto& [rk, e] : part.entries) {
      std::string name;
      if (removed_.count({pk, rk}) || !ValidEntry(e, &name)) continue;
      if (type != 0 && EntryType(e) != type) continue;
      out.push_back({&part, &e, name, JoinPath(part.path, name)});
    }
  }
  return out;
}

FsckFinding& Fsck::Add(FsckKind kind, const std::string& where, const std::string& detail) {
  report_.findings.push_back({kind, where, detail, false, ""});
  return report_.findings.back();
}

void Fsck::Done(FsckFinding& f, const Status& s, const std::string& what) {
  f.repaired = s.ok();
  f.repair = s.ok() ? what : "repair failed: " + s.ToString();
}

// One transaction on the partition, with the merge of its "." row.
Status Fsck::Commit(ScannedPartition& part, std::vector<TableOperation> ops) {
  ops.push_back(TouchDirectory(part.path, Condition::IfMatch("*")));
  auto r = table_.ExecuteBatch(options_.table, ops);
  STAMPFS_RETURN_IF_ERROR(r);
  for (size_t i = 0; i + 1 < ops.size(); ++i) {
    const Entity& e = ops[i].entity;
    if (ops[i].kind == TableOperation::Kind::kDelete) continue;
    Entity& stored = part.entries[e.row_key];
    if (ops[i].kind == TableOperation::Kind::kInsert) stored = e;
    for (const auto& [k, v] : e.properties) stored.properties[k] = v;
    stored.etag = r->etags[i];
  }
  return Status::Ok();
}

Status Fsck::MergeEntry(const EntryRef& ref, const std::map<std::string, PropertyValue>& props) {
  Entity e{ref.entry->partition_key, ref.entry->row_key, props, {}};
  return Commit(*ref.part, {TableOperation::Merge(e, Condition::IfMatch(ref.entry->etag))});
}

Status Fsck::RemoveEntry(const EntryRef& ref) {
  Status s = Commit(*ref.part, {TableOperation::Delete(ref.entry->partition_key,
                                                       ref.entry->row_key,
                                                       Condition::IfMatch(ref.entry->etag))});
  if (s.ok()) removed_.insert({ref.entry->partition_key, ref.entry->row_key});
  return s;
}

void Fsck::CheckUnknownRows() {
  for (const Entity& e : scan_.other) {
    if (e.partition_key == kIntentsPartition) continue;  // CheckIntents
    if (e.partition_key == kInodesPartition) continue;   // CheckLinks
    Add(FsckKind::kUnknownRow, e.partition_key + " / " + e.row_key,
        "a row in a partition stampfs does not use")
        .repair = "left alone";
  }
  for (const auto& [rk, e] : scan_.fs_rows) {
    if (rk == kFormatRowKey || rk == kInoCounterRowKey || rk == kImportRowKey) continue;
    Add(FsckKind::kUnknownRow, "~fs / " + rk, "an unknown ~fs row").repair = "left alone";
  }
  for (const auto& [pk, part] : scan_.partitions) {
    for (const auto& [rk, e] : part.entries) {
      std::string name;
      if (ValidEntry(e, &name)) continue;
      Add(FsckKind::kUnknownRow, pk + " / " + rk,
          e.Has("ino") && e.Has("mode") ? "an entry whose name does not decode"
                                        : "an entry without ino or mode")
          .repair = "left alone";
    }
  }
}

// Unfinished renames (fs/namespace/rename_intent.h). A repair finishes them first, with
// the steps a mount uses (Namespace::RollForwardIntents), so the other checks
// see the renamed tree and never "repair" a half-moved one. Returns whether
// anything was rolled forward.
bool Fsck::CheckIntents() {
  std::vector<const Entity*> rows;
  for (const Entity& e : scan_.other) {
    if (e.partition_key == kIntentsPartition) rows.push_back(&e);
  }
  if (rows.empty()) return false;
  if (!options_.repair) {
    for (const Entity* e : rows) {
      auto intent = IntentFromEntity(*e);
      Add(FsckKind::kIntent, "~intents / " + e->row_key,
          intent.ok() ? "unfinished " + intent->Describe() : intent.status().message())
          .repair = "rolled forward by --repair or the next mount";
    }
    return false;
  }
  NamespaceOptions no;
  no.container = options_.container;
  no.dir_markers = options_.dir_markers;
  no.table = options_.table;
  Namespace ns(table_, blobs_, nullptr, no);
  auto outcomes = ns.RollForwardIntents(true);
  if (!outcomes.ok()) {
    Add(FsckKind::kIntent, "~intents", "unfinished renames").repair =
        "repair failed: " + outcomes.status().ToString();
    return false;
  }
  bool any = false;
  for (const IntentOutcome& o : *outcomes) {
    FsckFinding& f =
        Add(FsckKind::kIntent, "~intents / " + o.intent.id,
            o.intent.from.empty() ? "an unreadable intent" : "unfinished " + o.intent.Describe());
    if (o.status.ok()) {
      Done(f, o.status, "rolled forward");
    } else if (o.settled) {
      Done(f, Status::Ok(), "dropped, nothing moved: " + o.status.ToString());
    } else {
      Done(f, o.status, "");
    }
    any = any || o.status.ok() || o.settled;
  }
  return any;
}

void Fsck::CheckFsRows() {
  const int64_t next = static_cast<int64_t>(std::max<uint64_t>(max_ino_, kRootIno) + 1);
  auto missing = [&](const std::string& what, const Entity& row) {
    FsckFinding& f = Add(FsckKind::kMissingFsRow, what, "missing");
    if (!options_.repair) return;
    auto r = table_.Insert(options_.table, row);
    Done(f, StatusOf(r), "recreated");
  };
  if (!scan_.fs_rows.count(kFormatRowKey)) {
    missing("~fs / format", {kFsRowsPartition, kFormatRowKey, {{"version", kFormatVersion}}, {}});
  }
  auto counter = scan_.fs_rows.find(kInoCounterRowKey);
  if (counter == scan_.fs_rows.end()) {
    missing("~fs / ino-counter", {kFsRowsPartition, kInoCounterRowKey, {{"next", next}}, {}});
  } else if (counter->second.GetInt64("next") < next) {
    FsckFinding& f = Add(FsckKind::kInoCounter, "~fs / ino-counter",
                         "next " + std::to_string(counter->second.GetInt64("next")) +
                             " is not above inode " + std::to_string(max_ino_) + ", which is in use");
    if (options_.repair) {
      auto r = ReserveInodes(table_, options_.table, 0, static_cast<uint64_t>(next));
      Done(f, StatusOf(r), "raised to " + std::to_string(next));
    }
  }
  const ScannedPartition* root = scan_.Partition("/");
  if (!root || !root->dot) {
    Attr a;
    a.ino = kRootIno;
    a.mode = S_IFDIR | 0755;
    a.uid = options_.uid;
    a.gid = options_.gid;
    a.mtime_ns = a.ctime_ns = a.atime_ns = options_.now_ns();
    Entity dot{PartitionKeyForDirectory("/"), kDotRowKey, {}, {}};
    AttrToEntity(a, &dot);
    missing("the root directory's \".\" row", dot);
  }
}

void Fsck::CheckDotRows() {
  for (auto& [pk, part] : scan_.partitions) {
    if (!part.dot || part.path == "/") continue;
    if (part.path.empty()) {
      FsckFinding& f = Add(FsckKind::kOrphanDot, pk, "a \".\" row of a hashed key without a path");
      RepairOrphanDot(part, f, nullptr);
      continue;
    }
    const Entity* e = scan_.Find(ParentPath(part.path), BaseName(part.path));
    if (e && EntryType(*e) == S_IFDIR) {
      if (e->GetInt64("ino") == part.dot->GetInt64("ino")) continue;
      FsckFinding& f = Add(FsckKind::kDotInoMismatch, part.path,
                           "\".\" row has inode " + std::to_string(part.dot->GetInt64("ino")) +
                               ", the entry " + std::to_string(e->GetInt64("ino")));
      if (!options_.repair) continue;
      Entity dot{pk, kDotRowKey, {{"ino", e->GetInt64("ino")}}, {}};
      auto r = table_.Update(options_.table, dot, UpdateMode::kMerge, Condition::IfMatch("*"));
      Done(f, StatusOf(r), "set to the entry's");
      continue;
    }
    FsckFinding& f = Add(FsckKind::kOrphanDot, part.path,
                         e ? "the parent holds a file or symlink of this name"
                           : "no entry in the parent directory (an unfinished mkdir)");
    RepairOrphanDot(part, f, e);
  }
}

void Fsck::RepairOrphanDot(ScannedPartition& part, FsckFinding& f, const Entity* existing) {
  if (!options_.repair) return;
  const size_t n = part.entries.size();
  if (n == 0) {
    Status s = table_.Delete(options_.table, part.partition_key, kDotRowKey,
                             Condition::IfMatch(part.dot->etag));
    Done(f, s, "deleted (the directory was empty)");
    if (s.ok()) part.dot.reset();
    return;
  }
  auto parent = scan_.partitions.find(
      part.path.empty() ? "" : PartitionKeyForDirectory(ParentPath(part.path)));
  if (existing || parent == scan_.partitions.end() || !parent->second.dot) {
    f.repair = "left alone: " + std::to_string(n) + " entries, and " +
               (existing ? "the name is taken" : "no parent directory to enter it in");
    return;
  }
  Attr a;
  a.ino = static_cast<uint64_t>(part.dot->GetInt64("ino"));
  if (a.ino == 0) {
    auto ino = ReserveInodes(table_, options_.table, 1);
    if (!ino.ok()) return Done(f, ino.status(), "");
    a.ino = *ino;
  }
  a.mode = S_IFDIR | 0755;
  a.uid = options_.uid;
  a.gid = options_.gid;
  a.mtime_ns = a.ctime_ns = a.atime_ns = options_.now_ns();
  const std::string name = BaseName(part.path);
  Entity e{parent->first, RowKeyForName(name), {}, {}};
  AttrToEntity(a, &e);
  SetEntryName(name, &e);
  Status s = Commit(parent->second, {TableOperation::Insert(e)});
  Done(f, s, "entered in " + parent->second.path + " as a directory (" + std::to_string(n) +
                 " entries)");
}

void Fsck::CheckDirectoryEntries() {
  for (const EntryRef& ref : Entries(S_IFDIR)) {
    auto part = scan_.partitions.find(PartitionKeyForDirectory(ref.path));
    const bool exists = part != scan_.partitions.end();
    if (exists && part->second.dot) continue;
    FsckFinding& f = Add(FsckKind::kMissingDot, ref.path,
                         "a directory entry whose \".\" row is gone (an unfinished rmdir)");
    if (!options_.repair) continue;
    if (!exists || part->second.entries.empty()) {
      Done(f, RemoveEntry(ref), "removed the entry (the directory was empty: rmdir finished)");
      continue;
    }
    Entity dot = DirectoryRow(ref.path, static_cast<uint64_t>(ref.entry->GetInt64("ino")));
    auto r = table_.Insert(options_.table, dot);
    Done(f, StatusOf(r), "recreated the \".\" row (" +
                             std::to_string(part->second.entries.size()) + " entries)");
    if (r.ok()) {
      dot.etag = *r;
      part->second.dot = dot;
    }
  }
}

void Fsck::CheckOrphanPartitions() {
  for (auto& [pk, part] : scan_.partitions) {
    if (part.dot || part.entries.empty()) continue;
    if (!part.path.empty() && part.path != "/") {
      const Entity* e = scan_.Find(ParentPath(part.path), BaseName(part.path));
      if (e && EntryType(*e) == S_IFDIR) continue;  // a missing "." (reported above)
    }
    const std::string where = part.path.empty() ? pk : part.path;
    Add(FsckKind::kOrphanPartition, where,
        std::to_string(part.entries.size()) +
            " entries of a directory that has neither a \".\" row nor an entry in its parent")
        .repair = "left alone";
  }
}

}  // namespace stampfs
