// The kernel's view of inodes: stable inode number -> (parent, name), with the
// lookup count the kernel holds. Paths are derived by walking parents, so a
// directory rename moves every descendant by changing one node.
//
// Invariant: every ancestor of a known node is known. A node goes only when
// it has no lookups, no pins and no known children, so a file pinned by this
// mount (open, or its commit queued) keeps its path after the kernel forgot
// its directories (memory pressure, drop_caches).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace stampfs {

class InodeTable {
 public:
  InodeTable();

  // Records that the kernel learned `ino` as `name` in `parent` (one more
  // lookup). A known ino is re-pointed (it may have been renamed elsewhere).
  void Remember(uint64_t ino, uint64_t parent, const std::string& name, bool is_dir);
  // Re-points without counting a lookup (after our own rename).
  void Move(uint64_t ino, uint64_t new_parent, const std::string& new_name);
  // Drops `n` lookups; the node goes when none remain, it is not pinned and
  // no known node is below it.
  void Forget(uint64_t ino, uint64_t n);
  // Pins a node while files are open on it (unlinked-but-open files too).
  void Pin(uint64_t ino);
  void Unpin(uint64_t ino);
  // Marks a node as removed from the namespace (unlink/rmdir): it keeps its
  // number until forgotten, but has no path any more.
  void Detach(uint64_t ino);
  // Detached (and still known: pinned by an open file, or looked up).
  bool IsDetached(uint64_t ino) const;
  // The kernel or an open file still holds the node.
  bool Contains(uint64_t ino) const;

  // "/a/b" for a node, "/" for the root; nullopt for unknown or detached nodes.
  std::optional<std::string> PathOf(uint64_t ino) const;
  bool IsDir(uint64_t ino) const;
  size_t size() const;
  // (ino, lookups) of every node the kernel holds lookups of but the root:
  // what a FORGET of everything would drop (the simulation's drop_caches).
  std::vector<std::pair<uint64_t, uint64_t>> Lookups() const;

 private:
  struct Node {
    uint64_t parent = 0;
    std::string name;
    uint64_t lookups = 0;
    uint64_t pins = 0;
    uint64_t children = 0;     // known nodes whose `parent` this is (held_parent)
    bool held_parent = false;  // counted in nodes_[parent].children
    bool is_dir = false;
    bool detached = false;
  };
  // REQUIRES: mu_ held (these three).
  void HoldParent(uint64_t ino, Node& n);
  void ReleaseParent(Node& n);
  void MaybeErase(uint64_t ino);

  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Node> nodes_;  // GUARDED_BY(mu_)
};

// Joins a directory path and a name: ("/", "a") -> "/a", ("/a", "b") -> "/a/b".
std::string JoinPath(const std::string& dir, const std::string& name);
// The parent directory of a path ("/a/b" -> "/a", "/a" -> "/").
std::string ParentPath(const std::string& path);
// The blob holding a file's data: the path without its leading '/', with
// '\' and bytes that are not UTF-8 stored as U+F000 + byte. A path whose
// name that would be is over Azure's limits (1,024 characters, 254
// segments) is stored as ".stampfs-long/<sha256 hex of the path>": stable
// for the path, so renames, links and fsck treat it as any other; the path
// itself is in the table (the entry's keys and its directory's ".").
std::string BlobNameFor(const std::string& path);
inline constexpr size_t kMaxBlobNameChars = 1024;
inline constexpr size_t kMaxBlobSegments = 254;
inline constexpr char kLongPathBlobPrefix[] = ".stampfs-long/";
// Whether `blob` is a long path's hashed name (never a path's own name).
bool IsLongPathBlob(const std::string& blob);

}  // namespace stampfs
