// fsck: checks a container's table against its blobs and, with `repair`,
// repairs what it can (docs/design.md, "Import and fsck").
//
// Checks, and the repair of each:
// - ~fs rows (format, ino-counter) and the root "." row missing: recreated;
//   the counter at or below an inode number in use: raised past it.
// - a "." row without a directory entry in its parent (an unfinished mkdir):
//   deleted when its partition is empty; otherwise entered in its parent as
//   a directory when the parent exists and the name is free (this is also
//   what a crash inside a directory rename or an import leaves).
// - a "." row whose ino differs from its entry's: set to the entry's.
// - a directory entry whose "." row is gone (an unfinished rmdir): the entry
//   is removed when the partition is empty, else the "." row is recreated.
// - entries of a partition that has neither a "." row nor an entry naming
//   it: reported only.
// - a file entry whose blob is missing (and that has a committed betag): the
//   entry is removed; a file whose betag differs from its blob's ETag (a
//   crash between blob commit and entry update): the entry adopts the blob's
//   size, mtime (stampfs metadata, else Last-Modified) and ETag.
// - blobs that no entry names (folder markers count as named by their
//   directory): imported (fs/admin/import.h) at the end of a repair.
// - duplicate inode numbers: the entry created later (ctime, then path)
//   gets a new number.
// - unfinished renames (~intents rows): reported; a repair rolls them
//   forward first (Namespace::RollForwardIntents), then checks the result.
// - with dir_markers, a directory without its marker blob (fs/namespace/dir_marker.h):
//   written. A marker without a directory is a blob without an entry.
// - rows stampfs does not know (other partitions, entries without ino or
//   mode): reported.
//
// Repairs are conditional writes (If-Match the ETag fsck read) and entry
// changes merge the directory's "." row like every other change. fsck reads a
// snapshot without locking: run --repair while no mount writes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fs/namespace/table_scan.h"
#include "storage/blob_store.h"
#include "storage/status.h"
#include "storage/table_store.h"

namespace stampfs {

enum class FsckKind {
  kMissingFsRow,
  kInoCounter,
  kOrphanDot,        // "." row without an entry (unfinished mkdir)
  kDotInoMismatch,
  kMissingDot,       // directory entry without "." (unfinished rmdir)
  kOrphanPartition,
  kMissingBlob,
  kEtagMismatch,
  kSharedBlob,  // two file entries name one blob: reported, never repaired into
  kBlobWithoutEntry,
  kDuplicateIno,
  kUnknownRow,
  kIntent,
  kMissingMarker,  // with dir_markers: a directory without its marker blob
  kLinkCount,      // a hard-linked file's record counts other than its names
  kOrphanInode,    // an inode record no name uses (an unfinished link or unlink)
  kMissingInode,   // a linked name without its inode record: no data
  kStaleLinkBlob,  // a copy or old blob an unfinished move of a linked file's blob left
  kLinkPaths,      // a record's paths hint names other paths than its names
};

// A short stable name ("missing-blob", "etag-mismatch", ...).
const char* FsckKindName(FsckKind kind);

struct FsckFinding {
  FsckKind kind;
  std::string where;   // a path, blob name or table key
  std::string detail;
  bool repaired = false;
  std::string repair;  // what the repair did, or why it did not
};

struct FsckReport {
  uint64_t rows = 0;
  uint64_t blobs = 0;
  uint64_t directories = 0;
  uint64_t files = 0;
  std::vector<FsckFinding> findings;

  uint64_t unrepaired() const;
  bool clean() const { return unrepaired() == 0; }
};

struct FsckOptions {
  std::string container;
  std::string table;
  bool repair = false;
  // -o dir_markers mounts use this container: every directory has a marker
  // blob (missing ones are reported, and written by a repair), and renames
  // rolled forward move markers.
  bool dir_markers = false;
  uint32_t uid = 0;  // owner of directories and imports a repair creates
  uint32_t gid = 0;
  std::function<int64_t()> now_ns;  // default: the system clock
};

class Fsck {
 public:
  Fsck(TableStore& table, BlobStore& blobs, FsckOptions options);

  // An error (unreachable endpoint, missing container or table) means
  // nothing could be checked.
  Result<FsckReport> Run();

 private:
  struct EntryRef {
    ScannedPartition* part;
    Entity* entry;
    std::string name;
    std::string path;
  };
  Status Load();
  std::vector<EntryRef> Entries(uint32_t type);
  FsckFinding& Add(FsckKind kind, const std::string& where, const std::string& detail);
  void Done(FsckFinding& f, const Status& s, const std::string& what);
  Status Commit(ScannedPartition& part, std::vector<TableOperation> ops);
  Status MergeEntry(const EntryRef& ref, const std::map<std::string, PropertyValue>& props);
  Status RemoveEntry(const EntryRef& ref);

  bool CheckIntents();
  void CheckUnknownRows();
  void CheckFsRows();
  void CheckDotRows();
  void RepairOrphanDot(ScannedPartition& part, FsckFinding& f, const Entity* existing);
  void CheckDirectoryEntries();
  void CheckOrphanPartitions();
  void CheckFiles();
  void CheckDuplicateInos();
  void CheckLinks();  // fs/admin/fsck_links.cc
  void CheckUnreferencedBlobs();
  void CheckDirectoryMarkers();
  void RepairByImport(const std::vector<size_t>& findings);

  TableStore& table_;
  BlobStore& blobs_;
  FsckOptions options_;
  TableScan scan_;
  std::vector<BlobItem> blob_list_;
  std::map<std::string, const BlobItem*> blobs_by_name_;
  std::set<std::pair<std::string, std::string>> removed_;  // (pk, rk) deleted by a repair
  std::set<std::string> handled_blobs_;  // blobs CheckLinks found (not "without entry")
  uint64_t max_ino_ = 0;
  FsckReport report_;
};

}  // namespace stampfs
