// Hard links of symlinks, FIFOs, sockets and devices on the fakes
// (fs/namespace/namespace_links.cc): no blob, the record holds the target or rdev;
// counts, unlink, rename, fsck, and a crash at every storage call.
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "fs/namespace/hard_links.h"
#include "tests/unit/rename_fixture.h"

namespace stampfs {
namespace {

class LinkSpecialTest : public RenameFixture {
 protected:
  void SetUp() override { Reset(); }

  // MakeTree plus /a/fifo, /a/dev (char 1,3) and /a/sock.
  void MakeSpecialTree(Namespace& ns) {
    MakeTree(ns);
    const uint64_t a = InoOf(ns, "/a");
    ASSERT_TRUE(ns.Mknod(a, "fifo", S_IFIFO | 0640, 0, 0, 0).ok());
    ASSERT_TRUE(ns.Mknod(a, "dev", S_IFCHR | 0600, makedev(1, 3), 0, 0).ok());
    ASSERT_TRUE(ns.Mknod(a, "sock", S_IFSOCK | 0755, 0, 0, 0).ok());
  }

  Result<Attr> Stat(Namespace& ns, const std::string& path) {
    const uint64_t parent = InoOf(ns, ParentPath(path));
    if (parent == 0) return Status(Code::kNotFound, path);
    return ns.Lookup(parent, BaseName(path));
  }

  uint64_t Nlink(Namespace& ns, const std::string& path) {
    auto a = Stat(ns, path);
    return a.ok() ? ToStat(*a).st_nlink : 0;
  }

  Status LinkAs(Namespace& ns, const std::string& from, const std::string& to) {
    return ns.Link(InoOf(ns, from), InoOf(ns, ParentPath(to)), BaseName(to)).status();
  }

  Status Unlink(Namespace& ns, const std::string& path) {
    return ns.Unlink(InoOf(ns, ParentPath(path)), BaseName(path)).status();
  }

  // "mode rdev nlink" of a special file as `ns` shows it.
  std::string Shape(Namespace& ns, const std::string& path) {
    auto a = Stat(ns, path);
    if (!a.ok()) return "<" + a.status().ToString() + ">";
    struct stat st = ToStat(*a);
    return std::to_string(st.st_mode) + " " + std::to_string(st.st_rdev) + " " +
           std::to_string(st.st_nlink);
  }

  void ExpectFsckClean() {
    FsckReport r = Fsck(false);
    EXPECT_TRUE(r.findings.empty()) << Findings(r);
  }
};

TEST_F(LinkSpecialTest, ASymlinksNamesShareItsTargetInodeAndCount) {
  Mount m = NewMount();
  MakeTree(*m.ns);
  const size_t blobs = BlobNames().size();
  ASSERT_TRUE(LinkAs(*m.ns, "/a/d/ln", "/b/ln2").ok());
  ASSERT_TRUE(LinkAs(*m.ns, "/b/ln2", "/a/ln3").ok());
  const uint64_t ino = InoOf(*m.ns, "/a/d/ln");
  EXPECT_EQ(InoOf(*m.ns, "/b/ln2"), ino);
  for (const char* p : {"/a/d/ln", "/b/ln2", "/a/ln3"}) {
    EXPECT_EQ(Nlink(*m.ns, p), 3u) << p;
    EXPECT_TRUE(Stat(*m.ns, p)->IsSymlink()) << p;
  }
  EXPECT_EQ(BlobNames().size(), blobs);  // no blob
  // The target lives in the record alone.
  auto name = table_->Get(kTable, PartitionKeyForDirectory("/b"), RowKeyForName("ln2"));
  ASSERT_TRUE(name.ok());
  EXPECT_FALSE(name->Has("target"));
  Mount other = NewMount();
  Tree t = Snapshot(other.ns.get());
  EXPECT_EQ(t["/a/d/ln"], "l f1");
  EXPECT_EQ(t["/b/ln2"], "l f1");
  EXPECT_EQ(t["/a/ln3"], "l f1");
  EXPECT_EQ(Stat(*other.ns, "/a/ln3")->size, 2u);
  ExpectFsckClean();
  ASSERT_TRUE(Unlink(*m.ns, "/a/d/ln").ok());
  EXPECT_EQ(Nlink(*m.ns, "/b/ln2"), 2u);
  ASSERT_TRUE(Unlink(*m.ns, "/b/ln2").ok());
  ExpectFsckClean();
  ASSERT_TRUE(Unlink(*m.ns, "/a/ln3").ok());
  auto records = table_->QueryPartition(kTable, kInodesPartition);
  ASSERT_TRUE(records.ok());
  EXPECT_TRUE(records->empty());
  EXPECT_EQ(BlobNames().size(), blobs);
  ExpectFsckClean();
}

TEST_F(LinkSpecialTest, FifosDevicesAndSocketsLinkKeepingTypeAndRdev) {
  Mount m = NewMount();
  MakeSpecialTree(*m.ns);
  for (const char* n : {"fifo", "dev", "sock"}) {
    const std::string from = std::string("/a/") + n;
    const std::string before = Shape(*m.ns, from);
    ASSERT_TRUE(LinkAs(*m.ns, from, std::string("/b/") + n).ok()) << n;
    Mount other = NewMount();
    const std::string linked = Shape(*other.ns, std::string("/b/") + n);
    EXPECT_EQ(linked, Shape(*other.ns, from)) << n;
    EXPECT_EQ(linked.substr(0, linked.rfind(' ')), before.substr(0, before.rfind(' '))) << n;
    EXPECT_EQ(Nlink(*other.ns, from), 2u) << n;
  }
  EXPECT_EQ(Stat(*m.ns, "/b/dev")->rdev, makedev(1, 3));
  // chmod through one name shows through the other.
  SetAttrRequest req;
  req.mode = 0604;
  ASSERT_TRUE(m.ns->SetAttr(InoOf(*m.ns, "/b/fifo"), req).ok());
  EXPECT_EQ(Stat(*NewMount().ns, "/a/fifo")->mode, static_cast<uint32_t>(S_IFIFO | 0604));
  ExpectFsckClean();
  // A rename of a linked name (across directories: rolled forward) and a
  // rename over one.
  ASSERT_TRUE(m.ns->Rename(InoOf(*m.ns, "/b"), "dev", InoOf(*m.ns, "/a/d"), "dev2", 0).ok());
  ASSERT_TRUE(m.ns->Rename(InoOf(*m.ns, "/a"), "sock", InoOf(*m.ns, "/a"), "sock2", 0).ok());
  ASSERT_TRUE(m.ns->Rename(InoOf(*m.ns, "/b"), "y", InoOf(*m.ns, "/b"), "fifo", 0).ok());
  Mount after = NewMount();
  EXPECT_EQ(Stat(*after.ns, "/a/d/dev2")->rdev, makedev(1, 3));
  EXPECT_EQ(Nlink(*after.ns, "/a/dev"), 2u);
  EXPECT_EQ(Nlink(*after.ns, "/a/sock2"), 2u);
  EXPECT_EQ(Nlink(*after.ns, "/a/fifo"), 1u);
  EXPECT_TRUE(Stat(*after.ns, "/b/fifo")->IsRegular());
  ExpectFsckClean();
}

TEST_F(LinkSpecialTest, ImportLeavesLinkedSpecialFilesAlone) {
  Mount m = NewMount();
  MakeSpecialTree(*m.ns);
  ASSERT_TRUE(LinkAs(*m.ns, "/a/fifo", "/b/fifo").ok());
  ASSERT_TRUE(LinkAs(*m.ns, "/a/d/ln", "/b/ln").ok());
  auto r = ImportRefresh();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->clean());
  EXPECT_EQ(r->files_created, 0u);
  EXPECT_EQ(r->removed, 0u);
  EXPECT_EQ(Nlink(*NewMount().ns, "/b/fifo"), 2u);
  EXPECT_EQ(Snapshot()["/b/ln"], "l f1");
  ExpectFsckClean();
}

// From the Kth storage call of the operation on, every call fails (before or
// after it is applied). Every name left is the symlink (its target) or the
// FIFO; fsck --repair leaves a clean table whose counts match the names.
class LinkSpecialCrashTest : public LinkSpecialTest,
                             public ::testing::WithParamInterface<std::tuple<int, bool>> {};

TEST_P(LinkSpecialCrashTest, EveryCrashPointLeavesEveryNameWhole) {
  // 0: first link of a symlink, 1: second link of a FIFO, 2: unlink of a
  // linked symlink, 3: rename of a linked FIFO across directories.
  const auto& [op, after_call] = GetParam();
  const bool symlink = op == 0 || op == 2;
  const std::string src = symlink ? "/a/d/ln" : "/a/fifo";
  const std::vector<std::string> names = {src, "/b/l2", "/b/l3", "/a/d/moved"};
  auto run = [&](Namespace& ns) -> Status {
    if (op == 0) return LinkAs(ns, src, "/b/l2");
    if (op == 1) return LinkAs(ns, src, "/b/l3");
    if (op == 2) return Unlink(ns, src);
    return ns.Rename(InoOf(ns, "/b"), "l2", InoOf(ns, "/a/d"), "moved", 0).status();
  };
  auto setup = [&](Namespace& ns) {
    MakeSpecialTree(ns);
    if (op >= 1) {
      EXPECT_TRUE(LinkAs(ns, src, "/b/l2").ok());
    }
  };
  AtEveryCrashPoint(after_call, 1, setup, run, [&] {
    auto check = [&](Namespace& ns, int expect_names) {
      int found = 0;
      Tree t = Snapshot(&ns);
      for (const std::string& p : names) {
        if (!t.count(p)) continue;
        found++;
        auto a = Stat(ns, p);
        EXPECT_TRUE(a.ok()) << p << ": " << a.status().ToString();
        if (!a.ok()) continue;
        if (symlink) {
          EXPECT_EQ(t[p], "l f1") << p;
        } else {
          EXPECT_EQ(a->mode, static_cast<uint32_t>(S_IFIFO | 0640)) << p;
        }
        if (expect_names > 0) {
          EXPECT_EQ(ToStat(*a).st_nlink, static_cast<nlink_t>(expect_names)) << p;
        }
      }
      return found;
    };
    Mount seen = NewMount();
    const int found = check(*seen.ns, 0);
    EXPECT_GE(found, 1);
    FsckReport repaired = Fsck(true);
    EXPECT_TRUE(repaired.clean()) << Findings(repaired);
    ExpectFsckClean();
    Mount after = NewMount();
    EXPECT_EQ(check(*after.ns, found), found);
  });
}

INSTANTIATE_TEST_SUITE_P(Links, LinkSpecialCrashTest,
                         ::testing::Combine(::testing::Values(0, 1, 2, 3), ::testing::Bool()));

}  // namespace
}  // namespace stampfs
