// Shared by the rename tests on the fakes (rename_crash_test.cc,
// rename_race_test.cc, rename_view_test.cc): one FakeTableStore and one
// FakeBlobStore behind fault-injecting decorators with one FaultPlan, mounts
// (Namespace instances with their own metadata cache) over them, and helpers
// that build trees and read them back whole.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "fs/admin/fsck.h"
#include "fs/admin/import.h"
#include "fs/namespace/names.h"
#include "fs/namespace/namespace.h"
#include "fs/namespace/table_scan.h"
#include "storage/fakes.h"
#include "storage/table_keys.h"

namespace stampfs {

using Tree = std::map<std::string, std::string>;  // path -> "d" / "f <data>" / "l <target>"

class RenameFixture : public ::testing::Test {
 public:
  static constexpr const char* kContainer = "crashc";
  static constexpr const char* kTable = "crasht";

 protected:
  struct Mount {
    std::unique_ptr<MetaCache> cache;
    std::unique_ptr<Namespace> ns;
  };

  void Reset() {
    table_ = MakeFakeTableStore();
    blobs_ = MakeFakeBlobStore();
    plan_ = std::make_shared<FaultPlan>();
    faulty_table_ = MakeFaultyTableStore(*table_, plan_);
    faulty_blobs_ = MakeFaultyBlobStore(*blobs_, plan_);
  }

  NamespaceOptions Options(bool read_only = false) const {
    NamespaceOptions o;
    o.container = kContainer;
    o.table = kTable;
    o.read_only = read_only;
    return o;
  }

  // A mount over the faulty stores (`table`: another TableStore in their place).
  Mount NewMount(bool read_only = false, TableStore* table = nullptr) {
    Mount m;
    auto cache = MetaCache::Open(":memory:");
    EXPECT_TRUE(cache.ok());
    m.cache = std::move(*cache);
    m.ns = std::make_unique<Namespace>(table ? *table : *faulty_table_, *faulty_blobs_,
                                       m.cache.get(), Options(read_only));
    Status s = m.ns->Init();
    EXPECT_TRUE(s.ok()) << s.ToString();
    return m;
  }

  uint64_t Dir(Namespace& ns, uint64_t parent, const std::string& name) {
    auto a = ns.Mkdir(parent, name, 0755, 0, 0);
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    return a.ok() ? a->ino : 0;
  }

  // A file with a committed blob holding `data`.
  void File(Namespace& ns, uint64_t parent, const std::string& path, const std::string& data) {
    auto a = ns.Create(parent, BaseName(path), 0644, 0, 0);
    ASSERT_TRUE(a.ok()) << path << ": " << a.status().ToString();
    auto etag = blobs_->PutString(kContainer, BlobNameFor(path), data, {}, Condition::None());
    ASSERT_TRUE(etag.ok());
    ASSERT_TRUE(ns.CommitFile(a->ino, data.size(), NowNs(), *etag, "").ok());
  }

  // /a/x, /a/d/{f1, sub/f2, sub/deep/, ln -> f1}, /b/y, /b/empty/.
  void MakeTree(Namespace& ns) {
    uint64_t a = Dir(ns, kRootIno, "a");
    uint64_t b = Dir(ns, kRootIno, "b");
    File(ns, a, "/a/x", "data of x");
    uint64_t d = Dir(ns, a, "d");
    File(ns, d, "/a/d/f1", "one");
    uint64_t sub = Dir(ns, d, "sub");
    File(ns, sub, "/a/d/sub/f2", "two");
    Dir(ns, sub, "deep");
    ASSERT_TRUE(ns.Symlink(d, "ln", "f1", 0, 0).ok());
    File(ns, b, "/b/y", "old y");
    Dir(ns, b, "empty");
  }

  // The inode of `path` as mount `ns` looks it up, name by name (0: not found).
  uint64_t InoOf(Namespace& ns, const std::string& path) {
    uint64_t ino = kRootIno;
    std::string rest = path;
    while (rest.size() > 1) {
      const size_t next = rest.find('/', 1);
      const std::string name = rest.substr(1, next == std::string::npos ? next : next - 1);
      auto a = ns.Lookup(ino, name);
      if (!a.ok()) return 0;
      ino = a->ino;
      rest = next == std::string::npos ? "" : rest.substr(next);
    }
    return ino;
  }

  // A directory that cannot be listed shows as "<error>" under its path + "/".
  void Walk(Namespace& ns, uint64_t ino, const std::string& path, Tree* tree) {
    auto entries = ns.ReadDir(ino);
    if (!entries.ok()) {
      (*tree)[path == "/" ? path : path + "/"] = "<" + entries.status().ToString() + ">";
      return;
    }
    for (const DirEntry& e : *entries) {
      const std::string p = JoinPath(path, e.name);
      ns.Remember(ino, e);
      if (e.attr.IsDir()) {
        (*tree)[p] = "d";
        Walk(ns, e.attr.ino, p, tree);
      } else if (e.attr.IsSymlink()) {
        (*tree)[p] = "l " + *ns.ReadLink(e.attr.ino);
      } else {
        auto state = ns.GetFile(e.attr.ino);
        if (!state.ok()) {
          (*tree)[p] = "f <" + state.status().ToString() + ">";
          continue;
        }
        auto data = blobs_->ReadToString(kContainer, state->blob, 0, 0,
                                         Condition::IfMatch(state->blob_etag));
        (*tree)[p] = "f " + (data.ok() ? *data : "<" + data.status().ToString() + ">");
      }
    }
  }

  // The whole tree as a new mount (whose Init rolls renames forward) or `ns` sees it.
  Tree Snapshot(Namespace* ns = nullptr) {
    Tree tree;
    if (ns) {
      Walk(*ns, kRootIno, "/", &tree);
      return tree;
    }
    Mount m = NewMount();
    Walk(*m.ns, kRootIno, "/", &tree);
    return tree;
  }

  // Writes the intent of a rename of file `from` to `to` by another host's
  // mount (pid 1) that did nothing else: no claim, nothing moved.
  RenameIntent WriteIntent(const std::string& from, const std::string& to, int64_t created_ns,
                           bool no_replace = false) {
    RenameIntent intent;
    auto entry = table_->Get(kTable, PartitionKeyForDirectory(ParentPath(from)),
                             RowKeyForName(BaseName(from)));
    EXPECT_TRUE(entry.ok()) << from;
    if (!entry.ok()) return intent;
    intent.created_ns = created_ns;
    intent.id = NewIntentId(created_ns);
    intent.from = from;
    intent.to = to;
    intent.no_replace = no_replace;
    intent.ino = static_cast<uint64_t>(entry->GetInt64("ino"));
    if (const std::string* b = entry->GetString("blob")) intent.blob = *b;
    if (const std::string* b = entry->GetString("betag")) intent.betag = *b;
    intent.host = "another-host-" + intent.id;
    intent.pid = 1;
    intent.mount = "elsewhere";
    EXPECT_TRUE(table_->Insert(kTable, IntentToEntity(intent)).ok());
    return intent;
  }

  std::set<std::string> BlobNames() {
    std::set<std::string> out;
    auto listing = blobs_->ListBlobs(kContainer, {});
    EXPECT_TRUE(listing.ok());
    for (const BlobItem& b : listing->blobs) out.insert(b.name);
    return out;
  }

  size_t Intents() {
    auto rows = table_->QueryPartition(kTable, kIntentsPartition);
    return rows.ok() ? rows->size() : 999;
  }

  FsckReport Fsck(bool repair) {
    FsckOptions o;
    o.container = kContainer;
    o.table = kTable;
    o.repair = repair;
    auto r = stampfs::Fsck(*table_, *blobs_, o).Run();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : FsckReport{};
  }

  static std::string Findings(const FsckReport& r) {
    std::string s;
    for (const auto& f : r.findings) {
      s += std::string(FsckKindName(f.kind)) + ": " + f.where + ": " + f.detail + " -> " +
           f.repair + "\n";
    }
    return s;
  }

  // Arms the crash: call `k` (counted from now) and every later call fail.
  void CrashAt(int k, bool after_call) {
    const int target = plan_->calls() + k;
    plan_->FailNth(k, RequestTimeout(), "", after_call);
    plan_->SetInjector([this, target](const std::string&, int) {
      return plan_->calls() > target ? RequestTimeout() : Status::Ok();
    });
  }

  // On fresh stores: `setup` on a new mount, then `run` with the crash
  // armed at its call `k` (0: none, and `run` must succeed). Returns the
  // storage calls `run` made.
  int RunCrashingAt(int k, bool after_call, const std::function<void(Namespace&)>& setup,
                    const std::function<Status(Namespace&)>& run) {
    Reset();
    Mount m = NewMount();
    setup(*m.ns);
    if (k > 0) CrashAt(k, after_call);
    const int start = plan_->calls();
    Status s = run(*m.ns);
    EXPECT_TRUE(k > 0 || s.ok()) << s.ToString();
    const int calls = plan_->calls() - start;
    plan_->Clear();
    return calls;
  }

  // stampfs import --refresh of the container, straight on the stores.
  Result<ImportReport> ImportRefresh() {
    ImportOptions o;
    o.container = kContainer;
    o.table = kTable;
    o.refresh = true;
    return Importer(*table_, *blobs_, o).Run();
  }

  // RunCrashingAt at every call `run` makes (first k = 0: no crash, which
  // must make more than `min_calls`), then `check` of what each left.
  void AtEveryCrashPoint(bool after_call, int min_calls,
                         const std::function<void(Namespace&)>& setup,
                         const std::function<Status(Namespace&)>& run,
                         const std::function<void()>& check) {
    int calls = 0;
    for (int k = 0; k == 0 || k <= calls; ++k) {
      SCOPED_TRACE("crash at call " + std::to_string(k) + " of " + std::to_string(calls));
      const int made = RunCrashingAt(k, after_call, setup, run);
      if (k == 0) {
        calls = made;
        ASSERT_GT(calls, min_calls);
      }
      check();
    }
  }

  std::unique_ptr<TableStore> table_;
  std::unique_ptr<BlobStore> blobs_;
  std::shared_ptr<FaultPlan> plan_;
  std::unique_ptr<TableStore> faulty_table_;
  std::unique_ptr<BlobStore> faulty_blobs_;
};

// A rename of the crash and view tests, on the tree of MakeTree.
struct RenameCase {
  const char* name;
  std::string from, to;
  bool replaces;
};

inline void PrintTo(const RenameCase& c, std::ostream* os) { *os << c.name; }

inline std::vector<RenameCase> RenameCases() {
  return {{"FileAcrossDirectories", "/a/x", "/b/x", false},
          {"FileOverAFile", "/a/x", "/b/y", true},
          {"FileInPlace", "/a/x", "/a/x2", false},
          {"Directory", "/a/d", "/b/d2", false},
          {"DirectoryOverAnEmptyOne", "/a/d", "/b/empty", true},
          {"DirectoryInPlace", "/a/d", "/a/e", false}};
}

// `before` with `from` (and everything below it) moved to `to`; a replaced
// target (and everything below it) dropped.
inline Tree Renamed(const Tree& before, const std::string& from, const std::string& to,
                    bool drop_target) {
  Tree out;
  for (const auto& [path, what] : before) {
    if (drop_target && (path == to || path.rfind(to + "/", 0) == 0)) continue;
    if (path == from || path.rfind(from + "/", 0) == 0) {
      out[to + path.substr(from.size())] = what;
    } else {
      out[path] = what;
    }
  }
  return out;
}

inline std::set<std::string> BlobsOf(const Tree& tree) {
  std::set<std::string> out;
  for (const auto& [path, what] : tree) {
    if (what[0] == 'f') out.insert(BlobNameFor(path));
  }
  return out;
}

}  // namespace stampfs
