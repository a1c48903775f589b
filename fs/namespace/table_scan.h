// A whole stampfs table read into memory and grouped by directory partition,
// for the offline tools (fs/admin/import.h, fs/admin/fsck.h); plus the pieces of the
// table protocol they share with fs/namespace/namespace*.cc (docs/design.md): the
// "." row of a directory, the merge of it that ends every change to the
// directory's entries, and inode ranges from ~fs/ino-counter.
//
// Namespace keeps its copies of these private; the rules are the same:
// - a directory's "." row (PartitionKey = key of its path, RowKey ".") holds
//   ino and, when the key is hashed, the path (Binary);
// - ~fs/ino-counter holds "next", the first unused inode number; a range is
//   taken by a read-modify-write conditional on the counter's ETag.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "storage/status.h"
#include "storage/table_store.h"

namespace stampfs {

inline constexpr const char* kFsRowsPartition = "~fs";
inline constexpr const char* kInoCounterRowKey = "ino-counter";
inline constexpr const char* kFormatRowKey = "format";
inline constexpr const char* kImportRowKey = "import";  // state of the last import
inline constexpr const char* kIntentsPartition = "~intents";

// One directory partition: its "." row and its entries.
struct ScannedPartition {
  std::string partition_key;
  // The directory's path: the unescaped key, or the "." row's path property
  // (or the entry that names it) when the key is hashed; empty when unknown.
  std::string path;
  std::optional<Entity> dot;
  std::map<std::string, Entity> entries;  // by RowKey, without "."
};

struct TableScan {
  std::map<std::string, ScannedPartition> partitions;  // directory partitions by key
  std::map<std::string, Entity> fs_rows;               // ~fs rows by RowKey
  std::vector<Entity> other;                           // rows of any other partition
  uint64_t rows = 0;

  const ScannedPartition* Partition(const std::string& dir_path) const;
  // The entry `name` of directory `dir_path`, or nullptr.
  const Entity* Find(const std::string& dir_path, const std::string& name) const;
};

// Reads every row of `table` (all pages). `progress` gets the row count so far.
Result<TableScan> ScanTable(TableStore& store, const std::string& table,
                            const std::function<void(uint64_t)>& progress = {});

// Reads one directory's partition (all pages) into a scan of its own.
Result<TableScan> ScanPartition(TableStore& store, const std::string& table,
                                const std::string& dir_path);
// True for keys that can name a directory partition ("%2F..." or hashed).
bool IsDirectoryPartitionKey(const std::string& partition_key);

// The type bits of an entry (S_IFDIR, S_IFREG, S_IFLNK; 0 when no mode).
uint32_t EntryType(const Entity& entry);

// Takes `count` consecutive inode numbers from ~fs/ino-counter (one
// conditional update, retried when another writer got there first) and
// returns the first. `floor`, when larger than the counter, is where the
// range starts instead (fsck uses it when the counter fell behind).
Result<uint64_t> ReserveInodes(TableStore& store, const std::string& table, uint64_t count,
                               uint64_t floor = 0);

// The "." row of a directory with inode `ino`.
Entity DirectoryRow(const std::string& dir_path, uint64_t ino);
// The merge of a directory's "." row that ends a change to its entries (its
// ETag changes; "touched" = `touched_ns`, 0 for now). `ino` > 0 also writes
// the row's ino and path, so with Condition::None() it creates a missing row.
TableOperation TouchDirectory(const std::string& dir_path, const Condition& condition,
                              uint64_t ino = 0, int64_t touched_ns = 0);

}  // namespace stampfs
