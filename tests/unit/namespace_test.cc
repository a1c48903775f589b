// The namespace protocol on the in-memory fakes: table layout, the "." row
// generation, mkdir/rmdir ordering under injected faults, create/rmdir races
// between two mounts, cache revalidation, rename.
#include "fs/namespace/namespace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include "fs/fuse/errno_map.h"
#include "fs/namespace/inode_table.h"
#include "fs/namespace/names.h"
#include "storage/cancel.h"
#include "storage/fakes.h"
#include "storage/table_keys.h"

namespace stampfs {
namespace {

constexpr const char* kContainer = "nscontainer";
constexpr const char* kTable = "nstable";

// One "machine": a namespace with its own cache over shared stores.
struct Mount {
  std::unique_ptr<MetaCache> cache;
  std::unique_ptr<Namespace> ns;
};

class NamespaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    plan_ = std::make_shared<FaultPlan>();
    faulty_table_ = MakeFaultyTableStore(*table_, plan_);
    faulty_blobs_ = MakeFaultyBlobStore(*blobs_, plan_);
  }

  Mount NewMount(const std::string& cache_path = ":memory:") {
    Mount m;
    auto cache = MetaCache::Open(cache_path);
    EXPECT_TRUE(cache.ok()) << cache.status().ToString();
    m.cache = std::move(*cache);
    NamespaceOptions o;
    o.container = kContainer;
    o.table = kTable;
    o.ttl_ms = 1000;
    o.now_ms = [this] { return now_ms_.load(); };
    m.ns = std::make_unique<Namespace>(*faulty_table_, *faulty_blobs_, m.cache.get(), o);
    Status s = m.ns->Init();
    EXPECT_TRUE(s.ok()) << s.ToString();
    return m;
  }

  Result<Entity> Row(const std::string& dir, const std::string& name) {
    return table_->Get(kTable, PartitionKeyForDirectory(dir),
                       name == "." ? "." : RowKeyForName(name));
  }

  size_t PartitionSize(const std::string& dir) {
    auto rows = table_->QueryPartition(kTable, PartitionKeyForDirectory(dir));
    EXPECT_TRUE(rows.ok());
    return rows.ok() ? rows->size() : 0;
  }

  // /d holding `count` files named prefix+N, made through `m`; its inode.
  uint64_t DirWithFiles(Mount& m, int count, const std::string& prefix) {
    auto d = m.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    for (int i = 0; i < count && d.ok(); ++i) {
      EXPECT_TRUE(m.ns->Create(d->ino, prefix + std::to_string(i), 0644, 0, 0).ok());
    }
    return d.ok() ? d->ino : 0;
  }
  // /d as another mount sees it.
  uint64_t LookupD(Mount& m) {
    auto d = m.ns->Lookup(kRootIno, "d");
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return d.ok() ? d->ino : 0;
  }
  // /d made by `a` and listed by `b`, then `a` creates `name` in it and the
  // TTL passes: `b`'s listing is stale and no longer exact, so its lookups
  // in /d are point reads. Returns /d's inode.
  uint64_t StaleListingOfD(Mount& a, Mount& b, const std::string& name) {
    auto d = a.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    const uint64_t seen = LookupD(b);
    EXPECT_TRUE(a.ns->Create(seen, name, 0644, 0, 0).ok());
    now_ms_ += 2000;
    return seen;
  }

  std::unique_ptr<TableStore> table_ = MakeFakeTableStore();
  std::unique_ptr<BlobStore> blobs_ = MakeFakeBlobStore();
  std::shared_ptr<FaultPlan> plan_;
  std::unique_ptr<TableStore> faulty_table_;
  std::unique_ptr<BlobStore> faulty_blobs_;
  std::atomic<int64_t> now_ms_{1000000};
};

TEST_F(NamespaceTest, EntriesAreKeyedByParentDirectoryWithADotRowPerDirectory) {
  Mount m = NewMount();
  auto a = m.ns->Mkdir(kRootIno, "a", 0755, 0, 0);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto f = m.ns->Create(a->ino, "f#1.txt", 0644, 0, 0);
  ASSERT_TRUE(f.ok()) << f.status().ToString();

  auto entry = Row("/a", "f#1.txt");
  ASSERT_TRUE(entry.ok());
  EXPECT_EQ(entry->partition_key, "%2Fa");
  EXPECT_EQ(entry->row_key, "f%231.txt");
  EXPECT_EQ(entry->GetInt64("ino"), static_cast<int64_t>(f->ino));
  EXPECT_EQ(*entry->GetString("blob"), "a/f#1.txt");
  EXPECT_TRUE(Row("/a", ".").ok());
  EXPECT_TRUE(Row("/", "a").ok());
  EXPECT_NE(a->ino, f->ino);
}

TEST_F(NamespaceTest, EveryEntryChangeChangesTheDirectoryDotEtag) {
  Mount m = NewMount();
  auto a = m.ns->Mkdir(kRootIno, "a", 0755, 0, 0);
  ASSERT_TRUE(a.ok());
  std::string before = Row("/a", ".")->etag;
  ASSERT_TRUE(m.ns->Create(a->ino, "x", 0644, 0, 0).ok());
  std::string after_create = Row("/a", ".")->etag;
  EXPECT_NE(before, after_create);
  auto x = m.ns->Lookup(a->ino, "x");
  ASSERT_TRUE(x.ok());
  SetAttrRequest chmod;
  chmod.mode = 0600;
  ASSERT_TRUE(m.ns->SetAttr(x->ino, chmod).ok());
  EXPECT_NE(after_create, Row("/a", ".")->etag);
}

TEST_F(NamespaceTest, DirectoryMtimeMovesWithItsEntriesAndALaterUtimensWins) {
  Mount m = NewMount();
  auto d = m.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
  ASSERT_TRUE(d.ok());
  SetAttrRequest old_times;
  old_times.mtime_ns = 978307200LL * 1000000000;  // 2001-01-01
  ASSERT_TRUE(m.ns->SetAttr(d->ino, old_times).ok());
  EXPECT_EQ(m.ns->GetAttr(d->ino)->mtime_ns, *old_times.mtime_ns);
  ASSERT_TRUE(m.ns->Create(d->ino, "new", 0644, 0, 0).ok());
  EXPECT_GT(m.ns->GetAttr(d->ino)->mtime_ns, *old_times.mtime_ns);
  ASSERT_TRUE(m.ns->SetAttr(d->ino, old_times).ok());
  EXPECT_EQ(m.ns->GetAttr(d->ino)->mtime_ns, *old_times.mtime_ns);
}

TEST_F(NamespaceTest, InodeRangesAreTakenAheadAndGrow) {
  Mount m = NewMount();
  auto counter = [&] { return table_->Get(kTable, "~fs", "ino-counter")->GetInt64("next"); };
  const int64_t start = counter();
  ASSERT_TRUE(m.ns->ReserveInoRange().ok());
  EXPECT_EQ(counter(), start + 4096);
  uint64_t before = m.ns->table_requests;
  auto f = m.ns->Create(kRootIno, "first", 0644, 0, 0);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->ino, static_cast<uint64_t>(start)) << "the range taken at mount";
  EXPECT_EQ(m.ns->table_requests - before, 1u) << "the insert only";
  ASSERT_TRUE(m.ns->ReserveInoRange().ok());
  EXPECT_EQ(counter(), start + 4096 + 8192) << "the next range is twice as large";
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(m.ns->ReserveInoRange().ok());
  EXPECT_EQ(counter(), start + 4096 + 8192 + 16384 + 32768 + 65536 + 65536) << "up to 64Ki";
  Mount other = NewMount();
  ASSERT_TRUE(other.ns->ReserveInoRange().ok());
  auto g = other.ns->Create(kRootIno, "second", 0644, 0, 0);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->ino, static_cast<uint64_t>(start + 4096 + 8192 + 16384 + 32768 + 65536 + 65536));
}

TEST_F(NamespaceTest, NamesOver255BytesAreRefusedAnd255ByteNamesRoundTrip) {
  Mount m = NewMount();
  EXPECT_EQ(m.ns->Create(kRootIno, std::string(256, 'n'), 0644, 0, 0).status().code(),
            Code::kNameTooLong);
  std::string awkward(255, '#');  // escapes to 765 chars: a hashed RowKey
  auto f = m.ns->Create(kRootIno, awkward, 0644, 0, 0);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_TRUE(IsHashedKey(RowKeyForName(awkward)));
  Mount other = NewMount();
  auto listing = other.ns->ReadDir(kRootIno);
  ASSERT_TRUE(listing.ok());
  ASSERT_EQ(listing->size(), 1u);
  EXPECT_EQ((*listing)[0].name, awkward);
  EXPECT_TRUE(other.ns->Lookup(kRootIno, awkward).ok());
}

TEST_F(NamespaceTest, UnfinishedMkdirIsAdoptedByTheNextMkdir) {
  Mount m = NewMount();
  // The "." row is written, then the parent transaction is lost and so is
  // the cleanup: what a crash between the two partitions leaves.
  plan_->FailNth(1, RequestTimeout(), "ExecuteBatch");
  plan_->FailNth(1, RequestTimeout(), "Delete");
  EXPECT_FALSE(m.ns->Mkdir(kRootIno, "d", 0755, 0, 0).ok());
  EXPECT_TRUE(Row("/d", ".").ok());
  EXPECT_FALSE(Row("/", "d").ok());
  EXPECT_EQ(m.ns->Lookup(kRootIno, "d").status().code(), Code::kNotFound);

  plan_->Clear();
  auto d = m.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(m.ns->Create(d->ino, "inside", 0644, 0, 0).ok());
}

// Issue 27, defect 8: a kill between the two partitions of a mkdir left an
// orphan "." row (fsck exit 1 until --repair). The next mount on the same
// cache finds the mkdir it noted and removes the row; a "." row another
// mkdir adopted meanwhile (another inode) is left alone.
TEST_F(NamespaceTest, AMkdirACrashInterruptedIsSettledByTheNextMount) {
  const std::string cache = ::testing::TempDir() + "/ns-mkdir-" + std::to_string(getpid()) + ".db";
  std::filesystem::remove(cache);
  {
    Mount m = NewMount(cache);
    for (int n : {1, 2}) {
      plan_->FailNth(n, RequestTimeout(), "ExecuteBatch");
      plan_->FailNth(n, RequestTimeout(), "Delete");  // the cleanup is lost too: the crash
    }
    EXPECT_FALSE(m.ns->Mkdir(kRootIno, "d", 0755, 0, 0).ok());
    EXPECT_FALSE(m.ns->Mkdir(kRootIno, "e", 0755, 0, 0).ok());
    plan_->Clear();
  }
  ASSERT_TRUE(Row("/d", ".").ok());
  ASSERT_TRUE(Row("/e", ".").ok());
  {
    Mount other = NewMount();  // another machine adopts /e's row
    ASSERT_TRUE(other.ns->Mkdir(kRootIno, "e", 0755, 0, 0).ok());
  }
  Mount again = NewMount(cache);
  EXPECT_EQ(Row("/d", ".").status().code(), Code::kNotFound) << "the orphan row is gone";
  EXPECT_TRUE(Row("/e", ".").ok()) << "the adopted one stays";
  EXPECT_TRUE(Row("/", "e").ok());
  EXPECT_TRUE(again.ns->Mkdir(kRootIno, "d", 0755, 0, 0).ok());
  std::filesystem::remove(cache);
}

TEST_F(NamespaceTest, MkdirOverAnExistingFileLeavesNoDotRow) {
  Mount m = NewMount();
  ASSERT_TRUE(m.ns->Create(kRootIno, "f", 0644, 0, 0).ok());
  EXPECT_EQ(m.ns->Mkdir(kRootIno, "f", 0755, 0, 0).status().code(), Code::kAlreadyExists);
  EXPECT_EQ(Row("/f", ".").status().code(), Code::kNotFound);
}

TEST_F(NamespaceTest, UnfinishedRmdirAcceptsNoNewFilesAndFinishesOnRetry) {
  Mount m = NewMount();
  auto d = m.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
  ASSERT_TRUE(d.ok());
  // "." deleted, then the parent transaction fails: the crash point of rmdir.
  plan_->FailNth(1, RequestTimeout(), "ExecuteBatch");
  EXPECT_FALSE(m.ns->Rmdir(kRootIno, "d").ok());
  plan_->Clear();
  EXPECT_FALSE(Row("/d", ".").ok());
  EXPECT_TRUE(Row("/", "d").ok());

  Mount other = NewMount();
  auto seen = other.ns->Lookup(kRootIno, "d");
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ(other.ns->Create(seen->ino, "late", 0644, 0, 0).status().code(), Code::kNotFound);
  EXPECT_EQ(PartitionSize("/d"), 0u);

  EXPECT_TRUE(m.ns->Rmdir(kRootIno, "d").ok());
  EXPECT_FALSE(Row("/", "d").ok());
}

TEST_F(NamespaceTest, RmdirFailsWhenTheDirectoryIsNotEmpty) {
  Mount m = NewMount();
  auto d = m.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(m.ns->Create(d->ino, "f", 0644, 0, 0).ok());
  EXPECT_EQ(m.ns->Rmdir(kRootIno, "d").code(), Code::kNotEmpty);
  EXPECT_TRUE(Row("/d", ".").ok());
}

// Two mounts: one creates files in /d as fast as it can, the other removes
// /d. Whoever wins, no file may exist inside a removed directory.
TEST_F(NamespaceTest, ConcurrentCreateAndRmdirNeverLeaveAFileInARemovedDirectory) {
  Mount a = NewMount();
  Mount b = NewMount();
  int removed_trials = 0;
  for (int trial = 0; trial < 40; ++trial) {
    auto d = a.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    auto seen = b.ns->Lookup(kRootIno, "d");
    ASSERT_TRUE(seen.ok());
    std::atomic<bool> stop{false};
    std::atomic<int> created{0};
    std::thread creator([&] {
      for (int i = 0; !stop && i < 50; ++i) {
        if (b.ns->Create(seen->ino, "f" + std::to_string(i), 0644, 0, 0).ok()) created++;
      }
    });
    Status removed;
    for (int i = 0; i < 50; ++i) {
      removed = a.ns->Rmdir(kRootIno, "d");
      if (removed.ok()) break;
      ASSERT_EQ(removed.code(), Code::kNotEmpty) << removed.ToString();
      // Empty it and try again while the creator keeps going (past the TTL,
      // so the listing shows the other mount's files).
      now_ms_ += 2000;
      auto listing = a.ns->ReadDir(d->ino);
      ASSERT_TRUE(listing.ok());
      for (const DirEntry& e : *listing) a.ns->Unlink(d->ino, e.name).status().PermitUnchecked();
    }
    stop = true;
    creator.join();
    if (removed.ok()) {
      removed_trials++;
      EXPECT_EQ(PartitionSize("/d"), 0u) << "trial " << trial << ": file left in removed dir";
      EXPECT_FALSE(Row("/", "d").ok());
    } else {
      // Clean up for the next trial.
      now_ms_ += 2000;
      auto listing = a.ns->ReadDir(d->ino);
      ASSERT_TRUE(listing.ok());
      for (const DirEntry& e : *listing) a.ns->Unlink(d->ino, e.name).status().PermitUnchecked();
      ASSERT_TRUE(a.ns->Rmdir(kRootIno, "d").ok());
    }
  }
  EXPECT_GT(removed_trials, 0) << "the race was never run to a removal";
}

TEST_F(NamespaceTest, RootListedAtMountAnswersLookupsForATtlThenOneDotRead) {
  Mount a = NewMount();
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(a.ns->Mkdir(kRootIno, "d" + std::to_string(i), 0755, 0, 0).ok());
  Mount b = NewMount();
  uint64_t before = b.ns->table_requests;
  ASSERT_TRUE(b.ns->ListRoot().ok());
  EXPECT_EQ(b.ns->table_requests - before, 1u) << "one page";
  before = b.ns->table_requests;
  EXPECT_TRUE(b.ns->Lookup(kRootIno, "d1").ok());
  EXPECT_TRUE(b.ns->Lookup(kRootIno, "missing").status().Is(Code::kNotFound));
  EXPECT_EQ(b.ns->ReadDir(kRootIno)->size(), 3u);
  EXPECT_EQ(b.ns->table_requests - before, 1u)
      << "within the TTL: only d1's own partition (its times and link count), one page";
  ASSERT_TRUE(a.ns->Mkdir(kRootIno, "late", 0755, 0, 0).ok());
  now_ms_ += 5000;
  before = b.ns->table_requests;
  EXPECT_TRUE(b.ns->Lookup(kRootIno, "d2").ok());
  EXPECT_TRUE(b.ns->Lookup(kRootIno, "late").ok())
      << "another mount's change is seen after the TTL";
  EXPECT_GE(b.ns->table_requests - before, 1u);
}

TEST_F(NamespaceTest, RootOfManyPagesIsLeftToPointReadsAtMount) {
  Mount a = NewMount();
  for (int i = 0; i < 1001; ++i)
    ASSERT_TRUE(a.ns->Create(kRootIno, "f" + std::to_string(i), 0644, 0, 0).ok());
  Mount b = NewMount();
  ASSERT_TRUE(b.ns->ListRoot().ok());
  EXPECT_TRUE(b.ns->Lookup(kRootIno, "f1000").ok());
  EXPECT_EQ(b.ns->ReadDir(kRootIno)->size(), 1001u);
}

TEST_F(NamespaceTest, ListingWithinTtlNeedsNoRequestAndAfterTtlOneDotRead) {
  Mount m = NewMount();
  auto d = m.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
  ASSERT_TRUE(d.ok());
  for (int i = 0; i < 20; ++i)
    ASSERT_TRUE(m.ns->Create(d->ino, "f" + std::to_string(i), 0644, 0, 0).ok());
  uint64_t before = m.ns->table_requests;
  ASSERT_EQ(m.ns->ReadDir(d->ino)->size(), 20u);
  EXPECT_EQ(m.ns->table_requests - before, 0u) << "own writes keep the listing exact";
  now_ms_ += 5000;
  int queries = plan_->calls("QueryPage");
  before = m.ns->table_requests;
  ASSERT_EQ(m.ns->ReadDir(d->ino)->size(), 20u);
  EXPECT_EQ(m.ns->table_requests - before, 1u);
  EXPECT_EQ(plan_->calls("QueryPage"), queries) << "unchanged '.' ETag: no listing";
}

TEST_F(NamespaceTest, AListingIsOneQueryPageWithTheDotRowInIt) {
  Mount a = NewMount();
  const uint64_t d = DirWithFiles(a, 5, "f");
  Mount b = NewMount();
  const int gets = plan_->calls("Get");
  uint64_t before = b.ns->table_requests;
  // The lookup reads /d's entry and lists /d (its link count and times);
  // the readdir reuses that listing.
  const uint64_t seen = LookupD(b);
  ASSERT_EQ(b.ns->ReadDir(seen)->size(), 5u);
  EXPECT_EQ(b.ns->table_requests - before, 2u);
  EXPECT_EQ(plan_->calls("Get"), gets + 1) << "the entry; the '.' row came with the page";
  // The listing is exact for that "." ETag: a change shows after the TTL.
  ASSERT_TRUE(a.ns->Create(d, "late", 0644, 0, 0).ok());
  now_ms_ += 1001;
  EXPECT_EQ(b.ns->ReadDir(seen)->size(), 6u);
}

TEST_F(NamespaceTest, ADotRowPastTheFirstPageIsReadBeforeTheListing) {
  Mount a = NewMount();
  // 1,001 names sort before "." (a page is 1,000 entities).
  const uint64_t d = DirWithFiles(a, 1001, "-");
  Mount b = NewMount();
  const uint64_t seen = LookupD(b);
  ASSERT_EQ(b.ns->ReadDir(seen)->size(), 1001u);
  ASSERT_TRUE(a.ns->Create(d, "-late", 0644, 0, 0).ok());
  now_ms_ += 1001;
  EXPECT_EQ(b.ns->ReadDir(seen)->size(), 1002u) << "the recorded '.' ETag was current";
}

// Issue 27, defect 4: with the service away, what the cache holds answers
// past the TTL (stat, lookups, listings, a create in a cached directory);
// what it does not hold fails, and so does a read before a conditional write.
TEST_F(NamespaceTest, OfflineTheCacheAnswersPastItsTtl) {
  Mount a = NewMount();
  const uint64_t d = DirWithFiles(a, 3, "f");
  Mount b = NewMount();  // knows nothing of /d
  ASSERT_EQ(a.ns->ReadDir(d)->size(), 3u);
  ASSERT_TRUE(a.ns->Lookup(d, "f1").ok());
  now_ms_ += 5000;
  plan_->FailAlways(RequestTimeout());

  auto root = a.ns->GetAttr(kRootIno);
  EXPECT_TRUE(root.ok()) << root.status().ToString();
  auto dir = a.ns->Lookup(kRootIno, "d");
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  EXPECT_TRUE(a.ns->GetAttr(d).ok());
  auto listed = a.ns->ReadDir(d);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(listed->size(), 3u);
  EXPECT_TRUE(a.ns->Lookup(d, "f1").ok());
  EXPECT_TRUE(a.ns->Lookup(d, "absent").status().Is(Code::kNotFound)) << "a complete listing";
  auto made = a.ns->Create(d, "new", 0644, 0, 0, true);
  EXPECT_TRUE(made.ok()) << made.status().ToString();

  EXPECT_TRUE(b.ns->Lookup(kRootIno, "d").status().Is(Code::kTimeout)) << "nothing cached";
  EXPECT_TRUE(a.ns->Unlink(d, "f2").status().Is(Code::kTimeout)) << "needs the table";
  plan_->Clear();
}

// A revalidation the service does not answer gives up after offline_after_ms
// (5 s by default), not the request's own deadline, and the cache answers.
TEST_F(NamespaceTest, ARevalidationWaitsOfflineAfterThenTheCacheAnswers) {
  Mount a = NewMount();
  const uint64_t d = DirWithFiles(a, 1, "f");
  ASSERT_EQ(a.ns->ReadDir(d)->size(), 1u);
  now_ms_ += 5000;
  // A service that never answers; the transport gives up when cancelled.
  plan_->SetInjector([](const std::string&, int) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!CurrentlyCancelled() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return CurrentlyCancelled() ? Cancelled("get") : RequestTimeout();
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto listed = a.ns->ReadDir(d);
  const auto waited = std::chrono::steady_clock::now() - t0;
  plan_->Clear();
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(listed->size(), 1u);
  EXPECT_GE(waited, std::chrono::milliseconds(4900));
  EXPECT_LT(waited, std::chrono::seconds(10));

  // An interrupt of the caller stays an interrupt (EINTR), not "offline".
  now_ms_ += 5000;
  plan_->SetInjector([](const std::string&, int) {
    while (!CurrentlyCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return Cancelled("get");
  });
  CancelToken interrupt;
  interrupt.CancelAt(CancelToken::Clock::now() + std::chrono::milliseconds(100));
  ScopedCancelToken scoped(&interrupt);
  EXPECT_TRUE(a.ns->ReadDir(d).status().Is(Code::kCancelled));
  plan_->Clear();
}

TEST_F(NamespaceTest, ManyLookupsInAnUnlistedDirectoryListItOnce) {
  Mount a = NewMount();
  const uint64_t d = DirWithFiles(a, 100, "f");
  Mount b = NewMount();
  const uint64_t seen = LookupD(b);  // lists /d (its link count)
  // Another mount's change: after the TTL the listing is dropped.
  ASSERT_TRUE(a.ns->Create(d, "extra", 0644, 0, 0).ok());
  now_ms_ += 1001;
  uint64_t before = b.ns->table_requests;
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(b.ns->Lookup(seen, "f" + std::to_string(i)).ok()) << i;
  EXPECT_TRUE(b.ns->Lookup(seen, "absent").status().Is(Code::kNotFound));
  EXPECT_EQ(b.ns->table_requests - before, 9u)
      << "one '.' read finds it changed, 7 point queries, then one listing";

  // After the TTL, one "." read revalidates them all.
  now_ms_ += 1001;
  before = b.ns->table_requests;
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(b.ns->Lookup(seen, "f" + std::to_string(i)).ok());
  EXPECT_EQ(b.ns->table_requests - before, 1u);

  // A change: names go back to point queries (the new name is seen), not a
  // listing per lookup.
  ASSERT_TRUE(a.ns->Create(d, "new", 0644, 0, 0).ok());
  now_ms_ += 1001;
  before = b.ns->table_requests;
  EXPECT_TRUE(b.ns->Lookup(seen, "new").ok());
  EXPECT_EQ(b.ns->table_requests - before, 2u) << "the '.' read, then the entry";
}

TEST_F(NamespaceTest, ADirectoryOverTheListingBudgetStaysWithPointQueries) {
  Mount a = NewMount();
  ASSERT_NE(DirWithFiles(a, 0, ""), 0u);
  // More entities than 16 pages, written straight to the table.
  for (int i = 0; i < 16 * 1000 + 1; ++i) {
    Entity e{PartitionKeyForDirectory("/d"), RowKeyForName("g" + std::to_string(i)), {}, {}};
    ASSERT_TRUE(table_->Insert(kTable, e).ok());
  }
  Mount b = NewMount();
  const int start = plan_->calls("QueryPage");
  // The lookup of /d spends the budget (its link count), then counts its
  // subdirectories with one filtered query.
  const uint64_t seen = LookupD(b);
  int queries = 0;
  for (int i = 0; i < 20; ++i) {
    (void)b.ns->Lookup(seen, "x" + std::to_string(i));
    if (i == 7) queries = plan_->calls("QueryPage");
  }
  EXPECT_EQ(plan_->calls("QueryPage"), queries) << "not listed again after the budget ran out";
  EXPECT_EQ(queries - start, 16 + 1);
}

TEST_F(NamespaceTest, TheRootsAttributesAreCachedForTheTtl) {
  Mount m = NewMount();
  ASSERT_TRUE(m.ns->GetAttr(kRootIno).ok());
  ASSERT_TRUE(m.ns->Create(kRootIno, "f", 0644, 0, 0).ok());
  SetAttrRequest chmod;
  chmod.mode = 0700;
  ASSERT_TRUE(m.ns->SetAttr(kRootIno, chmod).ok());
  uint64_t before = m.ns->table_requests;
  auto root = m.ns->GetAttr(kRootIno);
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(root->mode & 07777, 0700u) << "this mount's own change shows at once";
  EXPECT_EQ(m.ns->table_requests - before, 0u);
  Mount other = NewMount();
  chmod.mode = 0750;
  ASSERT_TRUE(other.ns->SetAttr(kRootIno, chmod).ok());
  now_ms_ += 1001;
  before = m.ns->table_requests;
  root = m.ns->GetAttr(kRootIno);
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(root->mode & 07777, 0750u) << "another mount's change shows after the TTL";
  // The "." read, and (its ETag changed) the listing for the link count.
  EXPECT_EQ(m.ns->table_requests - before, 2u);
}

TEST_F(NamespaceTest, AnotherMountsChangeIsSeenAfterTheTtl) {
  Mount a = NewMount();
  Mount b = NewMount();
  auto d = a.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(a.ns->ReadDir(d->ino)->empty());
  auto seen = b.ns->Lookup(kRootIno, "d");
  ASSERT_TRUE(seen.ok());
  ASSERT_TRUE(b.ns->Create(seen->ino, "new", 0644, 0, 0).ok());
  EXPECT_TRUE(a.ns->ReadDir(d->ino)->empty()) << "within the TTL the cache is trusted";
  now_ms_ += 1001;
  auto listing = a.ns->ReadDir(d->ino);
  ASSERT_TRUE(listing.ok());
  ASSERT_EQ(listing->size(), 1u);
  EXPECT_EQ((*listing)[0].name, "new");
}

TEST_F(NamespaceTest, RemountWithTheSameCacheListsAKnownDirectoryWithoutAQuery) {
  std::string dir = ::testing::TempDir() + "/ns-cache-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  uint64_t d_ino;
  {
    Mount m = NewMount(dir + "/meta.db");
    auto d = m.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
    ASSERT_TRUE(d.ok());
    d_ino = d->ino;
    for (int i = 0; i < 5; ++i)
      ASSERT_TRUE(m.ns->Create(d->ino, "f" + std::to_string(i), 0644, 0, 0).ok());
    ASSERT_EQ(m.ns->ReadDir(d->ino)->size(), 5u);
  }
  now_ms_ += 60000;
  Mount again = NewMount(dir + "/meta.db");
  auto d = again.ns->Lookup(kRootIno, "d");
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->ino, d_ino);
  int queries = plan_->calls("QueryPage");
  auto listing = again.ns->ReadDir(d->ino);
  ASSERT_TRUE(listing.ok());
  EXPECT_EQ(listing->size(), 5u);
  EXPECT_EQ(plan_->calls("QueryPage"), queries);
  std::filesystem::remove_all(dir);
}

TEST_F(NamespaceTest, RenameInsideOneDirectoryIsOneTransaction) {
  Mount m = NewMount();
  auto f = m.ns->Create(kRootIno, "old", 0644, 0, 0);
  ASSERT_TRUE(f.ok());
  int batches = plan_->calls("ExecuteBatch");
  auto r = m.ns->Rename(kRootIno, "old", kRootIno, "new", 0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(plan_->calls("ExecuteBatch") - batches, 1);
  EXPECT_FALSE(Row("/", "old").ok());
  auto moved = Row("/", "new");
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(moved->GetInt64("ino"), static_cast<int64_t>(f->ino));
}

TEST_F(NamespaceTest, RenameNoReplaceRefusesAnExistingTarget) {
  Mount m = NewMount();
  ASSERT_TRUE(m.ns->Create(kRootIno, "a", 0644, 0, 0).ok());
  ASSERT_TRUE(m.ns->Create(kRootIno, "b", 0644, 0, 0).ok());
  EXPECT_EQ(m.ns->Rename(kRootIno, "a", kRootIno, "b", Namespace::kNoReplace).status().code(),
            Code::kAlreadyExists);
  EXPECT_TRUE(m.ns->Rename(kRootIno, "a", kRootIno, "b", 0).ok());
  EXPECT_FALSE(Row("/", "a").ok());
}

TEST_F(NamespaceTest, DirectoryRenameMovesEveryDescendantPartitionAndBlob) {
  Mount m = NewMount();
  auto a = m.ns->Mkdir(kRootIno, "a", 0755, 0, 0);
  ASSERT_TRUE(a.ok());
  auto b = m.ns->Mkdir(a->ino, "b", 0755, 0, 0);
  ASSERT_TRUE(b.ok());
  auto f = m.ns->Create(b->ino, "f", 0644, 0, 0);
  ASSERT_TRUE(f.ok());
  auto etag = blobs_->PutString(kContainer, "a/b/f", "data", {}, Condition::IfNoneMatchAny());
  ASSERT_TRUE(etag.ok());
  ASSERT_TRUE(m.ns->CommitFile(f->ino, 4, NowNs(), *etag, "").ok());

  auto r = m.ns->Rename(kRootIno, "a", kRootIno, "z", 0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(PartitionSize("/a"), 0u);
  EXPECT_EQ(PartitionSize("/a/b"), 0u);
  EXPECT_TRUE(Row("/z", ".").ok());
  EXPECT_TRUE(Row("/z/b", ".").ok());
  auto moved = Row("/z/b", "f");
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(*moved->GetString("blob"), "z/b/f");
  EXPECT_EQ(*blobs_->ReadToString(kContainer, "z/b/f"), "data");
  EXPECT_EQ(blobs_->GetProperties(kContainer, "a/b/f").status().code(), Code::kNotFound);
  // The inode keeps its number and now resolves under the new path.
  auto state = m.ns->GetFile(f->ino);
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_EQ(state->path, "/z/b/f");
}

TEST_F(NamespaceTest, CreateInADirectoryRemovedByAnotherMountFails) {
  Mount a = NewMount();
  Mount b = NewMount();
  auto d = a.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
  ASSERT_TRUE(d.ok());
  auto seen = b.ns->Lookup(kRootIno, "d");
  ASSERT_TRUE(seen.ok());
  ASSERT_TRUE(a.ns->Rmdir(kRootIno, "d").ok());
  EXPECT_EQ(b.ns->Create(seen->ino, "f", 0644, 0, 0).status().code(), Code::kNotFound);
  EXPECT_EQ(PartitionSize("/d"), 0u);
}

TEST_F(NamespaceTest, TwoMountsNeverAllocateTheSameInode) {
  Mount a = NewMount();
  Mount b = NewMount();
  std::set<uint64_t> inos;
  for (int i = 0; i < 30; ++i) {
    auto x = a.ns->Create(kRootIno, "a" + std::to_string(i), 0644, 0, 0);
    auto y = b.ns->Create(kRootIno, "b" + std::to_string(i), 0644, 0, 0);
    ASSERT_TRUE(x.ok() && y.ok());
    EXPECT_TRUE(inos.insert(x->ino).second);
    EXPECT_TRUE(inos.insert(y->ino).second);
  }
}

TEST_F(NamespaceTest, XattrsAreStoredInTheEntryWithCreateAndReplaceFlags) {
  Mount m = NewMount();
  auto f = m.ns->Create(kRootIno, "f", 0644, 0, 0);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(m.ns->GetXattr(f->ino, "user.a").status().code(), Code::kNoAttribute);
  EXPECT_EQ(m.ns->SetXattr(f->ino, "user.a", "1", Namespace::kXattrReplace).code(),
            Code::kNoAttribute);
  ASSERT_TRUE(m.ns->SetXattr(f->ino, "user.a", std::string("v\0w", 3), 0).ok());
  EXPECT_EQ(m.ns->SetXattr(f->ino, "user.a", "2", Namespace::kXattrCreate).code(),
            Code::kAlreadyExists);
  Mount other = NewMount();
  auto seen = other.ns->Lookup(kRootIno, "f");
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ(*other.ns->GetXattr(seen->ino, "user.a"), std::string("v\0w", 3));
  ASSERT_TRUE(m.ns->RemoveXattr(f->ino, "user.a").ok());
  EXPECT_TRUE(m.ns->ListXattr(f->ino)->empty());
  EXPECT_EQ(m.ns->SetXattr(f->ino, "user.big", std::string(70000, 'x'), 0).code(), Code::kTooLarge);
  EXPECT_EQ(m.ns->SetXattr(f->ino, "system.posix_acl_access", "x", 0).code(), Code::kNotSupported);
}

NamespaceOptions ReadOnlyOptions() {
  NamespaceOptions o;
  o.container = kContainer;
  o.table = kTable;
  o.read_only = true;
  return o;
}

TEST_F(NamespaceTest, ReadOnlyMountRefusesChanges) {
  NewMount();  // initializes the table
  auto cache = MetaCache::Open(":memory:");
  ASSERT_TRUE(cache.ok());
  Namespace ro(*table_, *blobs_, cache->get(), ReadOnlyOptions());
  ASSERT_TRUE(ro.Init().ok());
  EXPECT_EQ(ro.Create(kRootIno, "f", 0644, 0, 0).status().code(), Code::kReadOnly);
  EXPECT_EQ(ro.Mkdir(kRootIno, "d", 0755, 0, 0).status().code(), Code::kReadOnly);
}

// A read-only mount of a container no writable mount or import has set up
// (blobs, no table): the error says what to run.
TEST_F(NamespaceTest, AReadOnlyMountWithoutATableSaysToImportFirst) {
  ASSERT_TRUE(blobs_->CreateContainer(kContainer).ok());
  auto cache = MetaCache::Open(":memory:");
  ASSERT_TRUE(cache.ok());
  Namespace ro(*table_, *blobs_, cache->get(), ReadOnlyOptions());
  Status s = ro.Init();
  EXPECT_TRUE(s.Is(Code::kNotFound)) << s.ToString();
  EXPECT_NE(s.message().find("stampfs import " + std::string(kContainer)), std::string::npos)
      << s.ToString();
}

}  // namespace
}  // namespace stampfs

namespace stampfs {
namespace {

TEST(BlobNames, BackslashIsStoredAsAPrivateUseCharacterNotASeparator) {
  EXPECT_EQ(BlobNameFor("/d/a.txt"), "d/a.txt");
  EXPECT_EQ(BlobNameFor("/d/back\\slash"), "d/back\xEF\x81\x9Cslash");
  EXPECT_NE(BlobNameFor("/d/back\\slash"), BlobNameFor("/d/back/slash"));
  // Bytes that are not UTF-8 map one to one; valid UTF-8 stays as it is.
  EXPECT_EQ(BlobNameFor("/x\xff\xfe"), "x\xEF\x83\xBF\xEF\x83\xBE");
  EXPECT_EQ(BlobNameFor("/caf\xC3\xA9"), "caf\xC3\xA9");
}

// "a\\b" is stored as blob "a<U+F05C>b" and "c<0xC3>d" as "c<U+F0C3>d": a file
// named with those characters would share the other's blob (a rename onto
// the twin overwrote the other file's data). The twin is refused: EILSEQ.
TEST_F(NamespaceTest, NamesHoldingTheBlobEscapeCharactersAreRefused) {
  Mount m = NewMount();
  ASSERT_TRUE(m.ns->Create(kRootIno, "a\\b", 0644, 0, 0).ok());
  ASSERT_TRUE(m.ns->Create(kRootIno, "c\xC3" "d", 0644, 0, 0).ok());
  const std::string twins[] = {"a\xEF\x81\x9C" "b", "c\xEF\x83\x83" "d", "x\xEF\x82\x80"};
  for (const std::string& twin : twins) {
    EXPECT_TRUE(m.ns->Create(kRootIno, twin, 0644, 0, 0).status().Is(Code::kIllegalSequence));
    EXPECT_TRUE(m.ns->Mkdir(kRootIno, twin, 0755, 0, 0).status().Is(Code::kIllegalSequence));
    EXPECT_TRUE(m.ns->Symlink(kRootIno, twin, "t", 0, 0).status().Is(Code::kIllegalSequence));
    EXPECT_TRUE(m.ns->Rename(kRootIno, "a\\b", kRootIno, twin, 0).status().Is(Code::kIllegalSequence));
    EXPECT_TRUE(m.ns->Lookup(kRootIno, twin).status().Is(Code::kNotFound)) << "lookups answer";
  }
  // Other private-use characters map to themselves and are allowed.
  EXPECT_TRUE(m.ns->Create(kRootIno, "y\xEF\x81\x9B", 0644, 0, 0).ok());
  EXPECT_EQ(ErrnoFor(Status(Code::kIllegalSequence, "")), EILSEQ);
  auto listing = m.ns->ReadDir(kRootIno);
  ASSERT_TRUE(listing.ok());
  std::set<std::string> blobs;
  for (const DirEntry& e : *listing) blobs.insert(BlobNameFor("/" + e.name));
  EXPECT_EQ(blobs.size(), listing->size()) << "one blob per name";
}

TEST_F(NamespaceTest, FilesWithNamesThatAreNotUtf8CanBeCreated) {
  Mount m = NewMount();
  auto f = m.ns->Create(kRootIno, "\xff\xfe", 0644, 0, 0);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto listing = NewMount().ns->ReadDir(kRootIno);
  ASSERT_TRUE(listing.ok());
  ASSERT_EQ(listing->size(), 1u);
  EXPECT_EQ((*listing)[0].name, "\xff\xfe");
}

}  // namespace
}  // namespace stampfs

namespace stampfs {
namespace {

// A create that loses the race to another mount (within the TTL, while this
// mount's listing of the directory still claims to be complete) must let the
// lookup that follows see the winner's entry: O_CREAT without O_EXCL opens it.
TEST_F(NamespaceTest, ALostCreateRaceSeesTheWinnersEntryAtOnce) {
  Mount a = NewMount();
  Mount b = NewMount();
  auto d = a.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(a.ns->ReadDir(d->ino)->empty());
  auto seen = b.ns->Lookup(kRootIno, "d");
  ASSERT_TRUE(seen.ok());
  auto won = b.ns->Create(seen->ino, "f", 0644, 0, 0);
  ASSERT_TRUE(won.ok());
  EXPECT_EQ(a.ns->Create(d->ino, "f", 0644, 0, 0).status().code(), Code::kAlreadyExists);
  auto found = a.ns->Lookup(d->ino, "f");
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(found->ino, won->ino);
}

// Another mount commits data to the file (its entry's ETag changes) between
// the unlink's read and its delete: the unlink reads it again and succeeds.
TEST_F(NamespaceTest, UnlinkOfAnEntryChangedMeanwhileRereadsAndRemovesIt) {
  Mount a = NewMount();
  ASSERT_TRUE(a.ns->Create(kRootIno, "f", 0644, 0, 0).ok());
  bool changed = false;
  plan_->SetInjector([&](const std::string& op, int) {
    if (op == "ExecuteBatch" && !changed) {
      changed = true;
      auto row = Row("/", "f");
      EXPECT_TRUE(row.ok());
      Entity e{row->partition_key, row->row_key, {{"size", int64_t{5}}}, {}};
      EXPECT_TRUE(table_->Update(kTable, e, UpdateMode::kMerge, Condition::IfMatch("*")).ok());
    }
    return Status::Ok();
  });
  auto gone = a.ns->Unlink(kRootIno, "f");
  plan_->SetInjector(nullptr);
  ASSERT_TRUE(changed);
  EXPECT_TRUE(gone.ok()) << gone.status().ToString();
  EXPECT_TRUE(Row("/", "f").status().Is(Code::kNotFound));
}

// A lookup answered from the table before an unlink here, whose answer
// arrives after the unlink, must not put the removed entry back in the cache:
// a later lookup found it there, and the kernel opened the removed inode
// again (e2e unlinked: SQLite's -wal, whose next commit then failed against
// its deleted blob and became a conflict copy).
TEST_F(NamespaceTest, AReadAnsweredBeforeAnUnlinkHereDoesNotBringTheEntryBack) {
  Mount a = NewMount();
  Mount b = NewMount();
  const uint64_t d = StaleListingOfD(a, b, "f");
  bool unlinked = false;
  plan_->SetAfterReadHook([&](const std::string&, const std::string& row_key) {
    if (row_key != RowKeyForName("f")) return;
    plan_->SetAfterReadHook(nullptr);
    unlinked = b.ns->Unlink(d, "f").ok();
  });
  auto raced = b.ns->Lookup(d, "f");
  plan_->SetAfterReadHook(nullptr);
  ASSERT_TRUE(unlinked);
  EXPECT_TRUE(raced.ok()) << "answered before the unlink: " << raced.status().ToString();
  EXPECT_TRUE(Row("/d", "f").status().Is(Code::kNotFound));
  auto again = b.ns->Lookup(d, "f");  // within the TTL
  EXPECT_TRUE(again.status().Is(Code::kNotFound)) << "the removed entry came back from the cache";
}

// The other way round: a 404 answered before a create here must not erase
// the new entry from the cache.
TEST_F(NamespaceTest, ANotFoundAnsweredBeforeACreateHereDoesNotHideTheNewEntry) {
  Mount a = NewMount();
  Mount b = NewMount();
  const uint64_t d = StaleListingOfD(a, b, "g");
  uint64_t created = 0;
  plan_->SetAfterReadHook([&](const std::string&, const std::string& row_key) {
    if (row_key != RowKeyForName("f")) return;
    plan_->SetAfterReadHook(nullptr);
    auto f = b.ns->Create(d, "f", 0644, 0, 0);
    created = f.ok() ? f->ino : 0;
  });
  EXPECT_TRUE(b.ns->Lookup(d, "f").status().Is(Code::kNotFound));
  plan_->SetAfterReadHook(nullptr);
  ASSERT_NE(created, 0u);
  const int gets = plan_->calls("Get");
  auto again = b.ns->Lookup(d, "f");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->ino, created);
  EXPECT_EQ(plan_->calls("Get"), gets) << "the create's entry was erased from the cache";
}

// The root's attributes live on its "." row, which every transaction in the
// root changes: a chmod/utimens of the root while another writer commits
// files there (tar's utime of "." at the end of an untar into the root)
// must not lose to them on every attempt (it was EIO), nor undo them.
TEST_F(NamespaceTest, ARootChmodWhileTheRootKeepsChangingLandsAndKeepsTheirChanges) {
  Mount a = NewMount();
  Mount b = NewMount();
  ASSERT_TRUE(b.ns->Create(kRootIno, "first", 0644, 0, 0).ok());  // b's inode range taken
  int created = 1;
  bool inside = false;
  plan_->SetInjector([&](const std::string& op, int) {
    if (op == "Update" && !inside && created < 8) {  // before each of a's writes of "."
      inside = true;
      EXPECT_TRUE(b.ns->Create(kRootIno, "f" + std::to_string(created++), 0644, 0, 0).ok());
      inside = false;
    }
    return Status::Ok();
  });
  SetAttrRequest req;
  req.mode = 0700;
  req.mtime_ns = int64_t{1500000000} * 1000000000;
  auto set = a.ns->SetAttr(kRootIno, req);
  plan_->SetInjector(nullptr);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_GE(created, 2);
  auto dot = Row("/", ".");
  ASSERT_TRUE(dot.ok());
  auto attr = AttrFromEntity(*dot);
  ASSERT_TRUE(attr.ok());
  EXPECT_EQ(attr->mode & 07777, 0700u);
  EXPECT_EQ(attr->mtime_ns, *req.mtime_ns);
  EXPECT_EQ(PartitionSize("/"), static_cast<size_t>(created) + 1);
  auto shown = a.ns->GetAttr(kRootIno);
  ASSERT_TRUE(shown.ok());
  EXPECT_EQ(shown->mode & 07777, 0700u);
}

}  // namespace
}  // namespace stampfs
