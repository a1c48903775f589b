// -o foreign_ttl (fs/admin/foreign_view.h, fs/admin/dir_refresh.h) on the
// fakes: blobs other tools put, overwrite and delete show up in a mount
// when a directory is listed or a name in it is looked up, at most one
// check per directory per TTL; blobs stampfs writes are never adopted by
// it, and this mount's own files are left alone.
#include "fs/admin/foreign_view.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/unit/file_data_fixture.h"

namespace stampfs {
namespace {

constexpr int64_t kTtlMs = 30000;

class ForeignViewTest : public FileDataTest {
 protected:
  // A mount whose directories are checked against their blobs.
  Mount Watched(const std::string& cache) {
    Mount m = NewMount(cache);
    ImportOptions io;
    io.container = kContainer;
    io.table = kTable;
    auto view = std::make_shared<ForeignView>(*table_, *blobs_, io, kTtlMs, 5000,
                                              [this] { return now_ms_; });
    views_.push_back(view);
    m.ns->OnDirectoryRead([view](const std::string& dir) { return view->Check(dir); });
    return m;
  }
  // What another tool writes: no stampfs metadata.
  std::string Foreign(const std::string& blob, const std::string& data) {
    auto etag = raw_blobs_->PutString(kContainer, blob, data, {}, Condition::None());
    EXPECT_TRUE(etag.ok()) << etag.status().ToString();
    return etag.ok() ? *etag : "";
  }
  std::vector<std::string> Names(Mount& m, uint64_t dir) {
    auto entries = m.ns->ReadDir(dir);
    EXPECT_TRUE(entries.ok()) << entries.status().ToString();
    std::vector<std::string> out;
    if (entries.ok()) {
      for (const DirEntry& e : *entries) out.push_back(e.name);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  uint64_t Dir(Mount& m, const std::string& name) {
    auto a = m.ns->Lookup(kRootIno, name);
    EXPECT_TRUE(a.ok()) << name << ": " << a.status().ToString();
    return a.ok() ? a->ino : 0;
  }
  void Later() { now_ms_ += kTtlMs + 1000; }
  // f.txt, put by another tool holding "old" and looked up; `stale` gets
  // the inodes the kernel is told to drop.
  Result<Attr> OldFileWatched(Mount& m, std::vector<uint64_t>* stale) {
    m.data->OnKernelStale([stale](uint64_t ino) { stale->push_back(ino); });
    Foreign("f.txt", "old");
    return m.ns->Lookup(kRootIno, "f.txt");
  }

  std::vector<std::shared_ptr<ForeignView>> views_;
};

TEST_F(ForeignViewTest, BlobsPutByAnotherToolAreListedWithTheirDirectories) {
  Mount m = Watched("a");
  Foreign("top.txt", "at the top");
  Foreign("in/new.txt", "from another tool");
  Foreign("in/deep/er.txt", "deeper");
  EXPECT_EQ(Names(m, kRootIno), (std::vector<std::string>{"in", "top.txt"}));
  const uint64_t in = Dir(m, "in");
  EXPECT_EQ(Names(m, in), (std::vector<std::string>{"deep", "new.txt"}));
  EXPECT_EQ(ReadFile(m, in, "new.txt"), "from another tool");
  auto deep = m.ns->Lookup(in, "deep");
  ASSERT_TRUE(deep.ok());
  EXPECT_TRUE(deep->IsDir());
  EXPECT_EQ(Names(m, deep->ino), (std::vector<std::string>{"er.txt"}));
  EXPECT_EQ(ReadFile(m, deep->ino, "er.txt"), "deeper");
}

TEST_F(ForeignViewTest, ADirectoryIsCheckedAtMostOncePerTtl) {
  Mount m = Watched("a");
  Foreign("one.txt", "1");
  Names(m, kRootIno);
  const int lists = plan_->calls("ListBlobsPage");
  EXPECT_EQ(lists, 1);
  Foreign("two.txt", "2");
  EXPECT_EQ(Names(m, kRootIno), (std::vector<std::string>{"one.txt"}));
  EXPECT_FALSE(m.ns->Lookup(kRootIno, "two.txt").ok()) << "within the TTL: not checked again";
  EXPECT_EQ(plan_->calls("ListBlobsPage"), lists);
  Later();
  EXPECT_EQ(Names(m, kRootIno), (std::vector<std::string>{"one.txt", "two.txt"}));
  EXPECT_EQ(plan_->calls("ListBlobsPage"), lists + 1);
}

TEST_F(ForeignViewTest, ALookupOfANameTheTableLacksFindsANewBlob) {
  Mount m = Watched("a");
  Names(m, kRootIno);
  Later();
  Foreign("late.txt", "put after the listing");
  auto a = m.ns->Lookup(kRootIno, "late.txt");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->size, 21u);
  EXPECT_EQ(ReadFile(m, kRootIno, "late.txt"), "put after the listing");
}

TEST_F(ForeignViewTest, AnOverwriteUpdatesTheEntryAndReadsGetTheNewVersionWhole) {
  Mount m = Watched("a");
  Foreign("f.txt", "short");
  EXPECT_EQ(ReadFile(m, kRootIno, "f.txt"), "short");
  Foreign("f.txt", "a longer version of it");
  Later();
  Names(m, kRootIno);
  Later();  // past the namespace's TTL too
  auto a = m.ns->Lookup(kRootIno, "f.txt");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->size, 22u);
  EXPECT_EQ(ReadFile(m, kRootIno, "f.txt"), "a longer version of it");
}

TEST_F(ForeignViewTest, AnOpenAfterTheTtlChecksItsDirectoryAndDropsTheKernelsSize) {
  Mount m = Watched("a");
  std::vector<uint64_t> stale;
  auto a = OldFileWatched(m, &stale);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->size, 3u);
  Foreign("f.txt", "the new version");
  Later();
  // No listing, no lookup: the kernel opens the inode it knows.
  ASSERT_TRUE(m.data->Open(a->ino, OpenFlags{}).ok());
  EXPECT_EQ(ReadAll(m, a->ino, 15), "the new version");
  ASSERT_TRUE(m.data->Release(a->ino).ok());
  EXPECT_EQ(stale, std::vector<uint64_t>{a->ino});
  // Within the TTL a second open asks nothing.
  const int lists = plan_->calls("ListBlobsPage");
  ASSERT_TRUE(m.data->Open(a->ino, OpenFlags{}).ok());
  ASSERT_TRUE(m.data->Release(a->ino).ok());
  EXPECT_EQ(plan_->calls("ListBlobsPage"), lists);
}

TEST_F(ForeignViewTest, AFirstReadThatFindsANewerVersionDropsTheKernelsSize) {
  Mount m = Watched("a");
  std::vector<uint64_t> stale;
  auto a = OldFileWatched(m, &stale);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(m.data->Open(a->ino, OpenFlags{}).ok());  // checked: nothing new
  Foreign("f.txt", "overwritten between open and read");
  EXPECT_EQ(ReadAll(m, a->ino, 33), "overwritten between open and read");
  ASSERT_TRUE(m.data->Release(a->ino).ok());
  EXPECT_EQ(stale, std::vector<uint64_t>{a->ino});
}

TEST_F(ForeignViewTest, ADeleteRemovesTheEntryAndTheNameCanBeCreatedAgain) {
  Mount m = Watched("a");
  Foreign("gone.txt", "soon gone");
  EXPECT_EQ(Names(m, kRootIno), (std::vector<std::string>{"gone.txt"}));
  ASSERT_TRUE(raw_blobs_->Delete(kContainer, "gone.txt", Condition::None()).ok());
  Later();
  EXPECT_TRUE(Names(m, kRootIno).empty());
  EXPECT_FALSE(InTable("/", "gone.txt"));
  Commit(m, "gone.txt", "made again");
  EXPECT_EQ(Blob("gone.txt"), "made again");
  EXPECT_EQ(ConflictCopies(m), 0);
}

TEST_F(ForeignViewTest, BlobsStampfsWroteAreLeftToTheirMounts) {
  Mount m = Watched("a");
  Commit(m, "mine.txt", "committed here");
  // Another mount between its Put and its entry insert; a commit of this
  // file whose entry merge has not happened yet.
  ASSERT_TRUE(
      raw_blobs_
          ->PutString(kContainer, "theirs.txt", "in flight", {{"stampfs", "1"}}, Condition::None())
          .ok());
  ASSERT_TRUE(raw_blobs_
                  ->PutString(kContainer, "mine.txt", "a newer commit", {{"stampfs", "1"}},
                              Condition::None())
                  .ok());
  Later();
  EXPECT_EQ(Names(m, kRootIno), (std::vector<std::string>{"mine.txt"}));
  EXPECT_FALSE(InTable("/", "theirs.txt"));
  auto e = raw_table_->Get(kTable, PartitionKeyForDirectory("/"), RowKeyForName("mine.txt"));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->GetInt64("size"), 14) << "left to the commit's own entry merge";
  EXPECT_EQ(views_[0]->stats().changes, 0u);
}

TEST_F(ForeignViewTest, FilesOfThisMountAreNotChanges) {
  Mount m = Watched("a");
  Commit(m, "a.txt", "one");
  auto d = m.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
  ASSERT_TRUE(d.ok());
  Later();
  EXPECT_EQ(Names(m, kRootIno), (std::vector<std::string>{"a.txt", "d"}));
  EXPECT_TRUE(Names(m, d->ino).empty()) << "an empty directory has no blobs and stays";
  EXPECT_EQ(views_[0]->stats().changes, 0u);
  EXPECT_EQ(views_[0]->stats().checks, 2u);
}

TEST_F(ForeignViewTest, AnotherMountSeesTheAdoptedEntriesThroughTheTable) {
  Mount m = Watched("a");
  Mount other = NewMount("b");
  Foreign("shared/x.txt", "xx");
  Names(m, kRootIno);
  Names(m, Dir(m, "shared"));
  now_ms_ += 2000;  // the other mount's TTL
  auto shared = other.ns->Lookup(kRootIno, "shared");
  ASSERT_TRUE(shared.ok()) << shared.status().ToString();
  EXPECT_EQ(ReadFile(other, shared->ino, "x.txt"), "xx");
}

TEST_F(ForeignViewTest, WithoutAnAnswerTheDirectoryIsShownAsTheTableHasIt) {
  Mount m = Watched("a");
  Foreign("a.txt", "a");
  EXPECT_EQ(Names(m, kRootIno), (std::vector<std::string>{"a.txt"}));
  Foreign("b.txt", "b");
  Later();
  plan_->FailAlways(Status(Code::kTransport, "frozen"), "ListBlobsPage");
  EXPECT_EQ(Names(m, kRootIno), (std::vector<std::string>{"a.txt"}));
  EXPECT_EQ(views_[0]->stats().failures, 1u);
  plan_->Clear();
  now_ms_ += 5001;  // a failed check is retried within 5 s
  EXPECT_EQ(Names(m, kRootIno), (std::vector<std::string>{"a.txt", "b.txt"}));
}

TEST(DirRefresherNames, ABlobsDirectoryIsItsParentPrefix) {
  EXPECT_EQ(DirRefresher::DirectoryOfBlob("a.txt"), "/");
  EXPECT_EQ(DirRefresher::DirectoryOfBlob("a/b/c.txt"), "/a/b");
  EXPECT_EQ(DirRefresher::DirectoryOfBlob("a//c.txt"), std::nullopt);
  EXPECT_EQ(DirRefresher::DirectoryOfBlob("a/../c.txt"), std::nullopt);
}

}  // namespace
}  // namespace stampfs
