#include "fs/admin/dir_refresh.h"

#include <sys/stat.h>

#include <algorithm>
#include <mutex>
#include <set>

#include "fs/admin/import_plan.h"
#include "fs/namespace/attr.h"
#include "fs/namespace/blob_entry.h"
#include "fs/namespace/hard_links.h"
#include "fs/namespace/inode_table.h"
#include "fs/namespace/names.h"
#include "fs/namespace/rename_intent.h"
#include "fs/namespace/table_scan.h"
#include "storage/table_keys.h"

namespace stampfs {

namespace {

// The blob-name prefix of a directory's files ("" for the root).
std::string PrefixOf(const std::string& dir_path) {
  return dir_path == "/" ? std::string() : BlobNameFor(dir_path) + "/";
}

constexpr size_t kParallelProbes = 16;

// Prefixes stampfs keeps for blobs that are never a path of their own.
bool IsStampfsPrefix(const std::string& prefix) {
  return prefix == kLongPathBlobPrefix || IsExchangeTempBlob(prefix + "x");
}

// Whether `blob` lies directly in `prefix` (not deeper).
bool DirectlyIn(const std::string& blob, const std::string& prefix) {
  return blob.size() > prefix.size() && blob.compare(0, prefix.size(), prefix) == 0 &&
         blob.find('/', prefix.size()) == std::string::npos;
}

}  // namespace

DirRefresher::DirRefresher(TableStore& table, BlobStore& blobs, ImportOptions options)
    : table_(table), blobs_(blobs), options_(std::move(options)) {
  options_.refresh = true;
  if (!options_.now_ns) options_.now_ns = NowNs;
}

std::optional<std::string> DirRefresher::DirectoryOfBlob(const std::string& blob) {
  const size_t slash = blob.rfind('/');
  if (slash == std::string::npos) return std::string("/");
  const std::string prefix = blob.substr(0, slash);
  const std::string path = MarkerPath(BlobItem{prefix + "/", {}});
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == ".." || part.size() > kMaxNameBytes) {
      return std::nullopt;
    }
    start = end + 1;
  }
  if (BlobNameFor(path) != prefix) return std::nullopt;
  return path;
}

Result<ImportReport> DirRefresher::RefreshDirectory(const std::string& dir_path,
                                                    std::chrono::milliseconds reads_within) {
  const std::string prefix = PrefixOf(dir_path);
  if (IsLongPathBlob(BlobNameFor(dir_path))) return ImportReport{};  // no blob is named in it
  std::optional<RevalidationDeadline> reads;
  if (reads_within.count() > 0) reads.emplace(reads_within);
  Seen seen;
  seen.listing = true;
  ListOptions lo;
  lo.prefix = prefix;
  lo.delimiter.assign(1, '/');  // (GCC 12 warns falsely about operator=("/"))
  lo.include_metadata = true;
  std::string marker;
  do {
    auto page = blobs_.ListBlobsPage(options_.container, lo, marker);
    if (!page.ok()) {
      Status s = reads ? reads->Outcome(page.status()) : page.status();
      return s.WithContext("list " + dir_path);
    }
    for (BlobItem& b : page->blobs) seen.blobs.push_back(std::move(b));
    for (std::string& p : page->prefixes) seen.prefixes.push_back(std::move(p));
    marker = page->next_marker;
  } while (!marker.empty());
  auto r = Adopt(dir_path, std::move(seen), &reads);
  if (!r.ok() && reads) return reads->Outcome(r.status());
  return r;
}

Result<ImportReport> DirRefresher::RefreshBlob(const std::string& blob) {
  auto dir = DirectoryOfBlob(blob);
  if (!dir || IsLongPathBlob(blob) || IsExchangeTempBlob(blob)) return ImportReport{};
  Seen seen;
  auto props = blobs_.GetProperties(options_.container, blob);
  if (props.ok()) {
    seen.blobs.push_back({blob, *props});
  } else if (props.status().Is(Code::kNotFound)) {
    seen.absent.push_back(blob);
  } else {
    return props.status().WithContext("read " + blob);
  }
  ImportReport report;
  if (!seen.blobs.empty() && !WrittenByStampfs(seen.blobs.front())) {
    STAMPFS_RETURN_IF_ERROR(EnsureDirectory(*dir, &report, 0));
  }
  auto r = Adopt(*dir, std::move(seen));
  if (r.status().Is(Code::kNotFound)) return report;  // no directory, nothing to remove
  STAMPFS_RETURN_IF_ERROR(r);
  r->dirs_created += report.dirs_created;
  return r;
}

// The directories above a new blob, made like a refresh of each parent
// that lists one prefix: the root exists; each level is entered in its
// parent when its "." row is missing.
Status DirRefresher::EnsureDirectory(const std::string& dir_path, ImportReport* report, int depth) {
  if (dir_path == "/" || depth > 300) return Status::Ok();
  auto dot = table_.Get(options_.table, PartitionKeyForDirectory(dir_path), kDotRowKey);
  if (dot.ok()) return Status::Ok();
  if (!dot.status().Is(Code::kNotFound)) return dot.status();
  const std::string parent = ParentPath(dir_path);
  STAMPFS_RETURN_IF_ERROR(EnsureDirectory(parent, report, depth + 1));
  Seen seen;
  seen.prefixes.push_back(BlobNameFor(dir_path) + "/");
  seen.foreign_prefixes = true;  // the event's blob is below it
  auto r = Adopt(parent, std::move(seen));
  STAMPFS_RETURN_IF_ERROR(r);
  report->dirs_created += r->dirs_created;
  if (!r->errors.empty()) return Status(Code::kInternal, r->errors.front());
  return Status::Ok();
}

// A new subdirectory that only a prefix stands for is entered only when a
// blob below it is another tool's: a prefix of stampfs blobs alone is a
// stampfs mount's directory rename (or exchange) half way, whose old name
// the table no longer has. One flat listing page of it decides (probes in
// parallel); a folder marker of another tool needs none.
void DirRefresher::DropStampfsPrefixes(const BlobTree& tree, ImportPlan* plan) {
  std::vector<std::string> probe;
  for (auto& [path, dw] : plan->dirs) {
    for (const PendingWrite& pw : dw.writes) {
      if (pw.kind != PendingWrite::Kind::kInsertDir) continue;
      auto node = tree.dirs.find(pw.child_path);
      if (node == tree.dirs.end() || !node->second.marker) probe.push_back(pw.child_path);
    }
  }
  std::mutex mu;
  std::set<std::string> stampfs_only;
  ForEachParallel(probe, kParallelProbes, [&](const std::string& path) {
    ListOptions lo;
    lo.prefix = BlobNameFor(path) + "/";
    lo.include_metadata = true;
    lo.max_results = 1000;
    auto page = blobs_.ListBlobsPage(options_.container, lo, "");
    if (!page.ok()) return;  // entered as before: a listing error is no proof
    const bool foreign = std::any_of(page->blobs.begin(), page->blobs.end(),
                                     [](const BlobItem& b) { return !WrittenByStampfs(b); });
    if (!foreign && !page->blobs.empty()) {
      std::lock_guard<std::mutex> lock(mu);
      stampfs_only.insert(path);
    }
  });
  if (stampfs_only.empty()) return;
  for (auto& [path, dw] : plan->dirs) {
    std::erase_if(dw.writes, [&](const PendingWrite& pw) {
      return pw.kind == PendingWrite::Kind::kInsertDir && stampfs_only.count(pw.child_path);
    });
  }
  for (const std::string& path : stampfs_only) plan->dirs.erase(path);
}

Result<ImportReport> DirRefresher::Adopt(const std::string& dir_path, Seen seen,
                                         std::optional<RevalidationDeadline>* reads) {
  const std::string prefix = PrefixOf(dir_path);
  auto scan = ScanPartition(table_, options_.table, dir_path);
  STAMPFS_RETURN_IF_ERROR(scan);
  const ScannedPartition* part = scan->Partition(dir_path);
  if (!part || !part->dot) {
    return Status(Code::kNotFound, "directory " + dir_path + " is not in the table");
  }
  ImportReport report;
  report.blobs = seen.blobs.size();
  std::set<std::string> names;  // every blob seen: nothing of theirs is removed
  for (const BlobItem& b : seen.blobs) names.insert(b.name);
  // A path's blob while its entry names another (an exchange in progress)
  // is not this directory's to adopt.
  std::set<std::string> skip;
  for (const auto& [rk, e] : part->entries) {
    auto name = NameOfEntry(e);
    const std::string* b = e.GetString("blob");
    if (!name.ok() || !b) continue;
    const std::string own = BlobNameFor(JoinPath(dir_path, *name));
    if (*b != own) skip.insert(own);
  }
  // The blobs to map: other tools' only, and a placeholder under each
  // prefix, so the tree has the subdirectory (its contents are not planned).
  std::vector<BlobItem> mapped;
  for (BlobItem& b : seen.blobs) {
    if (WrittenByStampfs(b) || skip.count(b.name) || !DirectlyIn(b.name, prefix)) continue;
    if (IsLongPathBlob(b.name) || IsExchangeTempBlob(b.name)) continue;
    mapped.push_back(b);
  }
  for (const std::string& p : seen.prefixes) {
    if (dir_path == "/" && IsStampfsPrefix(p)) continue;
    mapped.push_back({p + "x", {}});
  }
  BlobTree tree = BuildBlobTree(mapped, &report.problems);
  // Problems are the placeholders' only as their prefix.
  for (ImportProblem& p : report.problems) {
    if (!names.count(p.blob) && !p.blob.empty() && p.blob.back() == 'x') p.blob.pop_back();
  }
  // A new subdirectory's "." row is written whatever is there: at most an
  // unfinished mkdir's, whose partition is empty (nothing is created in a
  // directory before its entry exists).
  ImportPlan plan = PlanDirectory({tree, *scan, names, options_, options_.now_ns(), true}, dir_path,
                                  &report.problems);
  report.unchanged = plan.unchanged;
  // Removals: only what this directory's reading judged, each confirmed by
  // a read of the blob (a listing may lag a write).
  std::set<std::string> judged(seen.absent.begin(), seen.absent.end());
  DirWork& w = plan.dirs[dir_path];
  std::vector<PendingWrite> kept;
  for (PendingWrite& pw : w.writes) {
    if (pw.kind == PendingWrite::Kind::kDelete) {
      const std::string* blob = pw.entity.GetString("blob");
      if (!blob || IsLinkName(pw.entity)) continue;
      if (!(seen.listing ? DirectlyIn(*blob, prefix) : judged.count(*blob) > 0)) continue;
      auto props = blobs_.GetProperties(options_.container, *blob);
      if (!props.status().Is(Code::kNotFound)) {
        STAMPFS_RETURN_IF_ERROR(props);
        continue;  // there after all
      }
    }
    kept.push_back(std::move(pw));
  }
  w.writes = std::move(kept);
  if (!seen.foreign_prefixes) DropStampfsPrefixes(tree, &plan);
  bool writes = false;
  for (const auto& [path, d] : plan.dirs) writes = writes || !d.writes.empty() || d.write_dot;
  if (!writes) return report;
  if (reads) reads->reset();  // the writes wait as every write does
  auto first = ReserveInodes(table_, options_.table, plan.new_inodes);
  STAMPFS_RETURN_IF_ERROR(first);
  AssignInodes(*first, &plan);
  WritePlan(table_, options_.table, plan, &report);
  return report;
}

}  // namespace stampfs
