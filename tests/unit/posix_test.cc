// POSIX behaviour of the namespace on the fakes (issue 14): special files
// (mknod), rename flags, directory link counts and times.
#include <gtest/gtest.h>
#include <sys/sysmacros.h>

#include <atomic>

#include "fs/fuse/errno_map.h"
#include "fs/namespace/names.h"
#include "fs/namespace/namespace.h"
#include "storage/fakes.h"
#include "storage/table_keys.h"

namespace stampfs {
namespace {

constexpr const char* kContainer = "posixcontainer";
constexpr const char* kTable = "posixtable";

struct Mount {
  std::unique_ptr<MetaCache> cache;
  std::unique_ptr<Namespace> ns;
};

class PosixTest : public ::testing::Test {
 protected:
  void SetUp() override {
    plan_ = std::make_shared<FaultPlan>();
    faulty_table_ = MakeFaultyTableStore(*table_, plan_);
    faulty_blobs_ = MakeFaultyBlobStore(*blobs_, plan_);
  }

  // A fresh cache each time: a cold mount.
  Mount NewMount() {
    Mount m;
    auto cache = MetaCache::Open(":memory:");
    EXPECT_TRUE(cache.ok());
    m.cache = std::move(*cache);
    NamespaceOptions o;
    o.container = kContainer;
    o.table = kTable;
    o.ttl_ms = 1000;
    o.now_ms = [this] { return now_ms_.load(); };
    m.ns = std::make_unique<Namespace>(*faulty_table_, *faulty_blobs_, m.cache.get(), o);
    EXPECT_TRUE(m.ns->Init().ok());
    return m;
  }

  Result<Entity> Row(const std::string& dir, const std::string& name) {
    return table_->Get(kTable, PartitionKeyForDirectory(dir), RowKeyForName(name));
  }

  Attr Stat(Mount& m, uint64_t parent, const std::string& name) {
    auto a = m.ns->Lookup(parent, name);
    EXPECT_TRUE(a.ok()) << name << ": " << a.status().ToString();
    return a.ok() ? *a : Attr{};
  }

  nlink_t Nlink(Mount& m, uint64_t ino) {
    auto a = m.ns->GetAttr(ino);
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    return a.ok() ? ToStat(*a).st_nlink : 0;
  }

  size_t BlobCount() {
    auto list = blobs_->ListBlobs(kContainer, ListOptions{});
    EXPECT_TRUE(list.ok());
    return list.ok() ? list->blobs.size() : 0;
  }

  std::unique_ptr<TableStore> table_ = MakeFakeTableStore();
  std::unique_ptr<BlobStore> blobs_ = MakeFakeBlobStore();
  std::shared_ptr<FaultPlan> plan_;
  std::unique_ptr<TableStore> faulty_table_;
  std::unique_ptr<BlobStore> faulty_blobs_;
  std::atomic<int64_t> now_ms_{1000000};
};

// ---- special files ----

TEST_F(PosixTest, MknodStoresFifoSocketAndDevicesAsEntriesWithNoBlob) {
  Mount m = NewMount();
  const dev_t chr = makedev(1, 3), blk = makedev(7, 0);
  ASSERT_TRUE(m.ns->Mknod(kRootIno, "fifo", S_IFIFO | 0640, 0, 5, 6).ok());
  ASSERT_TRUE(m.ns->Mknod(kRootIno, "sock", S_IFSOCK | 0755, 0, 5, 6).ok());
  auto c = m.ns->Mknod(kRootIno, "chr", S_IFCHR | 0600, chr, 0, 0);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(m.ns->Mknod(kRootIno, "blk", S_IFBLK | 0660, blk, 0, 0).ok());
  EXPECT_EQ(ToStat(*c).st_rdev, chr);
  EXPECT_EQ(BlobCount(), 0u);
  auto row = Row("/", "chr");
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->GetInt64("mode"), S_IFCHR | 0600);
  EXPECT_EQ(row->GetInt64("rdev"), static_cast<int64_t>(chr));
  EXPECT_FALSE(row->Has("blob"));

  // A cold mount lists and stats them the same.
  Mount cold = NewMount();
  auto list = cold.ns->ReadDir(kRootIno);
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 4u);
  EXPECT_EQ(Stat(cold, kRootIno, "fifo").mode, S_IFIFO | 0640u);
  EXPECT_EQ(Stat(cold, kRootIno, "fifo").uid, 5u);
  EXPECT_EQ(Stat(cold, kRootIno, "sock").mode, S_IFSOCK | 0755u);
  EXPECT_EQ(ToStat(Stat(cold, kRootIno, "chr")).st_rdev, chr);
  EXPECT_EQ(ToStat(Stat(cold, kRootIno, "blk")).st_rdev, blk);
  EXPECT_EQ(ToStat(Stat(cold, kRootIno, "blk")).st_mode, S_IFBLK | 0660u);
}

TEST_F(PosixTest, MknodOfAnUnknownTypeIsInvalid) {
  Mount m = NewMount();
  EXPECT_EQ(ErrnoFor(m.ns->Mknod(kRootIno, "x", S_IFDIR | 0755, 0, 0, 0).status()), EINVAL);
  EXPECT_EQ(ErrnoFor(m.ns->Mknod(kRootIno, "x", S_IFLNK | 0755, 0, 0, 0).status()), EINVAL);
  ASSERT_TRUE(m.ns->Mknod(kRootIno, "f", S_IFIFO | 0644, 0, 0, 0).ok());
  EXPECT_EQ(ErrnoFor(m.ns->Mknod(kRootIno, "f", S_IFIFO | 0644, 0, 0, 0).status()), EEXIST);
}

TEST_F(PosixTest, MknodOfARegularFileCreatesAnEmptyFileInTheTableAtOnce) {
  Mount m = NewMount();
  auto f = m.ns->Mknod(kRootIno, "plain", S_IFREG | 0604, 0, 0, 0);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->mode, S_IFREG | 0604u);
  auto row = Row("/", "plain");
  ASSERT_TRUE(row.ok()) << "not deferred: other mounts see it at once";
  EXPECT_EQ(*row->GetString("blob"), "plain");
  EXPECT_EQ(row->GetInt64("size"), 0);
}

TEST_F(PosixTest, SpecialFilesChmodChownUtimensRenameAndUnlinkLikeAnyEntry) {
  Mount m = NewMount();
  auto d = m.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
  ASSERT_TRUE(d.ok());
  auto fifo = m.ns->Mknod(kRootIno, "p", S_IFIFO | 0644, 0, 0, 0);
  ASSERT_TRUE(fifo.ok());
  SetAttrRequest r;
  r.mode = 0600;
  r.uid = 7;
  r.gid = 8;
  r.mtime_ns = 1000000000LL * 1000000000;
  auto changed = m.ns->SetAttr(fifo->ino, r);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_EQ(changed->mode, S_IFIFO | 0600u);
  EXPECT_EQ(changed->uid, 7u);
  EXPECT_EQ(changed->mtime_ns, *r.mtime_ns);
  // Inside one directory (one transaction), then across directories (intent).
  ASSERT_TRUE(m.ns->Rename(kRootIno, "p", kRootIno, "q", 0).ok());
  ASSERT_TRUE(m.ns->Rename(kRootIno, "q", d->ino, "r", 0).ok());
  Mount cold = NewMount();
  auto d2 = cold.ns->Lookup(kRootIno, "d");
  ASSERT_TRUE(d2.ok());
  Attr moved = Stat(cold, d2->ino, "r");
  EXPECT_EQ(moved.ino, fifo->ino);
  EXPECT_EQ(moved.mode, S_IFIFO | 0600u);
  EXPECT_EQ(moved.gid, 8u);
  EXPECT_EQ(BlobCount(), 0u);
  auto gone = m.ns->Unlink(d->ino, "r");
  ASSERT_TRUE(gone.ok()) << gone.status().ToString();
  EXPECT_TRUE(gone->blob.empty());
  EXPECT_FALSE(Row("/d", "r").ok());
}

// ---- rename flags ----

TEST_F(PosixTest, NoReplaceRefusesAnExistingTargetAcrossDirectoriesToo) {
  Mount m = NewMount();
  auto d = m.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(m.ns->Symlink(kRootIno, "a", "ta", 0, 0).ok());
  ASSERT_TRUE(m.ns->Symlink(d->ino, "b", "tb", 0, 0).ok());
  EXPECT_EQ(ErrnoFor(m.ns->Rename(kRootIno, "a", d->ino, "b", Namespace::kNoReplace).status()),
            EEXIST);
  EXPECT_EQ(*m.ns->ReadLink(Stat(m, d->ino, "b").ino), "tb");
  ASSERT_TRUE(m.ns->Rename(kRootIno, "a", d->ino, "c", Namespace::kNoReplace).ok());
  EXPECT_FALSE(Row("/", "a").ok());
  EXPECT_TRUE(Row("/d", "c").ok());
}

TEST_F(PosixTest, NoReplaceLosesToAConcurrentCreateOfTheTarget) {
  // Another mount creates the target between our check and our insert: the
  // conditional insert refuses, nothing moves.
  Mount m = NewMount();
  Mount other = NewMount();
  ASSERT_TRUE(m.ns->Symlink(kRootIno, "a", "ta", 0, 0).ok());
  bool raced = false;
  plan_->SetInjector([&](const std::string& op, int) {
    if (op == "ExecuteBatch" && !raced) {
      raced = true;
      EXPECT_TRUE(other.ns->Symlink(kRootIno, "b", "theirs", 0, 0).ok());
    }
    return Status::Ok();
  });
  EXPECT_EQ(ErrnoFor(m.ns->Rename(kRootIno, "a", kRootIno, "b", Namespace::kNoReplace).status()),
            EEXIST);
  plan_->Clear();
  EXPECT_TRUE(Row("/", "a").ok());
  EXPECT_EQ(*Row("/", "b")->GetBinary("target"), Binary{"theirs"});
}

TEST_F(PosixTest, ExchangeSwapsTwoEntriesInOneTransaction) {
  Mount m = NewMount();
  auto a = m.ns->Symlink(kRootIno, "a", "ta", 0, 0);
  auto b = m.ns->Mknod(kRootIno, "b", S_IFIFO | 0600, 0, 0, 0);
  ASSERT_TRUE(a.ok() && b.ok());
  now_ms_ += 10;
  const int batches = plan_->calls("ExecuteBatch");
  auto r = m.ns->Rename(kRootIno, "a", kRootIno, "b", Namespace::kExchange);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(plan_->calls("ExecuteBatch") - batches, 1);
  Mount cold = NewMount();
  Attr na = Stat(cold, kRootIno, "a"), nb = Stat(cold, kRootIno, "b");
  EXPECT_EQ(na.ino, b->ino);
  EXPECT_EQ(na.mode, S_IFIFO | 0600u);
  EXPECT_EQ(nb.ino, a->ino);
  EXPECT_EQ(*cold.ns->ReadLink(nb.ino), "ta");
  EXPECT_GT(na.ctime_ns, b->ctime_ns) << "exchange changes both entries' ctime";
  EXPECT_GT(nb.ctime_ns, a->ctime_ns);
  // This mount's inode paths follow.
  EXPECT_EQ(*m.ns->ReadLink(a->ino), "ta");
  EXPECT_EQ(m.ns->GetAttr(b->ino)->mode, S_IFIFO | 0600u);
}

TEST_F(PosixTest, ExchangeThatFailsChangesNothing) {
  Mount m = NewMount();
  ASSERT_TRUE(m.ns->Symlink(kRootIno, "a", "ta", 0, 0).ok());
  ASSERT_TRUE(m.ns->Symlink(kRootIno, "b", "tb", 0, 0).ok());
  plan_->FailNth(1, Status(Code::kInternal, "injected", 500), "ExecuteBatch");
  EXPECT_FALSE(m.ns->Rename(kRootIno, "a", kRootIno, "b", Namespace::kExchange).ok());
  plan_->Clear();
  EXPECT_EQ(*Row("/", "a")->GetBinary("target"), Binary{"ta"});
  EXPECT_EQ(*Row("/", "b")->GetBinary("target"), Binary{"tb"});
}

TEST_F(PosixTest, ExchangeRefusals) {
  Mount m = NewMount();
  auto d = m.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(m.ns->Symlink(kRootIno, "a", "ta", 0, 0).ok());
  ASSERT_TRUE(m.ns->Symlink(d->ino, "b", "tb", 0, 0).ok());
  auto f = m.ns->Create(kRootIno, "f", 0644, 0, 0);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(m.ns->CommitFile(f->ino, 3, NowNs(), "\"0x1\"", "").ok());
  auto ex = [&](uint64_t p, const char* n, uint64_t np, const char* nn) {
    return ErrnoFor(m.ns->Rename(p, n, np, nn, Namespace::kExchange).status());
  };
  EXPECT_EQ(ex(d->ino, "b", kRootIno, "d"), EINVAL) << "a directory in another directory";
  EXPECT_EQ(ex(kRootIno, "a", kRootIno, "d"), EINVAL) << "a directory";
  EXPECT_EQ(ex(kRootIno, "a", kRootIno, "missing"), ENOENT);
  EXPECT_EQ(ex(kRootIno, "missing", kRootIno, "a"), ENOENT);
  EXPECT_EQ(*Row("/", "a")->GetBinary("target"), Binary{"ta"});
}

// ---- link counts ----

TEST_F(PosixTest, DirectoryNlinkIsTwoPlusSubdirectories) {
  Mount m = NewMount();
  auto d = m.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(Nlink(m, d->ino), 2u);
  auto s1 = m.ns->Mkdir(d->ino, "s1", 0755, 0, 0);
  ASSERT_TRUE(s1.ok());
  ASSERT_TRUE(m.ns->Mkdir(d->ino, "s2", 0755, 0, 0).ok());
  ASSERT_TRUE(m.ns->Create(d->ino, "file", 0644, 0, 0).ok());
  ASSERT_TRUE(m.ns->Mknod(d->ino, "fifo", S_IFIFO | 0644, 0, 0, 0).ok());
  EXPECT_EQ(Nlink(m, d->ino), 4u);
  ASSERT_TRUE(m.ns->Rmdir(d->ino, "s2").ok());
  EXPECT_EQ(Nlink(m, d->ino), 3u);
  // A directory renamed out of d and into the root.
  ASSERT_TRUE(m.ns->Rename(d->ino, "s1", kRootIno, "s1", 0).ok());
  EXPECT_EQ(Nlink(m, d->ino), 2u);
  EXPECT_EQ(Nlink(m, kRootIno), 4u);  // d, s1
  // A cold mount counts the same, before and after listing.
  Mount cold = NewMount();
  auto cd = cold.ns->Lookup(kRootIno, "d");
  ASSERT_TRUE(cd.ok());
  EXPECT_EQ(ToStat(*cd).st_nlink, 2u);
  EXPECT_EQ(Nlink(cold, kRootIno), 4u);
  ASSERT_TRUE(cold.ns->ReadDir(kRootIno).ok());
  EXPECT_EQ(Nlink(cold, kRootIno), 4u);
}

TEST_F(PosixTest, AnotherMountsMkdirShowsInNlinkAfterTheTtl) {
  Mount m = NewMount();
  Mount other = NewMount();
  auto d = m.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
  ASSERT_TRUE(d.ok());
  auto od = other.ns->Lookup(kRootIno, "d");
  ASSERT_TRUE(od.ok());
  EXPECT_EQ(ToStat(*od).st_nlink, 2u);
  ASSERT_TRUE(m.ns->Mkdir(d->ino, "s", 0755, 0, 0).ok());
  EXPECT_EQ(Nlink(other, od->ino), 2u) << "within the TTL";
  now_ms_ += 1001;
  EXPECT_EQ(Nlink(other, od->ino), 3u);
  ASSERT_TRUE(other.ns->Rmdir(od->ino, "s").ok());
  EXPECT_EQ(Nlink(other, od->ino), 2u) << "its own change at once";
  now_ms_ += 1001;
  EXPECT_EQ(Nlink(m, d->ino), 2u);
}

TEST_F(PosixTest, ADirectoryOverTheListingBudgetIsCountedByOneFilteredQuery) {
  Mount m = NewMount();
  auto d = m.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(m.ns->Mkdir(d->ino, "sub", 0755, 0, 0).ok());
  // More rows than 16 pages: files, written straight to the table.
  for (int i = 0; i < 16 * 1000 + 1; ++i) {
    Entity e{PartitionKeyForDirectory("/d"), RowKeyForName("g" + std::to_string(i)),
             {{"ino", int64_t{100000 + i}}, {"mode", int64_t{S_IFREG | 0644}}}, {}};
    ASSERT_TRUE(table_->Insert(kTable, e).ok());
  }
  Mount cold = NewMount();
  auto cd = cold.ns->Lookup(kRootIno, "d");
  ASSERT_TRUE(cd.ok()) << cd.status().ToString();
  EXPECT_EQ(ToStat(*cd).st_nlink, 3u);
  // Then no listing again for the TTL and after it one filtered query.
  const int queries = plan_->calls("QueryPage");
  EXPECT_EQ(ToStat(*cold.ns->GetAttr(cd->ino)).st_nlink, 3u);
  EXPECT_EQ(plan_->calls("QueryPage"), queries);
  now_ms_ += 1001;
  EXPECT_EQ(ToStat(*cold.ns->GetAttr(cd->ino)).st_nlink, 3u);
  EXPECT_EQ(plan_->calls("QueryPage"), queries + 1);
}

// ---- times ----

TEST_F(PosixTest, ChildChangesDoNotMoveTheDirectoryMtime) {
  Mount m = NewMount();
  auto d = m.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
  ASSERT_TRUE(d.ok());
  auto f = m.ns->Create(d->ino, "f", 0644, 0, 0);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(m.ns->Mkdir(d->ino, "sub", 0755, 0, 0).ok());
  const Attr before = *m.ns->GetAttr(d->ino);
  now_ms_ += 10;
  SetAttrRequest chmod;
  chmod.mode = 0600;
  ASSERT_TRUE(m.ns->SetAttr(f->ino, chmod).ok());
  SetAttrRequest touch;
  touch.mtime_ns = NowNs();
  ASSERT_TRUE(m.ns->SetAttr(f->ino, touch).ok());
  ASSERT_TRUE(m.ns->SetXattr(f->ino, "user.k", "v", 0).ok());
  ASSERT_TRUE(m.ns->CommitFile(f->ino, 10, NowNs(), "\"0x9\"", "").ok());
  ASSERT_TRUE(m.ns->SetAttr(Stat(m, d->ino, "sub").ino, chmod).ok());
  Attr after = *m.ns->GetAttr(d->ino);
  EXPECT_EQ(after.mtime_ns, before.mtime_ns);
  EXPECT_EQ(after.ctime_ns, before.ctime_ns);
  Mount cold = NewMount();
  Attr seen = Stat(cold, kRootIno, "d");
  EXPECT_EQ(seen.mtime_ns, before.mtime_ns);
  EXPECT_EQ(seen.ctime_ns, before.ctime_ns);
  // Names changing do move it.
  ASSERT_TRUE(m.ns->Mknod(d->ino, "p", S_IFIFO | 0644, 0, 0, 0).ok());
  EXPECT_GT(m.ns->GetAttr(d->ino)->mtime_ns, before.mtime_ns);
}

TEST_F(PosixTest, DirectoryStatIsTheSameBeforeAndAfterItIsListed) {
  {
    Mount m = NewMount();
    auto d = m.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
    ASSERT_TRUE(d.ok());
    ASSERT_TRUE(m.ns->Mkdir(d->ino, "sub", 0755, 0, 0).ok());
    ASSERT_TRUE(m.ns->Create(d->ino, "f", 0644, 0, 0).ok());
  }
  Mount cold = NewMount();
  Attr before = Stat(cold, kRootIno, "d");
  ASSERT_TRUE(cold.ns->ReadDir(before.ino).ok());
  Attr after = *cold.ns->GetAttr(before.ino);
  EXPECT_EQ(after.mtime_ns, before.mtime_ns);
  EXPECT_EQ(after.ctime_ns, before.ctime_ns);
  EXPECT_EQ(ToStat(after).st_nlink, ToStat(before).st_nlink);
  EXPECT_EQ(ToStat(after).st_nlink, 3u);
  now_ms_ += 5000;  // after the TTL: revalidated, still the same
  Attr later = *cold.ns->GetAttr(before.ino);
  EXPECT_EQ(later.mtime_ns, before.mtime_ns);
  EXPECT_EQ(ToStat(later).st_nlink, 3u);
}

TEST_F(PosixTest, ReaddirLeavesSubdirectoriesNotCachedToLookup) {
  {
    Mount m = NewMount();
    auto d = m.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
    ASSERT_TRUE(d.ok());
    ASSERT_TRUE(m.ns->Create(kRootIno, "f", 0644, 0, 0).ok());
  }
  Mount cold = NewMount();
  auto list = cold.ns->ReadDir(kRootIno);
  ASSERT_TRUE(list.ok());
  for (const DirEntry& e : *list) EXPECT_EQ(e.attr_complete, e.name != "d") << e.name;
  auto d = cold.ns->Lookup(kRootIno, "d");
  ASSERT_TRUE(d.ok());
  list = cold.ns->ReadDir(kRootIno);
  ASSERT_TRUE(list.ok());
  for (const DirEntry& e : *list) {
    EXPECT_TRUE(e.attr_complete) << e.name;
    if (e.name == "d") {
      EXPECT_EQ(e.attr.mtime_ns, d->mtime_ns);
      EXPECT_EQ(ToStat(e.attr).st_nlink, 2u);
    }
  }
}

TEST_F(PosixTest, AnUnchangedDirectoryIsRevalidatedWithOneDotRead) {
  Mount m = NewMount();
  auto d = m.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(m.ns->Mkdir(d->ino, "s", 0755, 0, 0).ok());
  Mount cold = NewMount();
  auto cd = cold.ns->Lookup(kRootIno, "d");
  ASSERT_TRUE(cd.ok());
  ASSERT_TRUE(cold.ns->GetAttr(kRootIno).ok());
  for (uint64_t ino : {kRootIno, cd->ino}) {
    now_ms_ += 1001;
    const uint64_t before = cold.ns->table_requests;
    EXPECT_EQ(ToStat(*cold.ns->GetAttr(ino)).st_nlink, 3u);
    EXPECT_EQ(cold.ns->table_requests - before, ino == kRootIno ? 1u : 2u)
        << "root: its '.' row; d: its entry's directory and its own '.'";
  }
}

TEST_F(PosixTest, CtimeMovesWithXattrsAndRename) {
  Mount m = NewMount();
  auto f = m.ns->Mknod(kRootIno, "f", S_IFIFO | 0644, 0, 0, 0);
  ASSERT_TRUE(f.ok());
  int64_t last = f->ctime_ns;
  auto ctime = [&] { return m.ns->GetAttr(f->ino)->ctime_ns; };
  ASSERT_TRUE(m.ns->SetXattr(f->ino, "user.k", "v", 0).ok());
  EXPECT_GT(ctime(), last);
  last = ctime();
  ASSERT_TRUE(m.ns->RemoveXattr(f->ino, "user.k").ok());
  EXPECT_GT(ctime(), last);
  last = ctime();
  ASSERT_TRUE(m.ns->Rename(kRootIno, "f", kRootIno, "g", 0).ok());
  EXPECT_GT(ctime(), last);
  auto d = m.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
  ASSERT_TRUE(d.ok());
  last = ctime();
  ASSERT_TRUE(m.ns->Rename(kRootIno, "g", d->ino, "h", 0).ok());
  EXPECT_GT(ctime(), last);
}

}  // namespace
}  // namespace stampfs
