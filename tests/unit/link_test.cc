// Hard links on the fakes (fs/namespace/namespace_links.cc): counts, shared data,
// unlink and rename of the blob's name, fsck, and a crash at every storage
// call of a link and of an unlink leaving every name readable.
#include "fs/namespace/hard_links.h"
#include "tests/unit/rename_fixture.h"

namespace stampfs {
namespace {

class LinkTest : public RenameFixture {
 protected:
  void SetUp() override { Reset(); }

  uint64_t Nlink(Namespace& ns, const std::string& path) {
    uint64_t ino = InoOf(ns, path);
    if (ino == 0) return 0;
    auto parent = InoOf(ns, ParentPath(path));
    auto a = ns.Lookup(parent, BaseName(path));
    return a.ok() ? ToStat(*a).st_nlink : 0;
  }

  Status LinkAs(Namespace& ns, const std::string& from, const std::string& to) {
    return ns.Link(InoOf(ns, from), InoOf(ns, ParentPath(to)), BaseName(to)).status();
  }

  Result<FileState> Unlink(Namespace& ns, const std::string& path) {
    return ns.Unlink(InoOf(ns, ParentPath(path)), BaseName(path));
  }

  // Writes `data` as the file's new version through the name `path`.
  void Rewrite(Namespace& ns, const std::string& path, const std::string& data) {
    uint64_t ino = InoOf(ns, path);
    auto st = ns.GetFile(ino, true);
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    auto etag =
        blobs_->PutString(kContainer, st->blob, data, {}, Condition::IfMatch(st->blob_etag));
    ASSERT_TRUE(etag.ok());
    ASSERT_TRUE(ns.CommitFile(ino, data.size(), NowNs(), *etag, st->blob_etag).ok());
  }

  void ExpectFsckClean() {
    FsckReport r = Fsck(false);
    EXPECT_TRUE(r.findings.empty()) << Findings(r);
  }

  size_t InodeRecords() {
    auto rows = table_->QueryPartition(kTable, kInodesPartition);
    return rows.ok() ? rows->size() : 999;
  }
};

TEST_F(LinkTest, NamesAcrossDirectoriesShareOneInodeTheirDataAndCount) {
  Mount m = NewMount();
  MakeTree(*m.ns);
  ASSERT_TRUE(LinkAs(*m.ns, "/a/x", "/b/x2").ok());
  ASSERT_TRUE(LinkAs(*m.ns, "/b/x2", "/a/x3").ok());
  const uint64_t ino = InoOf(*m.ns, "/a/x");
  EXPECT_EQ(InoOf(*m.ns, "/b/x2"), ino);
  EXPECT_EQ(InoOf(*m.ns, "/a/x3"), ino);
  for (const char* p : {"/a/x", "/b/x2", "/a/x3"}) EXPECT_EQ(Nlink(*m.ns, p), 3u) << p;
  Rewrite(*m.ns, "/b/x2", "new data");
  Mount other = NewMount();  // another mount sees the write through every name
  Tree t = Snapshot(other.ns.get());
  EXPECT_EQ(t["/a/x"], "f new data");
  EXPECT_EQ(t["/b/x2"], "f new data");
  EXPECT_EQ(t["/a/x3"], "f new data");
  EXPECT_EQ(BlobNames().count("a/x"), 1u);  // the blob keeps the first name's path
  EXPECT_EQ(BlobNames().count("b/x2"), 0u);
  FsckReport r = Fsck(false);
  EXPECT_TRUE(r.findings.empty()) << Findings(r);
}

TEST_F(LinkTest, RefusalsLeaveTheCountAlone) {
  Mount m = NewMount();
  MakeTree(*m.ns);
  EXPECT_TRUE(LinkAs(*m.ns, "/a/x", "/b/y").Is(Code::kAlreadyExists));
  EXPECT_TRUE(LinkAs(*m.ns, "/a/d", "/b/d2").Is(Code::kNotPermitted));
  ASSERT_TRUE(LinkAs(*m.ns, "/a/x", "/b/x2").ok());
  EXPECT_TRUE(LinkAs(*m.ns, "/a/x", "/b/y").Is(Code::kAlreadyExists));
  EXPECT_EQ(Nlink(*m.ns, "/a/x"), 2u);
  FsckReport r = Fsck(false);
  EXPECT_TRUE(r.findings.empty()) << Findings(r);
}

// link(2) needs the file committed (fs/fuse/fuse_ops.cc commits first): a file
// whose first commit has not landed is refused (EPERM), nothing linked.
TEST_F(LinkTest, ALinkOfAFileNotCommittedYetIsRefused) {
  Mount m = NewMount();
  MakeTree(*m.ns);
  const uint64_t a = InoOf(*m.ns, "/a"), b = InoOf(*m.ns, "/b");
  auto pending = m.ns->Create(a, "pending", 0644, 0, 0, true);  // not in the table yet
  auto empty = m.ns->Create(a, "empty", 0644, 0, 0);            // an entry, no blob yet
  ASSERT_TRUE(pending.ok() && empty.ok());
  EXPECT_TRUE(m.ns->Link(pending->ino, b, "p2").status().Is(Code::kNotPermitted));
  EXPECT_TRUE(m.ns->Link(empty->ino, b, "e2").status().Is(Code::kNotPermitted));
  EXPECT_EQ(InoOf(*m.ns, "/b/p2"), 0u);
  EXPECT_EQ(InoOf(*m.ns, "/b/e2"), 0u);
  EXPECT_EQ(InodeRecords(), 0u);
}

TEST_F(LinkTest, UnlinkOfTheBlobsNameMovesTheBlobToAnotherName) {
  Mount m = NewMount();
  MakeTree(*m.ns);
  ASSERT_TRUE(LinkAs(*m.ns, "/a/x", "/b/x2").ok());
  auto gone = Unlink(*m.ns, "/a/x");
  ASSERT_TRUE(gone.ok()) << gone.status().ToString();
  EXPECT_EQ(gone->names_left, 1u);
  EXPECT_TRUE(gone->blob.empty());
  EXPECT_EQ(BlobNames().count("a/x"), 0u);
  EXPECT_EQ(BlobNames().count("b/x2"), 1u);
  EXPECT_EQ(Snapshot()["/b/x2"], "f data of x");
  EXPECT_EQ(Nlink(*m.ns, "/b/x2"), 1u);
  FsckReport r = Fsck(false);
  EXPECT_TRUE(r.findings.empty()) << Findings(r);
  auto last = Unlink(*m.ns, "/b/x2");
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->names_left, 0u);
  EXPECT_EQ(last->blob, "b/x2");  // the caller deletes it, then the record
  EXPECT_TRUE(last->inode_record);
  ASSERT_TRUE(blobs_->Delete(kContainer, last->blob, Condition::None()).ok());
  EXPECT_EQ(InodeRecords(), 1u);
  m.ns->DropInodeRecord(last->attr.ino);
  EXPECT_EQ(InodeRecords(), 0u);
  r = Fsck(false);
  EXPECT_TRUE(r.findings.empty()) << Findings(r);
}

TEST_F(LinkTest, RenameOverTheBlobsNameKeepsTheOtherNamesData) {
  Mount m = NewMount();
  MakeTree(*m.ns);
  ASSERT_TRUE(LinkAs(*m.ns, "/a/x", "/b/x2").ok());
  const uint64_t ino = InoOf(*m.ns, "/a/x");  // the mount knows the inode by this name
  const uint64_t b = InoOf(*m.ns, "/b");
  auto r = m.ns->Rename(b, "y", InoOf(*m.ns, "/a"), "x", 0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // The kernel still holds the inode (a cached dentry of /b/x2): it stays usable.
  EXPECT_TRUE(m.ns->GetAttr(ino).ok());
  auto again = m.ns->Link(ino, b, "x3");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  Tree t = Snapshot();
  EXPECT_EQ(t["/a/x"], "f old y");
  EXPECT_EQ(t["/b/x2"], "f data of x");
  EXPECT_EQ(t["/b/x3"], "f data of x");
  ASSERT_TRUE(Unlink(*m.ns, "/b/x3").ok());
  EXPECT_EQ(Nlink(*m.ns, "/b/x2"), 1u);
  FsckReport f = Fsck(false);
  EXPECT_TRUE(f.findings.empty()) << Findings(f);
}

TEST_F(LinkTest, RenameOfALinkedNameMovesItsBlobAlong) {
  Mount m = NewMount();
  MakeTree(*m.ns);
  ASSERT_TRUE(LinkAs(*m.ns, "/a/x", "/a/x2").ok());
  auto r = m.ns->Rename(InoOf(*m.ns, "/a"), "x", InoOf(*m.ns, "/b"), "moved", 0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->empty());
  Tree t = Snapshot();
  EXPECT_EQ(t["/b/moved"], "f data of x");
  EXPECT_EQ(t["/a/x2"], "f data of x");
  EXPECT_EQ(t.count("/a/x"), 0u);
  EXPECT_EQ(BlobNames().count("b/moved"), 1u);
  EXPECT_EQ(BlobNames().count("a/x"), 0u);
  // Two names of one file: a rename of one over the other does nothing.
  ASSERT_TRUE(m.ns->Rename(InoOf(*m.ns, "/a"), "x2", InoOf(*m.ns, "/b"), "moved", 0).ok());
  EXPECT_EQ(Nlink(*m.ns, "/a/x2"), 2u);
  FsckReport f = Fsck(false);
  EXPECT_TRUE(f.findings.empty()) << Findings(f);
}

TEST_F(LinkTest, FsckRepairsACountAndARecordNoNameUses) {
  Mount m = NewMount();
  MakeTree(*m.ns);
  ASSERT_TRUE(LinkAs(*m.ns, "/a/x", "/b/x2").ok());
  auto rec = table_->Get(kTable, kInodesPartition, InodeRowKey(InoOf(*m.ns, "/a/x")));
  ASSERT_TRUE(rec.ok());
  Entity bumped = *rec;
  bumped.properties["nlink"] = int64_t{5};
  ASSERT_TRUE(table_->Update(kTable, bumped, UpdateMode::kReplace, Condition::None()).ok());
  Entity orphan = *rec;
  orphan.row_key = InodeRowKey(999);
  orphan.properties["ino"] = int64_t{999};
  orphan.properties["blob"] = std::string("nowhere");
  ASSERT_TRUE(table_->Insert(kTable, orphan).ok());
  FsckReport r = Fsck(false);
  EXPECT_NE(Findings(r).find("link-count"), std::string::npos) << Findings(r);
  EXPECT_NE(Findings(r).find("orphan-inode"), std::string::npos) << Findings(r);
  FsckReport repaired = Fsck(true);
  EXPECT_TRUE(repaired.clean()) << Findings(repaired);
  r = Fsck(false);
  EXPECT_TRUE(r.findings.empty()) << Findings(r);
  EXPECT_EQ(Nlink(*NewMount().ns, "/a/x"), 2u);
}

TEST_F(LinkTest, ADirectoryRenameAboveALinkedNameUpdatesItsRecord) {
  Mount m = NewMount();
  MakeTree(*m.ns);
  ASSERT_TRUE(LinkAs(*m.ns, "/a/x", "/b/x2").ok());
  ASSERT_TRUE(m.ns->Rename(kRootIno, "b", kRootIno, "c", 0).ok());
  EXPECT_EQ(Snapshot()["/c/x2"], "f data of x");
  EXPECT_EQ(Nlink(*m.ns, "/c/x2"), 2u);
  ExpectFsckClean();
  // The record knows /c/x2: the blob moves there when /a/x goes.
  ASSERT_TRUE(Unlink(*m.ns, "/a/x").ok());
  EXPECT_EQ(BlobNames().count("c/x2"), 1u);
  EXPECT_EQ(BlobNames().count("a/x"), 0u);
  EXPECT_EQ(Snapshot()["/c/x2"], "f data of x");
  ExpectFsckClean();
}

TEST_F(LinkTest, ADirectoryRenameMovesALinkedBlobNamedByAPathBelowIt) {
  Mount m = NewMount();
  MakeTree(*m.ns);
  ASSERT_TRUE(LinkAs(*m.ns, "/a/x", "/b/x2").ok());
  ASSERT_TRUE(m.ns->Rename(kRootIno, "a", kRootIno, "z", 0).ok());
  EXPECT_EQ(BlobNames().count("z/x"), 1u);
  EXPECT_EQ(BlobNames().count("a/x"), 0u);
  ExpectFsckClean();
  // The old path is free: a new file there commits without a conflict.
  const uint64_t a = Dir(*m.ns, kRootIno, "a");
  File(*m.ns, a, "/a/x", "a new file");
  Tree t = Snapshot();
  EXPECT_EQ(t["/a/x"], "f a new file");
  EXPECT_EQ(t["/z/x"], "f data of x");
  EXPECT_EQ(t["/b/x2"], "f data of x");
  ExpectFsckClean();
}

TEST_F(LinkTest, AStalePathsHintFallsBackToALinksBlobAndFsckRefreshesIt) {
  Mount m = NewMount();
  MakeTree(*m.ns);
  ASSERT_TRUE(LinkAs(*m.ns, "/a/x", "/b/x2").ok());
  const uint64_t ino = InoOf(*m.ns, "/a/x");
  // What a crash inside a directory rename leaves: paths naming old places.
  auto rec = table_->Get(kTable, kInodesPartition, InodeRowKey(ino));
  ASSERT_TRUE(rec.ok());
  Entity stale = *rec;
  SetLinkPaths({"/a/x", "/old/x2"}, &stale);
  ASSERT_TRUE(table_->Update(kTable, stale, UpdateMode::kReplace, Condition::None()).ok());
  FsckReport r = Fsck(false);
  EXPECT_NE(Findings(r).find("link-paths"), std::string::npos) << Findings(r);
  // Unlink of the blob's name finds no known survivor: the blob moves to a
  // name of its own and every name still reads the data.
  Mount other = NewMount();
  ASSERT_TRUE(Unlink(*other.ns, "/a/x").ok());
  EXPECT_EQ(BlobNames().count(BlobNameFor(LinkBlobPath(ino))), 1u);
  Tree t = Snapshot();
  EXPECT_EQ(t["/b/x2"], "f data of x");
  EXPECT_EQ(t.count("/.stampfs-links"), 0u);
  FsckReport repaired = Fsck(true);
  EXPECT_TRUE(repaired.clean()) << Findings(repaired);
  ExpectFsckClean();
  auto fixed = table_->Get(kTable, kInodesPartition, InodeRowKey(ino));
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(LinkPaths(*fixed), std::vector<std::string>{"/b/x2"});
}

// import --refresh of a container holding linked files: their blobs are the
// records' (import skips them), so no file is created or removed and the
// counts stay.
TEST_F(LinkTest, ImportLeavesLinkedFilesAndTheirBlobsAlone) {
  Mount m = NewMount();
  MakeTree(*m.ns);
  ASSERT_TRUE(LinkAs(*m.ns, "/a/x", "/b/x2").ok());
  ASSERT_TRUE(LinkAs(*m.ns, "/a/x", "/b/x3").ok());
  ASSERT_TRUE(Unlink(*m.ns, "/a/x").ok());  // the blob moves to another name's path
  auto r = ImportRefresh();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->clean());
  EXPECT_EQ(r->files_created, 0u);
  EXPECT_EQ(r->removed, 0u);
  Tree t = Snapshot();
  EXPECT_EQ(t.count("/a/x"), 0u);
  EXPECT_EQ(t["/b/x2"], "f data of x");
  EXPECT_EQ(t["/b/x3"], "f data of x");
  Mount after = NewMount();
  EXPECT_EQ(Nlink(*after.ns, "/b/x2"), 2u);
  EXPECT_EQ(Nlink(*after.ns, "/b/x3"), 2u);
  ExpectFsckClean();
}

// From the Kth storage call of the operation on, every call fails (before or
// after it is applied). Every name left reads the file's data; fsck --repair
// leaves a clean table whose counts match the names.
class LinkCrashTest : public LinkTest, public ::testing::WithParamInterface<std::tuple<int, bool>> {};

TEST_P(LinkCrashTest, EveryCrashPointLeavesEveryNameReadable) {
  // 0: first link, 1: second link, 2: unlink of the blob's name, 3: a
  // rename of the directory holding the blob's name.
  const auto& [op, after_call] = GetParam();
  auto run = [&](Namespace& ns) -> Status {
    if (op == 0) return LinkAs(ns, "/a/x", "/b/x2");
    if (op == 1) return LinkAs(ns, "/a/x", "/b/x3");
    if (op == 3) return ns.Rename(kRootIno, "a", kRootIno, "z", 0).status();
    return Unlink(ns, "/a/x").status();
  };
  auto setup = [&](Namespace& ns) {
    MakeTree(ns);
    if (op >= 1) {
      EXPECT_TRUE(LinkAs(ns, "/a/x", "/b/x2").ok());
    }
  };
  AtEveryCrashPoint(after_call, 2, setup, run, [&] {
    Tree t = Snapshot();
    int names = 0;
    for (const char* p : {"/a/x", "/b/x2", "/b/x3", "/z/x"}) {
      if (!t.count(p)) continue;
      names++;
      EXPECT_EQ(t[p], "f data of x") << p;
    }
    EXPECT_GE(names, 1);
    FsckReport repaired = Fsck(true);
    EXPECT_TRUE(repaired.clean()) << Findings(repaired);
    FsckReport r = Fsck(false);
    EXPECT_TRUE(r.findings.empty()) << Findings(r);
    Mount after = NewMount();
    t = Snapshot(after.ns.get());
    for (const char* p : {"/a/x", "/b/x2", "/b/x3", "/z/x"}) {
      if (t.count(p)) {
        EXPECT_EQ(t[p], "f data of x") << p;
        EXPECT_EQ(Nlink(*after.ns, p), static_cast<uint64_t>(names)) << p;
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Links, LinkCrashTest,
                         ::testing::Combine(::testing::Values(0, 1, 2, 3), ::testing::Bool()));

// The unlink of a linked file's last name, as fs/fuse/fuse_ops.cc runs it: the
// name, the count (0), the blob (FileData::Unlinked), the record. A crash
// at any call leaves the name readable, or nothing: fsck --repair removes
// what is left and never brings the file back (a blob left without its
// record would be imported as a file).
class LastLinkCrashTest : public LinkTest, public ::testing::WithParamInterface<bool> {};

TEST_P(LastLinkCrashTest, EveryCrashPointOfTheLastNamesUnlinkLeavesItReadableOrGone) {
  const bool after_call = GetParam();
  auto run = [&](Namespace& ns) -> Status {
    auto last = Unlink(ns, "/b/x2");
    if (!last.ok()) return last.status();
    EXPECT_TRUE(last->inode_record);
    Status s = faulty_blobs_->Delete(kContainer, last->blob, Condition::IfMatch(last->blob_etag));
    if (!s.ok()) return s;
    ns.DropInodeRecord(last->attr.ino);
    return Status::Ok();
  };
  auto setup = [&](Namespace& ns) {
    MakeTree(ns);
    EXPECT_TRUE(LinkAs(ns, "/a/x", "/b/x2").ok());
    EXPECT_TRUE(Unlink(ns, "/a/x").ok());
  };
  AtEveryCrashPoint(after_call, 3, setup, run, [&] {
    Tree t = Snapshot();
    const bool named = t.count("/b/x2") != 0;
    if (named) {
      EXPECT_EQ(t["/b/x2"], "f data of x");
    }
    FsckReport repaired = Fsck(true);
    EXPECT_TRUE(repaired.clean()) << Findings(repaired);
    ExpectFsckClean();
    t = Snapshot();
    EXPECT_EQ(t.count("/b/x2") != 0, named) << "fsck --repair brought it back";
    EXPECT_EQ(t.count("/a/x"), 0u);
    if (named) {
      EXPECT_EQ(t["/b/x2"], "f data of x");
    } else {
      EXPECT_EQ(InodeRecords(), 0u);
      EXPECT_EQ(BlobNames().count("b/x2"), 0u);
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Links, LastLinkCrashTest, ::testing::Bool());

}  // namespace
}  // namespace stampfs
