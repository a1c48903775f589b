// The importer's planning: blob names -> tree -> writes (see fs/admin/import.h).
#include "fs/admin/import_plan.h"

#include <sys/stat.h>

#include <algorithm>
#include <string_view>

#include "fs/namespace/attr.h"
#include "fs/namespace/blob_entry.h"
#include "fs/namespace/hard_links.h"
#include "fs/namespace/inode_table.h"
#include "fs/namespace/names.h"
#include "storage/table_keys.h"
#include "storage/utf8.h"

namespace stampfs {

namespace {

std::string Lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

bool IsFolderMarker(const BlobItem& b) {
  const std::string* v = BlobMeta(b, "hdi_isfolder");
  return b.properties.size == 0 && v && Lower(*v) == "true";
}

// Why `component` cannot be a file name, or "" when it can.
std::string ComponentProblem(const std::string& component) {
  if (component.empty()) return "empty path component (\"//\" or a leading '/')";
  if (component == "." || component == "..") return "path component \"" + component + "\"";
  if (component.size() > kMaxNameBytes) return "path component longer than 255 bytes";
  return "";
}

// A blob name's components as file names: U+F05C is '\\' and U+F080..U+F0FF
// a byte that is not UTF-8 (the inverse of BlobNameFor, fs/namespace/inode_table.h: the
// Blob service would read a '\\' as '/', and blob names are UTF-8). Add()
// refuses a name this does not map back exactly, so no two files share a blob.
std::vector<std::string> Split(const std::string& name) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t slash = name.find('/', start);
    const std::string part = name.substr(start, slash - start);
    std::string decoded;
    for (size_t i = 0; i < part.size();) {
      char32_t cp = 0;
      size_t len = DecodeUtf8(part, i, &cp);
      if (len == 0) {
        decoded += part[i++];
      } else if (IsBlobEscapeCodePoint(cp)) {
        decoded += static_cast<char>(cp - 0xF000);
        i += len;
      } else {
        decoded.append(part, i, len);
        i += len;
      }
    }
    out.push_back(std::move(decoded));
    if (slash == std::string::npos) return out;
    start = slash + 1;
  }
}

// Attributes from stampfs metadata, else the defaults. `fallback_mtime` is
// used when there is no blob (an implicit directory).
Attr AttrsFor(const BlobItem* b, bool dir, const ImportOptions& o, int64_t fallback_mtime) {
  Attr a;
  a.mode = (dir ? S_IFDIR | 0755 : S_IFREG | 0644);
  a.uid = o.uid;
  a.gid = o.gid;
  a.mtime_ns = fallback_mtime;
  if (b) {
    a.size = dir ? 0 : b->properties.size;
    if (auto m = BlobMetaNumber<uint32_t>(*b, "mode")) {
      a.mode = (a.mode & S_IFMT) | (*m & 07777);
    }
    if (auto u = BlobMetaNumber<uint32_t>(*b, "uid")) a.uid = *u;
    if (auto g = BlobMetaNumber<uint32_t>(*b, "gid")) a.gid = *g;
    a.mtime_ns = BlobMtimeNs(*b);
  }
  a.ctime_ns = a.atime_ns = a.mtime_ns;
  return a;
}

Entity NewEntry(const std::string& dir, const std::string& name, const Attr& attr) {
  Entity e{PartitionKeyForDirectory(dir), RowKeyForName(name), {}, {}};
  AttrToEntity(attr, &e);
  SetEntryName(name, &e);
  return e;
}

class TreeBuilder {
 public:
  TreeBuilder(BlobTree* tree, std::vector<ImportProblem>* problems)
      : tree_(tree), problems_(problems) {
    tree_->dirs["/"];
  }

  void Add(const BlobItem& b) {
    std::string name = b.name;
    bool marker = IsFolderMarker(b);
    if (!name.empty() && name.back() == '/') {
      if (b.properties.size != 0) {
        return Problem(b, "name ends with '/' but the blob is not an empty folder marker");
      }
      name.pop_back();
      marker = true;
    }
    std::vector<std::string> parts = Split(name);
    std::string path;
    for (const std::string& p : parts) {
      if (std::string why = ComponentProblem(p); !why.empty()) return Problem(b, why);
      path += "/" + p;
    }
    if (BlobNameFor(path) != name) {
      return Problem(b, "U+F05C or U+F080..U+F0FF where stampfs would not write them (its "
                        "characters for '\\' and bytes that are not UTF-8): no file name maps "
                        "to this blob");
    }
    std::string dir = "/";
    for (size_t i = 0; i < parts.size(); ++i) {
      const bool last = i + 1 == parts.size();
      if (last && !marker) return AddFile(b, dir, parts[i]);
      dir = AddDir(b, dir, parts[i]);
      if (last) tree_->dirs[dir].marker = &b;
    }
  }

 private:
  void Problem(const BlobItem& b, const std::string& why) { problems_->push_back({b.name, why}); }

  // The directory `name` in `dir` (made when new; a file blob of that name
  // loses: the directory holds other blobs). Returns its path.
  std::string AddDir(const BlobItem& cause, const std::string& dir, const std::string& name) {
    auto& children = tree_->dirs[dir].children;
    auto it = children.find(name);
    if (it == children.end()) {
      children[name] = {true, nullptr};
    } else if (!it->second.dir) {
      Problem(*it->second.blob, "a directory of the same name holds other blobs (" + cause.name + ")");
      it->second = {true, nullptr};
    }
    std::string path = JoinPath(dir, name);
    tree_->dirs[path];
    return path;
  }

  void AddFile(const BlobItem& b, const std::string& dir, const std::string& name) {
    auto& children = tree_->dirs[dir].children;
    if (children.count(name)) {
      return Problem(b, "a directory of the same name holds other blobs");
    }
    children[name] = {false, &b};
  }

  BlobTree* tree_;
  std::vector<ImportProblem>* problems_;
};

// Plans one directory of the tree against the table.
class DirPlanner {
 public:
  DirPlanner(const PlanInputs& in, ImportPlan* plan, std::vector<ImportProblem>* problems)
      : in_(in), plan_(plan), problems_(problems) {}

  void Plan(const std::string& dir, const BlobTree::Dir& node) {
    DirWork& w = plan_->dirs[dir];
    w.path = dir;
    for (const auto& [name, child] : node.children) {
      const std::string path = JoinPath(dir, name);
      if (w.blocked) {
        Block(path, child, w);
        continue;
      }
      const Entity* existing = in_.scan.Find(dir, name);
      if (child.dir) {
        PlanDir(dir, name, existing, w);
      } else {
        PlanFile(dir, name, *child.blob, existing, w);
      }
    }
    if (!w.blocked) PlanRemovals(dir, &w);
  }

  // Entries of a partition the blob tree does not reach (refresh removals only).
  void PlanRemovals(const std::string& dir, DirWork* w) {
    if (!in_.options.refresh) return;
    const ScannedPartition* part = in_.scan.Partition(dir);
    if (!part || !part->dot) return;
    for (const auto& [rk, e] : part->entries) {
      const std::string* blob = e.GetString("blob");
      const std::string* betag = e.GetString("betag");
      if (EntryType(e) != S_IFREG || !blob || !betag || betag->empty()) continue;
      if (in_.blob_names.count(*blob)) continue;
      auto name = NameOfEntry(e);
      PendingWrite pw{PendingWrite::Kind::kDelete,
                      e,
                      e.etag,
                      "",
                      JoinPath(dir, name.ok() ? *name : rk),
                      static_cast<uint64_t>(e.GetInt64("ino"))};
      w->writes.push_back(std::move(pw));
    }
  }

 private:
  void Problem(const std::string& blob, const std::string& why) {
    problems_->push_back({blob, why});
  }

  // Everything below a path the table holds as a non-directory is reported.
  void Block(const std::string& path, const BlobTree::Child& child, const DirWork& parent) {
    if (!child.dir) return Problem(child.blob->name, parent.blocked_reason);
    DirWork& w = plan_->dirs[path];
    w.path = path;
    w.blocked = true;
    w.blocked_reason = parent.blocked_reason;
    const BlobTree::Dir& node = in_.tree.dirs.at(path);
    if (node.marker) Problem(node.marker->name, w.blocked_reason);
  }

  void PlanDir(const std::string& dir, const std::string& name, const Entity* existing,
               DirWork& w) {
    const std::string path = JoinPath(dir, name);
    DirWork& child = plan_->dirs[path];
    child.path = path;
    const BlobTree::Dir& node = in_.tree.dirs.at(path);
    const ScannedPartition* part = in_.scan.Partition(path);
    if (existing && EntryType(*existing) != S_IFDIR) {
      child.blocked = true;
      child.blocked_reason = "the table holds " + path + " as a file or symlink";
      if (node.marker) Problem(node.marker->name, child.blocked_reason);
      return;
    }
    if (existing) {
      plan_->unchanged++;
      child.ino = static_cast<uint64_t>(existing->GetInt64("ino"));
      // An unfinished rmdir: "." again (known only when its partition was read).
      child.write_dot = !in_.one_directory && (!part || !part->dot);
      return;
    }
    // A "." row without an entry (an unfinished mkdir) is adopted.
    child.write_dot = true;
    if (part && part->dot && part->dot->GetInt64("ino") > 0) {
      child.ino = static_cast<uint64_t>(part->dot->GetInt64("ino"));
    } else {
      plan_->new_inodes++;
    }
    Attr a = AttrsFor(node.marker, true, in_.options, in_.now_ns);
    child.mtime_ns = a.mtime_ns;
    w.writes.push_back({PendingWrite::Kind::kInsertDir, NewEntry(dir, name, a), "", path, path});
    plan_->total_writes++;
  }

  void PlanFile(const std::string& dir, const std::string& name, const BlobItem& b,
                const Entity* existing, DirWork& w) {
    const std::string path = JoinPath(dir, name);
    if (!existing) {
      Entity e = NewEntry(dir, name, AttrsFor(&b, false, in_.options, in_.now_ns));
      SetBlobProperties(b, &e);
      w.writes.push_back({PendingWrite::Kind::kInsertFile, std::move(e), "", "", path});
      plan_->new_inodes++;
      plan_->total_writes++;
      return;
    }
    if (EntryType(*existing) != S_IFREG) {
      return Problem(b.name, "the table holds " + path + " as a directory or symlink");
    }
    if (IsLinkName(*existing)) {  // its data is its inode record's (fs/namespace/hard_links.h)
      plan_->unchanged++;
      return;
    }
    const std::string* betag = existing->GetString("betag");
    if (betag && *betag == b.properties.etag) {
      plan_->unchanged++;
      return;
    }
    if (!in_.options.refresh) {
      plan_->stale++;
      return;
    }
    Attr a = AttrsFor(&b, false, in_.options, in_.now_ns);
    Entity e{existing->partition_key, existing->row_key, {}, {}};
    e.properties["size"] = static_cast<int64_t>(a.size);
    e.properties["mtime"] = a.mtime_ns;
    e.properties["ctime"] = in_.now_ns;
    SetBlobProperties(b, &e);
    w.writes.push_back({PendingWrite::Kind::kUpdate, std::move(e), existing->etag, "", path,
                        static_cast<uint64_t>(existing->GetInt64("ino"))});
    plan_->total_writes++;
  }

  const PlanInputs& in_;
  ImportPlan* plan_;
  std::vector<ImportProblem>* problems_;
};

}  // namespace

bool IsDirectoryMarker(const BlobItem& b) {
  return IsFolderMarker(b) ||
         (b.properties.size == 0 && !b.name.empty() && b.name.back() == '/');
}

std::string MarkerPath(const BlobItem& b) {
  std::string name = b.name;
  if (!name.empty() && name.back() == '/') name.pop_back();
  std::string path;
  for (const std::string& part : Split(name)) path += "/" + part;
  return path;
}

BlobTree BuildBlobTree(const std::vector<BlobItem>& blobs, std::vector<ImportProblem>* problems) {
  BlobTree tree;
  TreeBuilder builder(&tree, problems);
  for (const BlobItem& b : blobs) builder.Add(b);
  return tree;
}

ImportPlan PlanImport(const PlanInputs& in, std::vector<ImportProblem>* problems) {
  ImportPlan plan;
  DirWork root;
  root.path.assign(1, '/');  // (GCC 12 warns falsely about operator=("/") here)
  root.ino = kRootIno;
  plan.dirs.emplace(root.path, std::move(root));
  DirPlanner planner(in, &plan, problems);
  // Parents sort before their children, so a blocked directory is known
  // before its contents are planned.
  for (const auto& [path, node] : in.tree.dirs) planner.Plan(path, node);
  // Partitions the blobs no longer reach: files whose blobs are gone.
  for (const auto& [pk, part] : in.scan.partitions) {
    if (part.path.empty() || in.tree.dirs.count(part.path)) continue;
    DirWork w;
    w.path = part.path;
    planner.PlanRemovals(part.path, &w);
    if (!w.writes.empty()) plan.dirs[part.path] = std::move(w);
  }
  for (const auto& [path, w] : plan.dirs) {
    for (const PendingWrite& pw : w.writes) {
      if (pw.kind == PendingWrite::Kind::kDelete) plan.total_writes++;
    }
  }
  return plan;
}

ImportPlan PlanDirectory(const PlanInputs& in, const std::string& dir,
                         std::vector<ImportProblem>* problems) {
  ImportPlan plan;
  DirPlanner planner(in, &plan, problems);
  auto node = in.tree.dirs.find(dir);
  if (node != in.tree.dirs.end()) {
    planner.Plan(dir, node->second);
  } else {
    planner.PlanRemovals(dir, &plan.dirs[dir]);
    plan.dirs[dir].path = dir;
  }
  for (const PendingWrite& pw : plan.dirs[dir].writes) {
    if (pw.kind == PendingWrite::Kind::kDelete) plan.total_writes++;
  }
  return plan;
}

void AssignInodes(uint64_t first, ImportPlan* plan) {
  uint64_t next = first;
  for (auto& [path, w] : plan->dirs) {
    for (PendingWrite& pw : w.writes) {
      if (pw.kind == PendingWrite::Kind::kInsertFile) {
        pw.entity.properties["ino"] = static_cast<int64_t>(next++);
      } else if (pw.kind == PendingWrite::Kind::kInsertDir) {
        DirWork& child = plan->dirs.at(pw.child_path);
        if (child.ino == 0) child.ino = next++;
        pw.entity.properties["ino"] = static_cast<int64_t>(child.ino);
      }
    }
  }
}

size_t Depth(const DirWork& w) {
  return w.path == "/" ? 0 : static_cast<size_t>(std::count(w.path.begin(), w.path.end(), '/'));
}

std::vector<DirWork*> DeepestFirst(ImportPlan* plan) {
  std::vector<DirWork*> out;
  for (auto& [path, w] : plan->dirs) out.push_back(&w);
  std::stable_sort(out.begin(), out.end(),
                   [](const DirWork* a, const DirWork* b) { return Depth(*a) > Depth(*b); });
  return out;
}

}  // namespace stampfs
