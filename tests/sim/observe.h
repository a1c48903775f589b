// What the shared account holds, read directly from the fakes (no mount, no
// cache): every entry by path and by inode with the content of the blob it
// names, and every blob. The invariants compare these snapshots step by step.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "storage/blob_store.h"
#include "storage/table_store.h"

namespace stampfs::sim {

struct ObservedEntry {
  std::string path;
  uint64_t ino = 0;
  uint32_t mode = 0;  // with type bits
  uint64_t size = 0;
  std::string blob;           // files: the blob the entry names
  std::string betag;          // files: "" before the first commit
  std::string target;         // symlinks
  std::string content;        // files: the blob's bytes ("" before the first commit)
  bool blob_missing = false;  // a committed betag whose blob is gone
};

struct Snapshot {
  bool ok = false;
  std::string error;
  std::map<std::string, ObservedEntry> by_path;  // "/" is not listed
  std::map<uint64_t, std::string> path_of;       // ino -> path
  std::map<std::string, std::string> blobs;      // blob name -> content
  size_t intents = 0;

  const ObservedEntry* Ino(uint64_t ino) const;
  // Paths of conflict copies (NAME.conflict-*) anywhere.
  std::vector<const ObservedEntry*> ConflictCopies() const;
};

Snapshot Observe(TableStore& table, BlobStore& blobs);

bool IsConflictCopyName(const std::string& name);

}  // namespace stampfs::sim
