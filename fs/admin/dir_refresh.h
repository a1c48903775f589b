// What other tools changed in the container, adopted one directory (or one
// blob) at a time by a live mount (issue 30; docs/design.md, "Other tools'
// changes"): the work of `stampfs import --refresh` (fs/admin/import.h) for
// one partition, with its mapping and its writes (PlanDirectory, WritePlan).
//
// Rules of a live mount, where stampfs writers may be half way through:
// - A blob with stampfs metadata ("stampfs") is a stampfs mount's: its
//   entry is that mount's to write (a commit between its Put and its entry
//   merge, a rename's copy, an exchange, a hard link's blob). It is never
//   adopted here, neither as a new file nor as a new version; `stampfs
//   import` adopts it when asked.
// - An entry is removed only when its blob is gone and a read of the blob
//   confirms it (a 404, not a listing that may lag); only entries with a
//   committed version (betag) whose blob is the path's own, in this
//   directory's prefix: a hard link, an exchange in progress or a long
//   path's hashed blob is never judged by a listing.
// - Every write is conditional (inserts; merges and deletes If-Match the
//   entry read), so a race with any writer fails the transaction and the
//   next refresh starts from what is stored.
// - New subdirectories (a prefix "d/" or a folder marker without an entry)
//   get an entry and a "." row; their contents wait for their own refresh.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "fs/admin/import.h"
#include "fs/namespace/offline.h"

namespace stampfs {

struct BlobTree;  // fs/admin/import_plan.h
struct ImportPlan;

class DirRefresher {
 public:
  // `options`: container, table, uid, gid, now_ns (refresh is implied).
  DirRefresher(TableStore& table, BlobStore& blobs, ImportOptions options);

  // Brings directory `dir_path`'s entries to its blobs: one List Blobs of its
  // prefix with the '/' delimiter, one query of its partition, then the
  // writes. kNotFound when the table has no such directory. With
  // `reads_within` > 0 the reads (not the writes) are a revalidation
  // (fs/namespace/offline.h): cancelled after that long without an answer.
  Result<ImportReport> RefreshDirectory(const std::string& dir_path,
                                        std::chrono::milliseconds reads_within = {});

  // Brings the entry of blob `blob` (and the directories above it) to what
  // a read of the blob finds now: an event's hint (fs/admin/change_events.h).
  Result<ImportReport> RefreshBlob(const std::string& blob);

  // The directory a blob name's parent prefix stands for ("a/b/c" -> "/a/b");
  // nullopt when no path maps to it (fs/admin/import_plan.h, BuildBlobTree).
  static std::optional<std::string> DirectoryOfBlob(const std::string& blob);

 private:
  struct Seen {
    std::vector<BlobItem> blobs;        // read or listed, metadata included
    std::vector<std::string> prefixes;  // "d/" under the directory's prefix
    std::vector<std::string> absent;    // blob names read and found missing
    bool listing = false;               // blobs and prefixes are the whole directory
    bool foreign_prefixes = false;      // each prefix is known to hold another tool's blob
  };
  // `reads`: ended before the writes (RefreshDirectory).
  Result<ImportReport> Adopt(const std::string& dir_path, Seen seen,
                             std::optional<RevalidationDeadline>* reads = nullptr);
  Status EnsureDirectory(const std::string& dir_path, ImportReport* report, int depth);
  void DropStampfsPrefixes(const BlobTree& tree, ImportPlan* plan);

  TableStore& table_;
  BlobStore& blobs_;
  ImportOptions options_;
};

}  // namespace stampfs
