// -o foreign_ttl (fs/admin/foreign_view.h, fs/admin/dir_refresh.h) on the
// fakes: blobs other tools put, overwrite and delete show up in a mount
// when a directory is listed or a name in it is looked up, at most one
// check per directory per TTL; blobs stampfs writes are never adopted by
// it, and this mount's own files are left alone.
#include "fs/admin/foreign_view.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "fs/admin/overlay_table.h"
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
    Namespace* ns = m.ns.get();
    view->OnChanged([ns](const std::string& dir) { ns->DropCached(dir); }, {});
    m.ns->OnDirectoryRead([view](const std::string& dir, Namespace::DirectoryCheck how) {
      return view->Check(dir, how);
    });
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
  // A listing after the TTL starts a check on the view's thread; the one
  // after it has finished shows what it found.
  std::vector<std::string> NamesChecked(Mount& m, uint64_t dir) {
    Names(m, dir);
    for (auto& v : views_) v->Settle();
    return Names(m, dir);
  }
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
  EXPECT_EQ(NamesChecked(m, kRootIno), (std::vector<std::string>{"one.txt", "two.txt"}));
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
  NamesChecked(m, kRootIno);
  now_ms_ += 2000;  // past the namespace's TTL too
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
  EXPECT_TRUE(NamesChecked(m, kRootIno).empty());
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
  EXPECT_EQ(NamesChecked(m, kRootIno), (std::vector<std::string>{"mine.txt"}));
  EXPECT_FALSE(InTable("/", "theirs.txt"));
  auto e = raw_table_->Get(kTable, PartitionKeyForDirectory("/"), RowKeyForName("mine.txt"));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->GetInt64("size"), 14) << "left to the commit's own entry merge";
  EXPECT_EQ(views_[0]->stats().changes, 0u);
}

TEST_F(ForeignViewTest, APrefixOfStampfsBlobsAloneIsNoNewDirectory) {
  Mount m = Watched("a");
  // A directory rename of a stampfs mount half way: the table moved the
  // entry, the blobs below the old name are not deleted yet.
  for (const char* b : {"old/a", "old/sub/b"}) {
    ASSERT_TRUE(
        raw_blobs_->PutString(kContainer, b, "x", {{"stampfs", "1"}}, Condition::None()).ok());
  }
  Foreign("new/c", "another tool's");
  EXPECT_EQ(Names(m, kRootIno), (std::vector<std::string>{"new"}));
  EXPECT_FALSE(InTable("/", "old"));
}

TEST_F(ForeignViewTest, FilesOfThisMountAreNotChanges) {
  Mount m = Watched("a");
  Commit(m, "a.txt", "one");
  auto d = m.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
  ASSERT_TRUE(d.ok());
  Later();
  EXPECT_EQ(NamesChecked(m, kRootIno), (std::vector<std::string>{"a.txt", "d"}));
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
  EXPECT_EQ(NamesChecked(m, kRootIno), (std::vector<std::string>{"a.txt"}));
  EXPECT_EQ(views_[0]->stats().failures, 1u);
  plan_->Clear();
  now_ms_ += 5001;  // a failed check is retried within 5 s
  EXPECT_EQ(NamesChecked(m, kRootIno), (std::vector<std::string>{"a.txt", "b.txt"}));
}

TEST_F(ForeignViewTest, AReadOnlyMountShowsWhatItAdoptsWithoutWritingTheTable) {
  Mount rw = NewMount("rw");  // the table and its root
  Foreign("a.txt", "from outside");
  Foreign("d/b.txt", "deeper");
  auto overlay = MakeOverlayTable(*table_, kTable);
  auto meta = MetaCache::Open(":memory:");
  ASSERT_TRUE(meta.ok());
  NamespaceOptions o;
  o.container = kContainer;
  o.table = kTable;
  o.read_only = true;
  o.now_ms = [this] { return now_ms_; };
  Namespace ro(*overlay, *blobs_, meta->get(), o);
  ASSERT_TRUE(ro.Init().ok());
  ImportOptions io;
  io.container = kContainer;
  io.table = kTable;
  ForeignView view(*overlay, *blobs_, io, kTtlMs, 5000, [this] { return now_ms_; });
  view.OnChanged([&ro](const std::string& dir) { ro.DropCached(dir); }, {});
  ro.OnDirectoryRead([&view](const std::string& dir, Namespace::DirectoryCheck how) {
    return view.Check(dir, how);
  });
  auto names = [&ro, &view](uint64_t dir) {
    ro.ReadDir(dir).status().PermitUnchecked();
    view.Settle();
    std::vector<std::string> out;
    auto entries = ro.ReadDir(dir);
    EXPECT_TRUE(entries.ok()) << entries.status().ToString();
    for (const DirEntry& e : entries.ok() ? *entries : std::vector<DirEntry>{}) {
      out.push_back(e.name);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  const int writes = plan_->calls("ExecuteBatch") + plan_->calls("Update") +
                     plan_->calls("Insert") + plan_->calls("Delete");

  EXPECT_EQ(names(kRootIno), (std::vector<std::string>{"a.txt", "d"}));
  auto d = ro.Lookup(kRootIno, "d");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(names(d->ino), (std::vector<std::string>{"b.txt"}));
  auto a = ro.Lookup(kRootIno, "a.txt");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->size, 12u);
  EXPECT_GE(a->ino, kOverlayFirstIno);
  EXPECT_FALSE(InTable("/", "a.txt")) << "nothing is written to the table";
  EXPECT_EQ(plan_->calls("ExecuteBatch") + plan_->calls("Update") + plan_->calls("Insert") +
                plan_->calls("Delete"),
            writes);

  Foreign("a.txt", "changed from outside");
  ASSERT_TRUE(raw_blobs_->Delete(kContainer, "d/b.txt", Condition::None()).ok());
  Later();
  names(kRootIno);
  names(d->ino);
  now_ms_ += 2000;  // the namespace's TTL
  a = ro.Lookup(kRootIno, "a.txt");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->size, 20u);
  EXPECT_TRUE(names(d->ino).empty());

  // A writable mount adopts a blob: the table's entry wins over the overlay's.
  Foreign("c.txt", "both");
  Later();
  EXPECT_EQ(names(kRootIno), (std::vector<std::string>{"a.txt", "c.txt", "d"}));
  Names(rw, kRootIno);  // no foreign view: an import of the root instead
  ImportOptions refresh = io;
  refresh.refresh = true;
  ASSERT_TRUE(Importer(*table_, *blobs_, refresh).Run().ok());
  now_ms_ += 2000;
  auto c = ro.Lookup(kRootIno, "c.txt");
  ASSERT_TRUE(c.ok());
  EXPECT_LT(c->ino, kOverlayFirstIno) << "the table's entry";
}

BlobEvent EventFor(BlobEvent::Kind kind, const std::string& blob, const std::string& sequencer) {
  BlobEvent e;
  e.kind = kind;
  e.container = kContainer;
  e.blob = blob;
  e.sequencer = sequencer;
  e.id = blob + "@" + sequencer;
  return e;
}

TEST_F(ForeignViewTest, AnEventIsAppliedAfterReadingItsBlobAndTellsDirectoriesBeforeInodes) {
  Mount m = NewMount("a");  // no directory checks: events only
  ImportOptions io;
  io.container = kContainer;
  io.table = kTable;
  ForeignView view(*table_, *blobs_, io, kTtlMs, 5000, [this] { return now_ms_; });
  std::vector<std::string> told;
  view.OnChanged([&](const std::string& dir) { told.push_back("dir " + dir); },
                 [&](uint64_t ino) { told.push_back("ino " + std::to_string(ino)); });
  const auto created = BlobEvent::Kind::kCreated, deleted = BlobEvent::Kind::kDeleted;

  Foreign("new/deep/f.txt", "one");
  ASSERT_TRUE(view.ApplyEvent(EventFor(created, "new/deep/f.txt", "0002")).ok());
  EXPECT_EQ(told, (std::vector<std::string>{"dir /new/deep", "dir /new", "dir /"}));
  auto f = m.ns->Lookup(Dir(m, "new"), "deep");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(ReadFile(m, f->ino, "f.txt"), "one");
  auto file = m.ns->Lookup(f->ino, "f.txt");
  ASSERT_TRUE(file.ok());

  told.clear();
  Foreign("new/deep/f.txt", "two, longer");
  ASSERT_TRUE(view.ApplyEvent(EventFor(created, "new/deep/f.txt", "0003")).ok());
  EXPECT_EQ(told, (std::vector<std::string>{"dir /new/deep", "ino " + std::to_string(file->ino)}));

  told.clear();
  // Older than one applied: nothing is read or changed (a late duplicate).
  ASSERT_TRUE(raw_blobs_->Delete(kContainer, "new/deep/f.txt", Condition::None()).ok());
  ASSERT_TRUE(view.ApplyEvent(EventFor(deleted, "new/deep/f.txt", "0001")).ok());
  EXPECT_TRUE(told.empty());
  EXPECT_TRUE(InTable("/new/deep", "f.txt"));
  EXPECT_EQ(view.stats().stale_events, 1u);
  // A forged create of a blob that is not there changes nothing; the real
  // delete removes the entry.
  ASSERT_TRUE(view.ApplyEvent(EventFor(created, "new/deep/forged.txt", "0009")).ok());
  EXPECT_FALSE(InTable("/new/deep", "forged.txt"));
  ASSERT_TRUE(view.ApplyEvent(EventFor(deleted, "new/deep/f.txt", "0004")).ok());
  EXPECT_FALSE(InTable("/new/deep", "f.txt"));
  // A delete event for a blob that is still there (forged, or overtaken by
  // a newer put) removes nothing.
  Foreign("kept.txt", "kept");
  ASSERT_TRUE(view.ApplyEvent(EventFor(created, "kept.txt", "0001")).ok());
  ASSERT_TRUE(view.ApplyEvent(EventFor(deleted, "kept.txt", "0002")).ok());
  EXPECT_TRUE(InTable("/", "kept.txt"));
  // An event about a blob this mount committed changes nothing.
  Commit(m, "mine.txt", "mine");
  ASSERT_TRUE(view.ApplyEvent(EventFor(created, "mine.txt", "0001")).ok());
  EXPECT_EQ(view.stats().changes, 6u) << "new/ and deep/; f.txt new, updated, removed; kept.txt";
}

TEST(DirRefresherNames, ABlobsDirectoryIsItsParentPrefix) {
  EXPECT_EQ(DirRefresher::DirectoryOfBlob("a.txt"), "/");
  EXPECT_EQ(DirRefresher::DirectoryOfBlob("a/b/c.txt"), "/a/b");
  EXPECT_EQ(DirRefresher::DirectoryOfBlob("a//c.txt"), std::nullopt);
  EXPECT_EQ(DirRefresher::DirectoryOfBlob("a/../c.txt"), std::nullopt);
}

}  // namespace
}  // namespace stampfs
