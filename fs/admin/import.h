// Import: entities for the blobs of a container, so a container written by
// other tools (or a stampfs container whose table is gone) mounts as a tree.
//
// Mapping (docs/design.md, "Import and fsck"):
// - A blob "a/b/c" is the file /a/b/c; "/a" and "/a/b" become directories.
// - A zero-length blob with metadata hdi_isfolder=true (blobfuse), or a
//   zero-length blob whose name ends in '/', is a directory marker: the
//   directory exists even when empty.
// - Metadata written by stampfs (mode, uid, gid as decimal; mtime in ns;
//   bsize) restores those attributes; otherwise files are 0644, directories
//   0755, owned by the importing user, with mtime = Last-Modified (implicit
//   directories: the time of the import).
// - Names that cannot be mapped are reported with the reason and counted,
//   never dropped silently: empty components ("a//b", a leading '/', a
//   trailing '/' on a blob that is not an empty marker), components "." and
//   "..", components over 255 bytes, a file blob "a" beside blobs "a/..."
//   (the directory wins), and names the table already holds as another kind.
//
// Writes: new inode numbers come from ~fs/ino-counter in one range per run.
// Directories are written deepest first, each partition's operations through
// ExecuteInBatches with the merge of its "." row last, so a new directory's
// "." row and entries exist before its entry in the parent (the mkdir order)
// and every directory's "." ETag changes after its entries.
//
// Idempotent: an entry that exists is left alone when its betag equals the
// blob's ETag. `refresh` also updates entries whose blob changed (size,
// mtime, betag) and removes file entries with a committed betag whose blob is
// gone; without it such entries are only counted. ~fs/import records
// "running" while an import writes and "done" after a clean one.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "storage/blob_store.h"
#include "storage/status.h"
#include "storage/table_store.h"

namespace stampfs {

struct ImportPlan;  // fs/admin/import_plan.h

struct ImportProgress {
  enum class Phase { kListing, kReading, kWriting };
  Phase phase = Phase::kListing;
  uint64_t blobs_listed = 0;
  uint64_t rows_read = 0;
  uint64_t ops_total = 0;    // entry writes planned
  uint64_t ops_written = 0;  // entry writes done
};

struct ImportOptions {
  std::string container;
  std::string table;
  bool refresh = false;
  uint32_t uid = 0;  // owner of entries without stampfs metadata
  uint32_t gid = 0;
  std::function<int64_t()> now_ns;  // default: the system clock
  std::function<void(const ImportProgress&)> progress;  // optional
};

struct ImportProblem {
  std::string blob;
  std::string reason;
};

struct ImportReport {
  uint64_t blobs = 0;
  uint64_t files_created = 0;
  uint64_t dirs_created = 0;
  uint64_t unchanged = 0;  // entries that already matched their blobs
  uint64_t updated = 0;    // refresh: blob ETag changed, entry updated
  uint64_t stale = 0;      // no refresh: blob ETag changed, entry left alone
  uint64_t removed = 0;    // refresh: blob gone, entry removed
  uint64_t failed_directories = 0;  // partitions whose writes failed
  std::vector<ImportProblem> problems;  // unmapped blobs, with reasons
  std::vector<std::string> removed_paths;
  std::vector<uint64_t> changed_inos;   // entries updated or removed (their inodes)
  std::vector<std::string> errors;      // write failures, one line each

  bool clean() const { return problems.empty() && errors.empty(); }
  // Entries written: files and directories created, updated, removed.
  uint64_t changes() const { return files_created + dirs_created + updated + removed; }
  // "F files and D directories new, U updated, R removed".
  std::string ChangeCounts() const;
};

class Importer {
 public:
  Importer(TableStore& table, BlobStore& blobs, ImportOptions options);

  // Lists the container, reads the table, writes what is missing. Fails
  // (without writing) when the container or table cannot be read; a failed
  // directory write is counted in the report and the rest goes on.
  Result<ImportReport> Run();

  // True when a mount should import before serving: the table has no
  // ~fs/import row, its root directory is empty and the container has blobs;
  // or an import started and did not finish.
  static Result<bool> ShouldAutoImport(TableStore& table, BlobStore& blobs,
                                       const std::string& container,
                                       const std::string& table_name);
  // Whether the first page of the container's listing holds a blob stampfs
  // wrote (metadata "stampfs"): a stampfs container whose table is gone.
  static Result<bool> HoldsStampfsBlobs(BlobStore& blobs, const std::string& container);

 private:
  Status EnsureFilesystem();
  Result<std::vector<BlobItem>> ListAll();
  Status MarkImport(const std::string& state, const ImportReport* report);
  void Write(ImportPlan& plan, ImportReport* report);
  void Report(ImportProgress::Phase phase);

  TableStore& table_;
  BlobStore& blobs_;
  ImportOptions options_;
  ImportProgress progress_;
};

}  // namespace stampfs
