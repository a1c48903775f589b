// Importer: list, read the table, plan (fs/admin/import_plan.cc), write.
#include "fs/admin/import.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "fs/admin/import_plan.h"
#include "fs/namespace/attr.h"
#include "fs/namespace/blob_entry.h"
#include "fs/namespace/hard_links.h"
#include "fs/namespace/names.h"
#include "fs/namespace/namespace.h"
#include "fs/namespace/table_scan.h"
#include "storage/table_keys.h"

namespace stampfs {

namespace {

// The operations of one transaction: at most 99 entry writes and the merge of
// the directory's "." row, so every transaction changes the "." ETag.
constexpr size_t kEntriesPerBatch = kMaxBatchOperations - 1;

TableOperation OperationFor(const PendingWrite& pw, const ImportPlan& plan) {
  switch (pw.kind) {
    case PendingWrite::Kind::kInsertDir: {
      Entity e = pw.entity;
      e.properties["ino"] = static_cast<int64_t>(plan.dirs.at(pw.child_path).ino);
      return TableOperation::Insert(std::move(e));
    }
    case PendingWrite::Kind::kInsertFile:
      return TableOperation::Insert(pw.entity);
    case PendingWrite::Kind::kUpdate:
      return TableOperation::Merge(pw.entity, Condition::IfMatch(pw.etag));
    case PendingWrite::Kind::kDelete:
      break;
  }
  return TableOperation::Delete(pw.entity.partition_key, pw.entity.row_key,
                                Condition::IfMatch(pw.etag));
}

void Count(const PendingWrite& pw, ImportReport* report) {
  switch (pw.kind) {
    case PendingWrite::Kind::kInsertDir:
      report->dirs_created++;
      break;
    case PendingWrite::Kind::kInsertFile:
      report->files_created++;
      break;
    case PendingWrite::Kind::kUpdate:
      report->updated++;
      report->changed_inos.push_back(pw.ino);
      break;
    case PendingWrite::Kind::kDelete:
      report->removed++;
      report->removed_paths.push_back(pw.path);
      report->changed_inos.push_back(pw.ino);
      break;
  }
}

// Directories whose writes may run at once (each is its own partition).
constexpr size_t kParallelDirectories = 16;

}  // namespace

// Directories of one depth are independent: a directory's writes touch its
// own partition, and its entry is in its parent's, one level up. So each
// level runs in parallel, and a level starts once the deeper one is done: a
// directory that failed is known before its parent would enter it.
void WritePlan(TableStore& table, const std::string& table_name, ImportPlan& plan,
               ImportReport* report, const std::function<void(uint64_t)>& written) {
  std::mutex mu;  // report, done, written
  uint64_t done = 0;
  auto write_dir = [&](DirWork* w) {
    if (w->blocked) return;
    std::vector<const PendingWrite*> writes;
    for (const PendingWrite& pw : w->writes) {
      if (pw.kind == PendingWrite::Kind::kInsertDir && plan.dirs.at(pw.child_path).failed) continue;
      writes.push_back(&pw);
    }
    if (writes.empty() && !w->write_dot) return;
    const Condition dot_condition = w->write_dot ? Condition::None() : Condition::IfMatch("*");
    const uint64_t dot_ino = w->write_dot ? w->ino : 0;
    // A new directory shows its own mtime, not the time of the import (its
    // "." row's "touched" is the time of the last change of its entries).
    const int64_t touched = w->write_dot ? w->mtime_ns : 0;
    size_t start = 0;
    do {
      const size_t end = std::min(writes.size(), start + kEntriesPerBatch);
      std::vector<TableOperation> ops;
      for (size_t i = start; i < end; ++i) ops.push_back(OperationFor(*writes[i], plan));
      ops.push_back(TouchDirectory(w->path, dot_condition, dot_ino, touched));
      Status s = ExecuteInBatches(table, table_name, ops);
      std::lock_guard<std::mutex> lock(mu);
      if (!s.ok()) {
        w->failed = true;
        report->failed_directories++;
        report->errors.push_back(w->path + ": " + s.ToString() + " (" + std::to_string(start) +
                                 " of " + std::to_string(writes.size()) + " entries written)");
        break;
      }
      for (size_t i = start; i < end; ++i) Count(*writes[i], report);
      done += end - start;
      if (written) written(done);
      start = end;
    } while (start < writes.size());
  };
  const std::vector<DirWork*> order = DeepestFirst(&plan);
  for (size_t i = 0; i < order.size();) {
    std::vector<DirWork*> level;
    const size_t depth = Depth(*order[i]);
    for (; i < order.size() && Depth(*order[i]) == depth; ++i) level.push_back(order[i]);
    ForEachParallel(level, kParallelDirectories, write_dir);
  }
}

Importer::Importer(TableStore& table, BlobStore& blobs, ImportOptions options)
    : table_(table), blobs_(blobs), options_(std::move(options)) {
  if (!options_.now_ns) options_.now_ns = NowNs;
}

void Importer::Report(ImportProgress::Phase phase) {
  progress_.phase = phase;
  if (options_.progress) options_.progress(progress_);
}

// The container must exist already; the table, root and ~fs rows are made
// as a first mount would make them.
Status Importer::EnsureFilesystem() {
  Status s = blobs_.GetContainerProperties(options_.container);
  if (s.Is(Code::kNotFound)) {
    return Status(Code::kNotFound, "container " + options_.container + " does not exist");
  }
  STAMPFS_RETURN_IF_ERROR(s);
  NamespaceOptions nso;
  nso.container = options_.container;
  nso.table = options_.table;
  Namespace ns(table_, blobs_, nullptr, nso);
  return ns.Init();
}

Result<std::vector<BlobItem>> Importer::ListAll() {
  ListOptions lo;
  lo.include_metadata = true;
  std::vector<BlobItem> all;
  std::string marker;
  do {
    auto page = blobs_.ListBlobsPage(options_.container, lo, marker);
    if (!page.ok()) return page.status().WithContext("list container " + options_.container);
    for (BlobItem& b : page->blobs) all.push_back(std::move(b));
    marker = page->next_marker;
    progress_.blobs_listed = all.size();
    Report(ImportProgress::Phase::kListing);
  } while (!marker.empty());
  return all;
}

Status Importer::MarkImport(const std::string& state, const ImportReport* report) {
  Entity row{kFsRowsPartition, kImportRowKey, {{"state", state}, {"time", options_.now_ns()}}, {}};
  if (report) {
    row.properties["blobs"] = static_cast<int64_t>(report->blobs);
    row.properties["problems"] = static_cast<int64_t>(report->problems.size());
  }
  auto r = table_.Update(options_.table, row, UpdateMode::kReplace, Condition::None());
  return StatusOf(r).WithContext("record the import state");
}

void Importer::Write(ImportPlan& plan, ImportReport* report) {
  Report(ImportProgress::Phase::kWriting);  // the rate counts from here
  WritePlan(table_, options_.table, plan, report, [this](uint64_t written) {
    progress_.ops_written = written;
    Report(ImportProgress::Phase::kWriting);
  });
}

Result<ImportReport> Importer::Run() {
  STAMPFS_RETURN_IF_ERROR(EnsureFilesystem());
  auto blobs = ListAll();
  STAMPFS_RETURN_IF_ERROR(blobs);
  auto scan = ScanTable(table_, options_.table, [&](uint64_t rows) {
    progress_.rows_read = rows;
    Report(ImportProgress::Phase::kReading);
  });
  STAMPFS_RETURN_IF_ERROR(scan);

  ImportReport report;
  report.blobs = blobs->size();
  std::set<std::string> names;
  for (const BlobItem& b : *blobs) names.insert(b.name);
  // A hard-linked file's blob belongs to its inode record: never a file of its own.
  std::set<std::string> linked;
  for (const Entity& e : scan->other) {
    if (e.partition_key != kInodesPartition) continue;
    if (const std::string* b = e.GetString("blob")) linked.insert(*b);
    if (const std::string* b = e.GetString(kMovingProperty)) linked.insert(*b);
  }
  // An exchange's blobs (fs/namespace/namespace_exchange.cc): while a file entry
  // names a blob other than its path's (until the roll-forward puts it
  // back), neither that blob nor the one at its path is its data to adopt;
  // nor are the exchange's temporary blobs.
  for (const auto& [pk, part] : scan->partitions) {
    if (part.path.empty()) continue;
    for (const auto& [rk, e] : part.entries) {
      const std::string* b = e.GetString("blob");
      auto name = NameOfEntry(e);
      if (EntryType(e) != S_IFREG || IsLinkName(e) || !b || !name.ok()) continue;
      const std::string own = BlobNameFor(JoinPath(part.path, *name));
      if (*b != own) linked.insert({*b, own});
    }
  }
  // A long path's blob (BlobNameFor) has its path only in the table: never
  // a file of its hashed name; one that no entry names is reported.
  std::set<std::string> named = linked;
  for (const auto& [pk, part] : scan->partitions) {
    for (const auto& [rk, e] : part.entries) {
      if (const std::string* b = e.GetString("blob")) named.insert(*b);
    }
  }
  for (const BlobItem& b : *blobs) {
    if (IsLongPathBlob(b.name) && !named.count(b.name)) {
      report.problems.push_back({b.name,
                                 "the blob of a path too long for a blob name, which "
                                 "no entry names: its path was only in the table"});
    }
    if (IsExchangeTempBlob(b.name) || IsLongPathBlob(b.name)) linked.insert(b.name);
  }
  if (!linked.empty()) {
    blobs->erase(std::remove_if(blobs->begin(), blobs->end(),
                                [&](const BlobItem& b) { return linked.count(b.name) != 0; }),
                 blobs->end());
  }
  BlobTree tree = BuildBlobTree(*blobs, &report.problems);
  ImportPlan plan = PlanImport({tree, *scan, names, options_, options_.now_ns()}, &report.problems);
  report.unchanged = plan.unchanged;
  report.stale = plan.stale;
  progress_.ops_total = plan.total_writes;

  auto mark = scan->fs_rows.find(kImportRowKey);
  const bool marked_done = mark != scan->fs_rows.end() && mark->second.GetString("state") &&
                           *mark->second.GetString("state") == "done";
  bool writes = false;
  for (const auto& [path, w] : plan.dirs) writes = writes || !w.writes.empty() || w.write_dot;
  if (writes) {
    STAMPFS_RETURN_IF_ERROR(MarkImport("running", nullptr));
    auto first = ReserveInodes(table_, options_.table, plan.new_inodes);
    STAMPFS_RETURN_IF_ERROR(first);
    AssignInodes(*first, &plan);
    Write(plan, &report);
  }
  Report(ImportProgress::Phase::kWriting);
  if (report.errors.empty() && (writes || !marked_done)) {
    STAMPFS_RETURN_IF_ERROR(MarkImport("done", &report));
  }
  return report;
}

Result<bool> Importer::ShouldAutoImport(TableStore& table, BlobStore& blobs,
                                        const std::string& container,
                                        const std::string& table_name) {
  auto mark = table.Get(table_name, kFsRowsPartition, kImportRowKey);
  if (mark.ok()) {
    const std::string* state = mark->GetString("state");
    return state && *state == "running";  // an import that did not finish
  }
  if (!mark.status().Is(Code::kNotFound)) return mark.status();
  QueryOptions q;
  q.filter = FilterPartition(PartitionKeyForDirectory("/"));
  q.top = 2;
  auto root = table.QueryPage(table_name, q, "", "");
  STAMPFS_RETURN_IF_ERROR(root);
  for (const Entity& e : root->entities) {
    if (e.row_key != kDotRowKey) return false;  // a file system in use
  }
  ListOptions lo;
  lo.max_results = 1;
  auto page = blobs.ListBlobsPage(container, lo, "");
  STAMPFS_RETURN_IF_ERROR(page);
  return !page->blobs.empty();
}

std::string ImportReport::ChangeCounts() const {
  return std::to_string(files_created) + " files and " + std::to_string(dirs_created) +
         " directories new, " + std::to_string(updated) + " updated, " + std::to_string(removed) +
         " removed";
}

Result<bool> Importer::HoldsStampfsBlobs(BlobStore& blobs, const std::string& container) {
  ListOptions lo;
  lo.include_metadata = true;
  auto page = blobs.ListBlobsPage(container, lo, "");
  STAMPFS_RETURN_IF_ERROR(page);
  return std::any_of(page->blobs.begin(), page->blobs.end(), WrittenByStampfs);
}

}  // namespace stampfs
