// The kernel's view of inodes: stable inode number -> (parent, name), with the
// lookup count the kernel holds. Paths are derived by walking parents, so a
// directory rename moves every descendant by changing one node.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace stampfs {

class InodeTable {
 public:
  InodeTable();

  // Records that the kernel learned `ino` as `name` in `parent` (one more
  // lookup). A known ino is re-pointed (it may have been renamed elsewhere).
  void Remember(uint64_t ino, uint64_t parent, const std::string& name, bool is_dir);
  // Re-points without counting a lookup (after our own rename).
  void Move(uint64_t ino, uint64_t new_parent, const std::string& new_name);
  // Drops `n` lookups; the node goes when none remain and it is not pinned.
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

 private:
  struct Node {
    uint64_t parent = 0;
    std::string name;
    uint64_t lookups = 0;
    uint64_t pins = 0;
    bool is_dir = false;
    bool detached = false;
  };
  void MaybeErase(uint64_t ino);  // REQUIRES: mu_ held

  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Node> nodes_;  // GUARDED_BY(mu_)
};

// Joins a directory path and a name: ("/", "a") -> "/a", ("/a", "b") -> "/a/b".
std::string JoinPath(const std::string& dir, const std::string& name);
// The parent directory of a path ("/a/b" -> "/a", "/a" -> "/").
std::string ParentPath(const std::string& path);
// The blob holding a file's data: the path without its leading '/', with
// '\' and bytes that are not UTF-8 stored as U+F000 + byte.
std::string BlobNameFor(const std::string& path);

}  // namespace stampfs
