#include "fs/namespace/table_scan.h"

#include <sys/stat.h>

#include <chrono>
#include <thread>

#include "fs/namespace/attr.h"
#include "fs/namespace/inode_table.h"
#include "fs/namespace/names.h"
#include "storage/table_keys.h"

namespace stampfs {

namespace {

// Hashed partitions learn their path from their "." row or from the entry of
// a known parent that names them; repeated until nothing changes, so a chain
// of hashed directories resolves from the top.
void ResolveHashedPaths(TableScan* scan) {
  for (auto& [pk, part] : scan->partitions) {
    if (!part.path.empty() || !part.dot) continue;
    if (const Binary* p = part.dot->GetBinary("path")) part.path = p->bytes;
  }
  bool changed = true;
  while (changed) {
    changed = false;
    for (auto& [pk, part] : scan->partitions) {
      if (part.path.empty()) continue;
      for (const auto& [rk, e] : part.entries) {
        if (EntryType(e) != S_IFDIR) continue;
        auto name = NameOfEntry(e);
        if (!name.ok()) continue;
        const std::string child = JoinPath(part.path, *name);
        auto it = scan->partitions.find(PartitionKeyForDirectory(child));
        if (it != scan->partitions.end() && it->second.path.empty()) {
          it->second.path = child;
          changed = true;
        }
      }
    }
  }
}

void AddRow(Entity e, TableScan* scan) {
  scan->rows++;
  if (e.partition_key == kFsRowsPartition) {
    std::string rk = e.row_key;
    scan->fs_rows[rk] = std::move(e);
    return;
  }
  if (!IsDirectoryPartitionKey(e.partition_key)) {
    scan->other.push_back(std::move(e));
    return;
  }
  ScannedPartition& part = scan->partitions[e.partition_key];
  if (part.partition_key.empty()) {
    part.partition_key = e.partition_key;
    if (!IsHashedKey(e.partition_key)) {
      auto path = UnescapeKey(e.partition_key);
      if (path.ok()) part.path = *path;
    }
  }
  if (e.row_key == kDotRowKey) {
    part.dot = std::move(e);
  } else {
    std::string rk = e.row_key;
    part.entries[rk] = std::move(e);
  }
}

}  // namespace

const ScannedPartition* TableScan::Partition(const std::string& dir_path) const {
  auto it = partitions.find(PartitionKeyForDirectory(dir_path));
  return it == partitions.end() ? nullptr : &it->second;
}

const Entity* TableScan::Find(const std::string& dir_path, const std::string& name) const {
  const ScannedPartition* part = Partition(dir_path);
  if (!part) return nullptr;
  auto it = part->entries.find(RowKeyForName(name));
  return it == part->entries.end() ? nullptr : &it->second;
}

bool IsDirectoryPartitionKey(const std::string& pk) {
  return pk.rfind("%2F", 0) == 0 || IsHashedKey(pk);
}

uint32_t EntryType(const Entity& entry) {
  return static_cast<uint32_t>(entry.GetInt64("mode")) & S_IFMT;
}

namespace {

// Every page of `q` into `scan`.
Status ScanPages(TableStore& store, const std::string& table, const QueryOptions& q,
                 TableScan* scan, const std::function<void(uint64_t)>& progress) {
  std::string npk, nrk;
  do {
    auto page = store.QueryPage(table, q, npk, nrk);
    if (!page.ok()) return page.status();
    for (Entity& e : page->entities) AddRow(std::move(e), scan);
    npk = page->next_partition_key;
    nrk = page->next_row_key;
    if (progress) progress(scan->rows);
  } while (!npk.empty() || !nrk.empty());
  return Status::Ok();
}

}  // namespace

Result<TableScan> ScanTable(TableStore& store, const std::string& table,
                            const std::function<void(uint64_t)>& progress) {
  TableScan scan;
  Status s = ScanPages(store, table, QueryOptions{}, &scan, progress);
  if (!s.ok()) return s.WithContext("read table " + table);
  ResolveHashedPaths(&scan);
  return scan;
}

Result<TableScan> ScanPartition(TableStore& store, const std::string& table,
                                const std::string& dir_path) {
  TableScan scan;
  QueryOptions q;
  q.filter = FilterPartition(PartitionKeyForDirectory(dir_path));
  Status s = ScanPages(store, table, q, &scan, {});
  if (!s.ok()) return s.WithContext("read directory " + dir_path);
  for (auto& [pk, part] : scan.partitions) part.path = dir_path;
  return scan;
}

Result<uint64_t> ReserveInodes(TableStore& store, const std::string& table, uint64_t count,
                               uint64_t floor) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    auto counter = store.Get(table, kFsRowsPartition, kInoCounterRowKey);
    if (!counter.ok()) return counter.status().WithContext("inode counter");
    uint64_t first = static_cast<uint64_t>(counter->GetInt64("next", kRootIno + 1));
    if (first < floor) first = floor;
    if (count == 0 && first == static_cast<uint64_t>(counter->GetInt64("next"))) return first;
    Entity updated{kFsRowsPartition, kInoCounterRowKey,
                   {{"next", static_cast<int64_t>(first + count)}}, {}};
    auto r = store.Update(table, updated, UpdateMode::kReplace, Condition::IfMatch(counter->etag));
    if (r.ok()) return first;
    if (!r.status().Is(Code::kPreconditionFailed)) return r.status().WithContext("inode counter");
    std::this_thread::sleep_for(std::chrono::milliseconds(1 + attempt * 2));
  }
  return Status(Code::kInternal, "inode counter: too many concurrent allocations");
}

Entity DirectoryRow(const std::string& dir_path, uint64_t ino) {
  Entity dot{PartitionKeyForDirectory(dir_path), kDotRowKey, {}, {}};
  dot.properties["ino"] = static_cast<int64_t>(ino);
  if (IsHashedKey(dot.partition_key)) dot.properties["path"] = Binary{dir_path};
  return dot;
}

TableOperation TouchDirectory(const std::string& dir_path, const Condition& condition,
                              uint64_t ino, int64_t touched_ns) {
  Entity dot = ino > 0 ? DirectoryRow(dir_path, ino)
                       : Entity{PartitionKeyForDirectory(dir_path), kDotRowKey, {}, {}};
  dot.properties["touched"] = touched_ns != 0 ? touched_ns : NowNs();
  return TableOperation::Merge(std::move(dot), condition);
}

}  // namespace stampfs
