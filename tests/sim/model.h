// The POSIX reference model: what one local filesystem would hold after the
// same operations (invariant 3: one mount, no faults, the tree equals it).
// Files are nodes by id so an open file outlives its name (unlink while
// open) and follows renames.
#pragma once

#include <cerrno>
#include <cstdint>
#include <map>
#include <string>

namespace stampfs::sim {

class PosixModel {
 public:
  enum class Type { kFile, kDir, kLink };
  struct Node {
    Type type = Type::kFile;
    uint32_t mode = 0;  // permission bits
    std::string target;
    uint64_t file = 0;  // kFile: id in files_
  };

  PosixModel();

  // Each returns 0 or the errno POSIX gives.
  int Create(const std::string& path, bool excl, bool trunc, uint64_t* file);
  int Open(const std::string& path, bool trunc, uint64_t* file);
  void Write(uint64_t file, uint64_t off, const std::string& data);
  uint64_t Size(uint64_t file) const { return files_.at(file).size(); }
  int Truncate(const std::string& path, uint64_t size);
  void TruncateFile(uint64_t file, uint64_t size);
  int Unlink(const std::string& path);
  int Mkdir(const std::string& path);
  int Rmdir(const std::string& path);
  int Symlink(const std::string& path, const std::string& target);
  int Rename(const std::string& from, const std::string& to, bool noreplace);
  int Chmod(const std::string& path, uint32_t mode);
  int SetXattr(const std::string& path);

  // The tree as lines "path type mode size/target [content]", one a line.
  std::string Render(bool with_content) const;
  const std::string& Content(uint64_t file) const { return files_.at(file); }

 private:
  // 0 when `path`'s parent is an existing directory, else ENOENT/ENOTDIR.
  int ParentOk(const std::string& path) const;
  const Node* Find(const std::string& path) const;
  bool HasChildren(const std::string& dir) const;

  std::map<std::string, Node> tree_;  // path -> node; "/" is the root
  std::map<uint64_t, std::string> files_;
  uint64_t next_file_ = 1;
};

// "/a/b" -> "/a"; "/a" -> "/".
std::string ParentOf(const std::string& path);
// Renders a byte string for traces: printable ASCII kept, the rest as \xNN.
std::string Printable(const std::string& s, size_t max = 80);

}  // namespace stampfs::sim
