#include "fs/namespace/inode_table.h"

#include <algorithm>

#include "fs/namespace/attr.h"
#include "storage/auth.h"
#include "storage/table_keys.h"
#include "storage/utf8.h"

namespace stampfs {

InodeTable::InodeTable() {
  Node root;
  root.parent = kRootIno;
  root.is_dir = true;
  root.lookups = 1;  // the kernel never forgets the root
  nodes_[kRootIno] = root;
}

void InodeTable::Remember(uint64_t ino, uint64_t parent, const std::string& name, bool is_dir) {
  std::lock_guard<std::mutex> lock(mu_);
  Node& n = nodes_[ino];
  n.lookups++;
  if (!n.held_parent || n.parent != parent) {
    ReleaseParent(n);
    n.parent = parent;
    HoldParent(ino, n);
  }
  n.name = name;
  n.is_dir = is_dir;
  n.detached = false;
}

void InodeTable::Move(uint64_t ino, uint64_t new_parent, const std::string& new_name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return;
  Node& n = it->second;
  if (!n.held_parent || n.parent != new_parent) {
    ReleaseParent(n);
    n.parent = new_parent;
    HoldParent(ino, n);
  }
  n.name = new_name;
}

void InodeTable::Forget(uint64_t ino, uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end() || ino == kRootIno) return;
  it->second.lookups = it->second.lookups > n ? it->second.lookups - n : 0;
  MaybeErase(ino);
}

void InodeTable::Pin(uint64_t ino) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(ino);
  if (it != nodes_.end()) it->second.pins++;
}

void InodeTable::Unpin(uint64_t ino) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return;
  if (it->second.pins > 0) it->second.pins--;
  MaybeErase(ino);
}

void InodeTable::Detach(uint64_t ino) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(ino);
  if (it != nodes_.end() && ino != kRootIno) it->second.detached = true;
}

bool InodeTable::IsDetached(uint64_t ino) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(ino);
  return it != nodes_.end() && it->second.detached;
}

bool InodeTable::Contains(uint64_t ino) const {
  std::lock_guard<std::mutex> lock(mu_);
  return nodes_.count(ino) > 0;
}

void InodeTable::HoldParent(uint64_t ino, Node& n) {
  if (ino == kRootIno) return;
  auto p = nodes_.find(n.parent);
  n.held_parent = p != nodes_.end();
  if (n.held_parent) p->second.children++;
}

void InodeTable::ReleaseParent(Node& n) {
  if (!n.held_parent) return;
  n.held_parent = false;
  auto p = nodes_.find(n.parent);
  if (p == nodes_.end()) return;
  if (p->second.children > 0) p->second.children--;
  MaybeErase(n.parent);
}

void InodeTable::MaybeErase(uint64_t ino) {
  auto it = nodes_.find(ino);
  if (it == nodes_.end() || ino == kRootIno) return;
  const Node& n = it->second;
  if (n.lookups > 0 || n.pins > 0 || n.children > 0) return;
  Node gone = std::move(it->second);
  nodes_.erase(it);
  ReleaseParent(gone);  // the parent may go now too (recursion bounded by depth)
}

std::optional<std::string> InodeTable::PathOf(uint64_t ino) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string path;
  // Depth bound: a cycle would be a bug, never an infinite loop.
  for (int depth = 0; ino != kRootIno; ++depth) {
    auto it = nodes_.find(ino);
    if (it == nodes_.end() || it->second.detached || depth > 4096) return std::nullopt;
    path.insert(0, "/" + it->second.name);
    ino = it->second.parent;
  }
  return path.empty() ? "/" : path;
}

bool InodeTable::IsDir(uint64_t ino) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(ino);
  return it != nodes_.end() && it->second.is_dir;
}

std::vector<std::pair<uint64_t, uint64_t>> InodeTable::Lookups() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (const auto& [ino, n] : nodes_) {
    if (ino != kRootIno && n.lookups > 0) out.emplace_back(ino, n.lookups);
  }
  return out;
}

size_t InodeTable::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return nodes_.size();
}

std::string JoinPath(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

std::string ParentPath(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

// U+F000 + b in UTF-8 (the private-use mapping of Services for Macintosh).
static void AppendPrivateUse(unsigned char b, std::string* out) {
  const char32_t cp = 0xF000 + b;
  out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
  out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
  out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
}

static std::string PathBlobName(const std::string& path) {
  // Blob names are UTF-8 and the service reads '\' as '/': a file "a\b"
  // would land in "a/b". '\' and every byte that is not valid UTF-8 are
  // stored as U+F000 + byte, which other tools show as one character.
  std::string out;
  out.reserve(path.size());
  for (size_t i = 1; i < path.size();) {
    char32_t cp;
    size_t len = DecodeUtf8(path, i, &cp);
    if (len == 0 || path[i] == '\\') {
      AppendPrivateUse(static_cast<unsigned char>(path[i]), &out);
      i += 1;
    } else {
      out.append(path, i, len);
      i += len;
    }
  }
  return out;
}

std::string BlobNameFor(const std::string& path) {
  std::string name = PathBlobName(path);
  const auto segments = static_cast<size_t>(std::count(name.begin(), name.end(), '/')) + 1;
  if (Utf16Length(name) <= kMaxBlobNameChars && segments <= kMaxBlobSegments) return name;
  return kLongPathBlobPrefix + Sha256Hex(path);
}

bool IsLongPathBlob(const std::string& blob) {
  constexpr size_t kPrefix = sizeof(kLongPathBlobPrefix) - 1;
  if (blob.size() != kPrefix + 64 || blob.compare(0, kPrefix, kLongPathBlobPrefix) != 0) {
    return false;
  }
  return std::all_of(blob.begin() + kPrefix, blob.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace stampfs
