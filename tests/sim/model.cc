#include "tests/sim/model.h"

#include <cstdio>

namespace stampfs::sim {

std::string ParentOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string Printable(const std::string& s, size_t max) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
  }
  if (s.size() > max) out += "...(" + std::to_string(s.size()) + " bytes)";
  return out;
}

namespace {

bool Below(const std::string& path, const std::string& dir) {
  return dir == "/" ? path != "/" : path.rfind(dir + "/", 0) == 0;
}

}  // namespace

PosixModel::PosixModel() { tree_["/"] = Node{Type::kDir, 0755, "", 0}; }

const PosixModel::Node* PosixModel::Find(const std::string& path) const {
  auto it = tree_.find(path);
  return it == tree_.end() ? nullptr : &it->second;
}

int PosixModel::ParentOk(const std::string& path) const {
  // Every ancestor, from the root down, must be a directory (a symlink on
  // the way is not followed).
  const std::string parent = ParentOf(path);
  for (size_t end = 1; end != std::string::npos && end <= parent.size();) {
    const size_t next = parent.find('/', end);
    const std::string p = parent.substr(0, next);
    const Node* n = Find(p.empty() ? "/" : p);
    if (n == nullptr) return ENOENT;
    if (n->type != Type::kDir) return ENOTDIR;
    end = next == std::string::npos ? next : next + 1;
  }
  return 0;
}

bool PosixModel::HasChildren(const std::string& dir) const {
  auto it = tree_.upper_bound(dir == "/" ? "/" : dir + "/");
  return it != tree_.end() && Below(it->first, dir);
}

// stampfs refuses to create a name holding U+F05C or U+F080..U+F0FF
// (EILSEQ, docs/semantics.md "Names"): blob names use them for '\' and for
// bytes that are not UTF-8. Only the last component is new.
static bool HoldsBlobEscape(const std::string& path) {
  const std::string name = path.substr(path.rfind('/') + 1);
  for (size_t i = 0; i + 2 < name.size(); ++i) {
    const unsigned char b0 = name[i], b1 = name[i + 1], b2 = name[i + 2];
    if (b0 != 0xEF || (b1 & 0xC0) != 0x80 || (b2 & 0xC0) != 0x80) continue;
    const unsigned cp = ((b0 & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F);
    if (cp == 0xF05C || (cp >= 0xF080 && cp <= 0xF0FF)) return true;
  }
  return false;
}

int PosixModel::Create(const std::string& path, bool excl, bool trunc, uint64_t* file) {
  if (int e = ParentOk(path)) return e;
  const Node* n = Find(path);
  if (n != nullptr) {
    if (excl) return EEXIST;
    return Open(path, trunc, file);
  }
  if (HoldsBlobEscape(path)) return EILSEQ;
  *file = next_file_++;
  files_[*file] = "";
  tree_[path] = Node{Type::kFile, 0644, "", *file};
  return 0;
}

int PosixModel::Open(const std::string& path, bool trunc, uint64_t* file) {
  if (int e = ParentOk(path)) return e;
  const Node* n = Find(path);
  if (n == nullptr) return ENOENT;
  if (n->type == Type::kDir) return EISDIR;
  if (n->type == Type::kLink) return ELOOP;  // the simulation never follows links
  *file = n->file;
  if (trunc) files_[*file].clear();
  return 0;
}

void PosixModel::Write(uint64_t file, uint64_t off, const std::string& data) {
  std::string& f = files_[file];
  if (f.size() < off + data.size()) f.resize(off + data.size(), '\0');
  f.replace(off, data.size(), data);
}

void PosixModel::TruncateFile(uint64_t file, uint64_t size) { files_[file].resize(size, '\0'); }

int PosixModel::Truncate(const std::string& path, uint64_t size) {
  uint64_t file = 0;
  if (int e = Open(path, false, &file)) return e;
  TruncateFile(file, size);
  return 0;
}

int PosixModel::Unlink(const std::string& path) {
  if (int e = ParentOk(path)) return e;
  const Node* n = Find(path);
  if (n == nullptr) return ENOENT;
  if (n->type == Type::kDir) return EISDIR;
  tree_.erase(path);
  return 0;
}

int PosixModel::Mkdir(const std::string& path) {
  if (int e = ParentOk(path)) return e;
  if (HoldsBlobEscape(path)) return EILSEQ;
  if (Find(path) != nullptr) return EEXIST;
  tree_[path] = Node{Type::kDir, 0755, "", 0};
  return 0;
}

int PosixModel::Rmdir(const std::string& path) {
  if (int e = ParentOk(path)) return e;
  const Node* n = Find(path);
  if (n == nullptr) return ENOENT;
  if (n->type != Type::kDir) return ENOTDIR;
  if (HasChildren(path)) return ENOTEMPTY;
  tree_.erase(path);
  return 0;
}

int PosixModel::Symlink(const std::string& path, const std::string& target) {
  if (int e = ParentOk(path)) return e;
  if (HoldsBlobEscape(path)) return EILSEQ;
  if (Find(path) != nullptr) return EEXIST;
  tree_[path] = Node{Type::kLink, 0777, target, 0};
  return 0;
}

int PosixModel::Rename(const std::string& from, const std::string& to, bool noreplace) {
  // Linux walks both parents before it looks the source up.
  if (int e = ParentOk(from)) return e;
  if (int e = ParentOk(to)) return e;
  if (HoldsBlobEscape(to)) return EILSEQ;  // Namespace::Rename checks the new name first
  const Node* src = Find(from);
  if (src == nullptr) return ENOENT;
  if (from == to) return noreplace ? EEXIST : 0;
  if (src->type == Type::kDir && Below(to, from)) return EINVAL;
  const Node* dst = Find(to);
  if (dst != nullptr) {
    if (noreplace) return EEXIST;
    if (src->type == Type::kDir && dst->type != Type::kDir) return ENOTDIR;
    if (src->type != Type::kDir && dst->type == Type::kDir) return EISDIR;
    if (dst->type == Type::kDir && HasChildren(to)) return ENOTEMPTY;
  }
  std::map<std::string, Node> moved;
  for (auto it = tree_.begin(); it != tree_.end();) {
    if (it->first == from || Below(it->first, from)) {
      moved[to + it->first.substr(from.size())] = it->second;
      it = tree_.erase(it);
    } else {
      ++it;
    }
  }
  tree_.erase(to);
  for (auto& [p, n] : moved) tree_[p] = n;
  return 0;
}

int PosixModel::Chmod(const std::string& path, uint32_t mode) {
  if (int e = ParentOk(path)) return e;
  auto it = tree_.find(path);
  if (it == tree_.end()) return ENOENT;
  if (it->second.type != Type::kLink) it->second.mode = mode & 07777;
  return 0;
}

int PosixModel::SetXattr(const std::string& path) {
  if (int e = ParentOk(path)) return e;
  return Find(path) == nullptr ? ENOENT : 0;
}

std::string PosixModel::Render(bool with_content) const {
  std::string out;
  for (const auto& [path, n] : tree_) {
    if (path == "/") continue;
    out += Printable(path, 300);
    switch (n.type) {
      case Type::kDir:
        out += " dir " + std::to_string(n.mode);
        break;
      case Type::kLink:
        out += " link -> " + Printable(n.target);
        break;
      case Type::kFile: {
        const std::string& c = files_.at(n.file);
        out += " file " + std::to_string(n.mode) + " size " + std::to_string(c.size());
        if (with_content) out += " " + Printable(c, 4096);
        break;
      }
    }
    out += "\n";
  }
  return out;
}

}  // namespace stampfs::sim
