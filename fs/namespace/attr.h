// File attributes as stampfs keeps them, and their table-entity encoding.
//
// A directory entry is the entity (PartitionKey = key of the parent path,
// RowKey = key of the name) with these properties:
//   ino (Int64)  mode (Int64, st_mode with type bits)  uid gid (Int64)
//   size (Int64)  mtime ctime atime (Int64, ns since epoch)
//   blob (String, files: blob name)  betag (String, files: blob ETag committed)
//   bsize (Int64, files: base block size of the blob's block layout, fs/data/block_layout.h)
//   target (Binary, symlinks)  rdev (Int64, character and block devices)
//   xattr (Binary, see xattr.h)
//   name (Binary, only when the RowKey is hashed: the real name)
// A directory's own row (RowKey ".") holds ino and, when the PartitionKey is
// hashed, path (Binary). The root directory's attributes live in its "." row.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "storage/table_store.h"

namespace stampfs {

inline constexpr uint64_t kRootIno = 1;
inline constexpr const char* kDotRowKey = ".";

// An entry property naming the blob versions (ETags, newest first, at most
// kMovedFromKept) whose server-side copy its blob is: a rename sets it, a
// commit of new data removes it. An open file based on one of them follows
// the rename; any other version at the new name is another writer's.
inline constexpr char kMovedFromProperty[] = "movedfrom";
inline constexpr size_t kMovedFromKept = 4;

struct Attr {
  uint64_t ino = 0;
  uint32_t mode = 0;  // st_mode, type bits included
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t size = 0;
  int64_t atime_ns = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint64_t rdev = 0;   // device number of a character or block device
  uint32_t nlink = 0;  // 0: the default (2 for a directory, 1 otherwise)
  bool removed = false;  // no name left (unlinked while open): st_nlink 0

  bool IsDir() const { return S_ISDIR(mode); }
  bool IsRegular() const { return S_ISREG(mode); }
  bool IsSymlink() const { return S_ISLNK(mode); }
};

// Attributes from an entry entity; kCorruption when ino or mode is missing.
Result<Attr> AttrFromEntity(const Entity& entity);
// Writes every attribute property (not blob/target/xattr) into `entity`.
void AttrToEntity(const Attr& attr, Entity* entity);

// stat(2) view; nlink is 0 when removed, attr.nlink when set, else 2 for
// directories and 1 otherwise.
struct stat ToStat(const Attr& attr, uint32_t blksize = 4096);

int64_t NowNs();

}  // namespace stampfs
