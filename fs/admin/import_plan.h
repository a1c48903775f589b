// Internal to the importer (fs/admin/import.cc): the tree that a container's blob
// names describe, and the table writes that bring a table to it. Split out
// so each step stays small and testable through Importer.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fs/admin/import.h"
#include "fs/namespace/table_scan.h"

namespace stampfs {

struct BlobTree {
  struct Child {
    bool dir = false;
    const BlobItem* blob = nullptr;  // a file's blob (directories: none)
  };
  struct Dir {
    const BlobItem* marker = nullptr;  // the folder-marker blob, if any
    std::map<std::string, Child> children;
  };
  // By path ("/", "/a", "/a/b"): a parent sorts before its children.
  std::map<std::string, Dir> dirs;
};

// A zero-length blob with metadata hdi_isfolder=true (blobfuse) or a
// zero-length blob whose name ends in '/': it stands for a directory.
bool IsDirectoryMarker(const BlobItem& blob);
// The path of the directory a marker stands for ("a/b/" -> "/a/b").
std::string MarkerPath(const BlobItem& blob);

// The tree of `blobs`; blobs that cannot be mapped go to `problems`.
BlobTree BuildBlobTree(const std::vector<BlobItem>& blobs, std::vector<ImportProblem>* problems);

// One write to a directory's partition.
struct PendingWrite {
  enum class Kind { kInsertFile, kInsertDir, kUpdate, kDelete };
  Kind kind = Kind::kInsertFile;
  Entity entity;           // inserts: all but a new inode number; updates: merged properties
  std::string etag;        // kUpdate / kDelete: If-Match
  std::string child_path;  // kInsertDir: the directory the entry names
  std::string path;        // for reports
  uint64_t ino = 0;        // kUpdate / kDelete: the entry's inode
};

// What to write into one directory's partition.
struct DirWork {
  std::string path;
  uint64_t ino = 0;       // 0 until AssignInodes when the directory is new
  int64_t mtime_ns = 0;   // a new directory's mtime, kept as its "." row's "touched"
  bool write_dot = false;  // the "." row is missing: create it (with ino)
  bool blocked = false;    // the table holds a non-directory at or above this path
  std::string blocked_reason;
  bool failed = false;     // a write to this partition failed
  std::vector<PendingWrite> writes;
};

struct ImportPlan {
  std::map<std::string, DirWork> dirs;  // by path
  uint64_t new_inodes = 0;
  uint64_t unchanged = 0;
  uint64_t stale = 0;
  uint64_t total_writes = 0;
};

struct PlanInputs {
  const BlobTree& tree;
  const TableScan& scan;
  const std::set<std::string>& blob_names;  // every listed blob
  const ImportOptions& options;
  int64_t now_ns = 0;
  // The scan holds only the planned directory's partition (and the "."
  // rows of new subdirectories, if any): subdirectories with an entry are
  // left as they are (PlanDirectory).
  bool one_directory = false;
};

ImportPlan PlanImport(const PlanInputs& in, std::vector<ImportProblem>* problems);
// The writes that bring directory `dir` of the tree (and nothing above it)
// to its blobs: new subdirectories get entries and "." rows, their contents
// are left for their own turn (fs/admin/dir_refresh.h).
ImportPlan PlanDirectory(const PlanInputs& in, const std::string& dir,
                         std::vector<ImportProblem>* problems);
// Gives new directories and new files consecutive numbers from `first`.
void AssignInodes(uint64_t first, ImportPlan* plan);
// The number of components of a directory's path ("/": 0, "/a/b": 2).
size_t Depth(const DirWork& w);
// Directories of the plan, deepest first (the order the writes must follow).
std::vector<DirWork*> DeepestFirst(ImportPlan* plan);
// Runs `fn` on each of `items` with up to `width` threads.
template <typename T, typename Fn>
void ForEachParallel(const std::vector<T>& items, size_t width, const Fn& fn) {
  if (items.size() <= 1 || width <= 1) {
    for (const T& item : items) fn(item);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  for (size_t t = 0; t < std::min(width, items.size()); ++t) {
    threads.emplace_back([&] {
      for (size_t i = next++; i < items.size(); i = next++) fn(items[i]);
    });
  }
  for (std::thread& t : threads) t.join();
}

// Writes a planned import (inodes assigned), each directory deepest first:
// its entry writes in transactions of at most 99 plus the merge of its "."
// row (creating it when new). A directory whose partition failed is not
// entered in its parent, so a failure never leaves an entry without its "."
// row; planning again finishes it. `written` gets the count of writes done.
void WritePlan(TableStore& table, const std::string& table_name, ImportPlan& plan,
               ImportReport* report, const std::function<void(uint64_t)>& written = {});

}  // namespace stampfs
