// Hard links (docs/design.md, "Hard links"): a file, symlink or special file
// with more than one name keeps its attributes and data (a file's blob, a
// symlink's target, a device's rdev) in one inode record, PartitionKey "~inodes",
// RowKey the inode number (20 digits), with every name entry marked
// "linked"=1 and holding no blob of its own. Files never linked have no
// record and cost nothing more.
//
// Record properties: the entry's (ino, mode, uid, gid, size, times, xattr;
// blob, betag, bsize; target; rdev) plus "nlink" (Int64, the names; never below the
// names the table holds: raised before a name is inserted, lowered after one
// is deleted) and "paths" (Binary, NUL-separated paths of the names, a hint:
// added before a name is inserted, removed after; a directory rename above a
// name updates it after the rows moved, so a crash can leave it stale: every
// user reads each path back, and fsck --repair refreshes it). The blob is named by one of the paths (the first
// name linked); unlinking or renaming that name first copies the blob to a
// surviving name's path (none known: LinkBlobPath): copy, the record names the copy (and the old blob
// as "moving"), the old blob deleted, "moving" dropped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "storage/table_store.h"

namespace stampfs {

inline constexpr char kInodesPartition[] = "~inodes";
inline constexpr char kLinkedProperty[] = "linked";
inline constexpr char kLinkPathsProperty[] = "paths";
// The record's blob before a move, until that blob is deleted.
inline constexpr char kMovingProperty[] = "moving";

std::string InodeRowKey(uint64_t ino);
// Where the blob of a linked file goes when none of its names' paths is
// known: "/.stampfs-links/<ino>" (blob ".stampfs-links/<ino>").
std::string LinkBlobPath(uint64_t ino);
// A name entry whose attributes and data are in its inode record.
bool IsLinkName(const Entity& entry);
std::vector<std::string> LinkPaths(const Entity& record);
void SetLinkPaths(const std::vector<std::string>& paths, Entity* record);
// Adds `path` once / removes every copy of it.
void AddLinkPath(const std::string& path, Entity* record);
void RemoveLinkPath(const std::string& path, Entity* record);

}  // namespace stampfs
