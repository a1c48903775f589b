// The data path on the fakes with fault injection: block layout, Put Blob vs
// block lists, background staging, partial overwrites reusing committed ids,
// 503 and 412 on commit, conflict copies, a crash between blob commit and
// entry merge, eviction with a full cache of dirty blocks, journal replay.
#include "fs/data/file_data.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <random>
#include <set>
#include <thread>

#include "storage/cancel.h"
#include "storage/fakes.h"
#include "storage/table_keys.h"
#include "tests/unit/file_data_fixture.h"

namespace stampfs {
namespace {

TEST(BlockLayoutTest, ScheduleKeeps200GiBUnder50000BlocksWithoutTuning) {
  BlockLayout layout(4ull << 20);
  EXPECT_LT(layout.CountFor(200ull << 30), kMaxBlocks);
  EXPECT_GE(layout.MaxFileSize(), 1ull << 40);
  EXPECT_EQ(layout.CountFor(0), 0u);
  EXPECT_EQ(layout.CountFor(1), 1u);
  EXPECT_EQ(layout.CountFor(4ull << 20), 1u);
  EXPECT_EQ(layout.CountFor((4ull << 20) + 1), 2u);
  for (uint64_t k : {0ull, 9999ull, 10000ull, 10001ull, 29999ull, 30000ull, 49999ull}) {
    EXPECT_EQ(layout.IndexAt(layout.StartOf(k)), k);
    EXPECT_EQ(layout.IndexAt(layout.EndOf(k) - 1), k);
    EXPECT_EQ(layout.StartOf(k + 1), layout.EndOf(k));
  }
  EXPECT_EQ(layout.SizeOf(10000), 8ull << 20);
}

TEST(BlockLayoutTest, WriterBlockIdsHaveOneWidthAndDifferPerWriter) {
  EXPECT_EQ(WriterBlockId(1, 0).size(), BlockIdFor(0).size());
  EXPECT_EQ(WriterBlockId(~0ull, ~0ull).size(), BlockIdFor(0).size());
  EXPECT_NE(WriterBlockId(1, 7), WriterBlockId(2, 7));
  EXPECT_NE(NewWriterTag(), NewWriterTag());
}

TEST_F(FileDataTest, SmallFileIsOnePutBlobWithMetadataAndEntryUpdate) {
  Mount m = NewMount("a");
  const std::string content = Pattern(1000, 1);
  uint64_t ino = Create(m, "small");
  Write(m, ino, content, 0);
  ASSERT_TRUE(m.data->Release(ino).ok());
  EXPECT_EQ(plan_->calls("Put"), 1);
  EXPECT_EQ(plan_->calls("PutBlock"), 0);
  EXPECT_EQ(Blob("small"), content);
  auto props = raw_blobs_->GetProperties(kContainer, "small");
  ASSERT_TRUE(props.ok());
  EXPECT_EQ(props->metadata["stampfs"], "1");
  EXPECT_EQ(props->metadata["mode"], std::to_string(S_IFREG | 0644));
  EXPECT_TRUE(props->metadata.count("mtime") && props->metadata.count("uid"));
  auto st = m.ns->GetFile(ino, true);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->attr.size, content.size());
  EXPECT_EQ(st->blob_etag, props->etag);
  EXPECT_EQ(st->block_size, kBlock);
}

// Another mount's removal is not told apart from its rename (seed 4595: a
// rename of a file queued here): the data is kept as a conflict copy, and
// the blob written under the vanished name is deleted.
TEST_F(FileDataTest, AFileRemovedByAnotherMountWhileBeingWrittenLeavesNoBlobAndKeepsACopy) {
  Mount a = NewMount("a");
  Mount b = NewMount("b");
  uint64_t ino = Create(a, "doomed");
  Write(a, ino, Pattern(1000, 4), 0);
  ASSERT_TRUE(b.ns->Unlink(kRootIno, "doomed").ok());
  EXPECT_TRUE(a.data->Release(ino).Is(Code::kPreconditionFailed));
  EXPECT_TRUE(raw_blobs_->GetProperties(kContainer, "doomed").status().Is(Code::kNotFound))
      << "no blob without an entry";
  EXPECT_TRUE(b.ns->Lookup(kRootIno, "doomed").status().Is(Code::kNotFound));
  std::string copy = EntryStartingWith(a, "doomed.conflict-");
  ASSERT_FALSE(copy.empty());
  EXPECT_EQ(Blob(copy), Pattern(1000, 4));

  // The removal lands between the blob write and the entry merge.
  ino = Create(a, "late");
  Write(a, ino, Pattern(1000, 5), 0);
  bool removed = false;
  plan_->SetInjector([&](const std::string& op, int) {
    if (op == "Put" && !removed) {
      removed = true;
      EXPECT_TRUE(raw_table_
                      ->Delete(kTable, PartitionKeyForDirectory("/"), RowKeyForName("late"),
                               Condition::IfMatch("*"))
                      .ok());
    }
    return Status::Ok();
  });
  EXPECT_TRUE(a.data->Release(ino).Is(Code::kPreconditionFailed));
  plan_->SetInjector(nullptr);
  EXPECT_EQ(plan_->calls("Put"), 4) << "one blob write per file and one per copy: the commit "
                                       "trusts its cached entry, the removal shows at the merge";
  EXPECT_TRUE(raw_blobs_->GetProperties(kContainer, "late").status().Is(Code::kNotFound))
      << "the blob written for a removed entry is deleted";
  copy = EntryStartingWith(a, "late.conflict-");
  ASSERT_FALSE(copy.empty());
  EXPECT_EQ(Blob(copy), Pattern(1000, 5));
}

// A commit whose entry merge lands after another writer's newer commit (based
// on it) must not name its own, older version: seen as an entry naming one
// writer's ETag over a blob holding the other's.
TEST_F(FileDataTest, ALateEntryMergeDoesNotNameAnOlderVersion) {
  Mount a = NewMount("a");
  Mount b = NewMount("b");
  uint64_t ino = Create(a, "raced");
  Write(a, ino, Pattern(1000, 6), 0);
  const std::string newer = Pattern(1500, 7);
  bool fired = false;
  // A's blob is written; before A's entry merge, B opens the file (adopting
  // A's version), writes and commits its own on top.
  plan_->SetInjector([&](const std::string& op, int) {
    if (op != "ExecuteBatch" || fired || plan_->calls("Put") == 0) return Status::Ok();
    fired = true;
    uint64_t b_ino = OpenExisting(b, "raced");
    Write(b, b_ino, newer, 0);
    EXPECT_TRUE(b.data->Release(b_ino).ok());
    return Status::Ok();
  });
  ASSERT_TRUE(a.data->Release(ino).ok());
  plan_->SetInjector(nullptr);
  ASSERT_TRUE(fired);
  auto props = raw_blobs_->GetProperties(kContainer, "raced");
  ASSERT_TRUE(props.ok());
  auto st = b.ns->GetFile(ino, true);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->blob_etag, props->etag) << "the entry names the blob's current version";
  EXPECT_EQ(st->attr.size, newer.size());
  EXPECT_EQ(Blob("raced"), newer);
}

TEST_F(FileDataTest, CommittingANewSmallFileIsOnePutAndOneEntryMerge) {
  Mount m = NewMount("a");
  uint64_t ino = Create(m, "counted");
  const int before = plan_->calls();
  Write(m, ino, Pattern(1000, 3), 0);
  ASSERT_TRUE(m.data->Release(ino).ok());
  EXPECT_EQ(plan_->calls() - before, 2) << "the commit trusts the entry cached at create";
  EXPECT_EQ(plan_->calls("Put"), 1);
}

TEST_F(FileDataTest, EmptyNewFileGetsABlob) {
  Mount m = NewMount("a");
  uint64_t ino = Create(m, "empty");
  ASSERT_TRUE(m.data->Release(ino).ok());
  EXPECT_EQ(Blob("empty"), "");
}

TEST_F(FileDataTest, LargeFileIsStagedInBlocksWhileTheWriterGoesOn) {
  Mount m = NewMount("a");
  const std::string content = Pattern(10 * kBlock + 123, 2);
  uint64_t ino = Create(m, "big");
  Write(m, ino, content, 0);
  EXPECT_TRUE(Eventually([&] { return plan_->calls("PutBlock") >= 9; }))
      << "full blocks are staged before any flush";
  EXPECT_EQ(plan_->calls("PutBlockList"), 0);
  ASSERT_TRUE(m.data->Flush(ino).ok());
  EXPECT_EQ(plan_->calls("PutBlockList"), 1);
  EXPECT_EQ(plan_->calls("PutBlock"), 11);
  ASSERT_TRUE(m.data->Release(ino).ok());
  EXPECT_EQ(Blob("big"), content);
  auto list = raw_blobs_->GetBlockList(kContainer, "big", BlockListType::kCommitted);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->committed.size(), 11u);
  for (const BlockInfo& b : list->committed) EXPECT_EQ(b.id.size(), BlockIdFor(0).size());
}

TEST_F(FileDataTest, PartialOverwriteUploadsOnlyChangedBlocksAndReusesCommittedIds) {
  Mount m = NewMount("a");
  std::string content = Pattern(10 * kBlock, 3);
  Commit(m, "big", content);
  auto before = raw_blobs_->GetBlockList(kContainer, "big", BlockListType::kCommitted);
  ASSERT_TRUE(before.ok());

  Mount other = NewMount("b");  // a cold cache: the changed block is fetched first
  uint64_t ino = OpenExisting(other, "big");
  const int put_blocks = plan_->calls("PutBlock");
  const std::string patch = "patched bytes in the middle of block three";
  Write(other, ino, patch, 3 * kBlock + 1000);
  ASSERT_TRUE(other.data->Release(ino).ok());
  EXPECT_EQ(plan_->calls("PutBlock") - put_blocks, 1) << "only the changed block is uploaded";
  content.replace(3 * kBlock + 1000, patch.size(), patch);
  EXPECT_EQ(Blob("big"), content);
  auto after = raw_blobs_->GetBlockList(kContainer, "big", BlockListType::kCommitted);
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->committed.size(), before->committed.size());
  for (size_t i = 0; i < after->committed.size(); ++i) {
    if (i == 3) {
      EXPECT_NE(after->committed[i].id, before->committed[i].id);
    } else {
      EXPECT_EQ(after->committed[i].id, before->committed[i].id) << "block " << i;
    }
  }
}

TEST_F(FileDataTest, A503DuringPutBlockListIsSurfacedAndTheDataIsKeptForTheNextCommit) {
  Mount m = NewMount("a");
  const std::string content = Pattern(5 * kBlock, 4);
  uint64_t ino = Create(m, "busy");
  Write(m, ino, content, 0);
  plan_->FailNth(1, ServerBusy(), "PutBlockList");
  Status first = m.data->Flush(ino);
  EXPECT_TRUE(first.Is(Code::kThrottled)) << first.ToString();
  Attr attr;
  EXPECT_TRUE(m.data->OverrideAttr(ino, &attr)) << "still dirty";
  EXPECT_EQ(m.blocks->Journaled().size(), 1u) << "and journaled";
  ASSERT_TRUE(m.data->Release(ino).ok()) << "the next commit succeeds";
  EXPECT_EQ(Blob("busy"), content);
  EXPECT_TRUE(m.blocks->Journaled().empty());
}

TEST_F(FileDataTest, AFailedCloseKeepsTheChangesVisibleAndTheNextCloseCommitsThem) {
  Mount m = NewMount("a");
  const std::string content = Pattern(3 * kBlock, 17);
  uint64_t ino = Create(m, "retry");
  Write(m, ino, content, 0);
  plan_->FailAlways(ServerBusy(), "PutBlockList");
  EXPECT_TRUE(m.data->Release(ino).Is(Code::kThrottled));
  plan_->Clear();
  Attr attr;
  EXPECT_TRUE(m.data->OverrideAttr(ino, &attr));
  EXPECT_EQ(attr.size, content.size()) << "stat shows the uncommitted size";
  auto reopened = m.data->Open(ino, OpenFlags{false, false, false});
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(ReadAll(m, ino, content.size()), content) << "an open here sees the changes";
  ASSERT_TRUE(m.data->Release(ino).ok());
  EXPECT_EQ(Blob("retry"), content);
  EXPECT_TRUE(m.blocks->Journaled().empty());
}

TEST_F(FileDataTest, A412OnCommitSavesAConflictCopyAndLeavesTheWinnerUntouched) {
  Mount a = NewMount("a");
  Mount b = NewMount("b");
  Commit(a, "doc.txt", "version zero");
  uint64_t ia = OpenExisting(a, "doc.txt");
  uint64_t ib = OpenExisting(b, "doc.txt");
  Write(a, ia, "AAAA from mount a", 0);
  Write(b, ib, "BBBB from mount b", 0);
  ASSERT_TRUE(b.data->Release(ib).ok());
  Status s = a.data->Flush(ia);
  EXPECT_TRUE(s.Is(Code::kPreconditionFailed)) << s.ToString();
  EXPECT_EQ(Blob("doc.txt"), "BBBB from mount b");
  const std::string copy = EntryStartingWith(a, "doc.txt.conflict-testhost-");
  ASSERT_FALSE(copy.empty()) << "a conflict copy beside the file";
  EXPECT_EQ(copy.back(), 'Z');
  EXPECT_EQ(Blob(copy), "AAAA from mount a");
  EXPECT_TRUE(a.blocks->Journaled().empty()) << "the copy holds the data now";
  ASSERT_TRUE(a.data->Release(ia).ok());
  EXPECT_EQ(Blob("doc.txt"), "BBBB from mount b");
}

TEST_F(FileDataTest, ConflictFailKeepsTheDataJournaledAndWritesNoCopy) {
  Mount a = NewMount("a", 64ull << 20, ConflictPolicy::kFail);
  Mount b = NewMount("b");
  Commit(a, "f", "zero");
  uint64_t ia = OpenExisting(a, "f");
  uint64_t ib = OpenExisting(b, "f");
  Write(a, ia, "mine", 0);
  Write(b, ib, "theirs", 0);
  ASSERT_TRUE(b.data->Release(ib).ok());
  EXPECT_TRUE(a.data->Release(ia).Is(Code::kPreconditionFailed));
  EXPECT_EQ(Blob("f"), "theirs");
  EXPECT_EQ(a.blocks->Journaled().size(), 1u);
  auto listing = a.ns->ReadDir(kRootIno);
  ASSERT_TRUE(listing.ok());
  EXPECT_EQ(listing->size(), 1u);
}

TEST_F(FileDataTest, ConflictOverwriteCommitsUnconditionally) {
  Mount a = NewMount("a", 64ull << 20, ConflictPolicy::kOverwrite);
  Mount b = NewMount("b");
  Commit(a, "f", "zero");
  uint64_t ia = OpenExisting(a, "f");
  uint64_t ib = OpenExisting(b, "f");
  Write(a, ia, "mine", 0);
  Write(b, ib, "theirs", 0);
  ASSERT_TRUE(b.data->Release(ib).ok());
  ASSERT_TRUE(a.data->Release(ia).ok());
  EXPECT_EQ(Blob("f"), "mine");
}

TEST_F(FileDataTest, ACrashBetweenBlobCommitAndEntryMergeSelfHealsOnTheNextOpen) {
  Mount a = NewMount("a");
  Commit(a, "f", Pattern(3 * kBlock, 5));
  const std::string v2 = Pattern(3 * kBlock, 6);
  uint64_t ino = OpenExisting(a, "f");
  Write(a, ino, v2, 0);
  plan_->FailAlways(ServerBusy(), "ExecuteBatch");  // every entry merge fails
  (void)a.data->Release(ino);
  plan_->Clear();
  EXPECT_EQ(Blob("f"), v2) << "the blob was committed";
  auto stale = a.ns->GetFile(ino, true);
  ASSERT_TRUE(stale.ok());
  EXPECT_NE(stale->blob_etag, raw_blobs_->GetProperties(kContainer, "f")->etag);

  Mount b = NewMount("b");  // another machine reads it
  uint64_t ib = OpenExisting(b, "f", false);
  EXPECT_EQ(ReadAll(b, ib, v2.size()), v2);
  ASSERT_TRUE(b.data->Release(ib).ok());
  auto healed = b.ns->GetFile(ib, true);
  ASSERT_TRUE(healed.ok());
  EXPECT_EQ(healed->blob_etag, raw_blobs_->GetProperties(kContainer, "f")->etag);
  EXPECT_EQ(healed->attr.size, v2.size());

  // A writer on the first machine starts from the healed version: no conflict.
  uint64_t again = OpenExisting(a, "f");
  Write(a, again, "x", 0);
  ASSERT_TRUE(a.data->Release(again).ok());
  EXPECT_EQ(Blob("f"), "x" + v2.substr(1));
}

TEST_F(FileDataTest, AVersionChangedUnderAnOpenReaderIsAnErrorNeverAMix) {
  Mount a = NewMount("a");
  Mount b = NewMount("b");
  Commit(b, "f", Pattern(16 * kBlock, 7));
  uint64_t ia = OpenExisting(a, "f", false);  // a cold cache: blocks are fetched as read
  char buf[100];
  ASSERT_TRUE(a.data->Read(ia, buf, sizeof(buf), 1).ok());  // not sequential: no read-ahead
  uint64_t ib = OpenExisting(b, "f");
  Write(b, ib, Pattern(16 * kBlock, 8), 0);
  ASSERT_TRUE(b.data->Release(ib).ok());
  // Block 15 was not read ahead: fetched now, from the new version.
  auto r = a.data->Read(ia, buf, sizeof(buf), 15 * kBlock);
  EXPECT_TRUE(r.status().Is(Code::kPreconditionFailed)) << r.status().ToString();
  // Blocks of the pinned version already cached still read consistently.
  EXPECT_TRUE(a.data->Read(ia, buf, sizeof(buf), 0).ok());
  ASSERT_TRUE(a.data->Release(ia).ok());
}

TEST_F(FileDataTest, AReaderKeepsReadingAFileRenamedWhileOpen) {
  Mount a = NewMount("a");
  Mount b = NewMount("b");
  const std::string content = Pattern(8 * kBlock, 18);
  Commit(a, "before", content);
  auto attr = b.ns->Lookup(kRootIno, "before");
  ASSERT_TRUE(attr.ok());
  ASSERT_TRUE(b.data->Open(attr->ino, OpenFlags{}).ok());
  char buf[100];
  ASSERT_TRUE(b.data->Read(attr->ino, buf, sizeof(buf), 0).ok());
  ASSERT_TRUE(b.ns->Rename(kRootIno, "before", kRootIno, "after", 0).ok());
  std::string got(100, '\0');
  auto r = b.data->Read(attr->ino, got.data(), got.size(), 7 * kBlock);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(got, content.substr(7 * kBlock, 100));
  ASSERT_TRUE(b.data->Release(attr->ino).ok());
}

// An open file follows its rename only to the rename's copy of its version
// (the entry's "movedfrom"): data another mount committed at the new name
// since is never overwritten by a commit based on the old version.
TEST_F(FileDataTest, AWriterFollowsItsRenameButNotAnotherMountsLaterVersion) {
  Mount a = NewMount("a");
  Mount b = NewMount("b");
  Commit(a, "before", "original content");
  uint64_t ia = OpenExisting(a, "before");
  EXPECT_EQ(ReadAll(a, ia, 16), "original content");  // cached: the write reads nothing
  ASSERT_TRUE(a.ns->Rename(kRootIno, "before", kRootIno, "after", 0).ok());
  uint64_t ib = OpenExisting(b, "after");
  Write(b, ib, "BBBB from mount b", 0);
  ASSERT_TRUE(b.data->Release(ib).ok());
  now_ms_ += 60000;  // a's cached entry (its own rename's) has expired
  Write(a, ia, "AAAA", 0);
  Status s = a.data->Release(ia);
  EXPECT_TRUE(s.Is(Code::kPreconditionFailed)) << s.ToString();
  EXPECT_EQ(Blob("after"), "BBBB from mount b");
  const std::string copy = EntryStartingWith(a, "after.conflict-testhost-");
  ASSERT_FALSE(copy.empty()) << "a conflict copy beside the file";
  EXPECT_EQ(Blob(copy), "AAAAinal content");

  // Without another writer, the commit lands on the renamed file.
  uint64_t again = OpenExisting(a, "after");
  EXPECT_EQ(ReadAll(a, again, 17), "BBBB from mount b");
  ASSERT_TRUE(a.ns->Rename(kRootIno, "after", kRootIno, "final", 0).ok());
  Write(a, again, "CC", 0);
  ASSERT_TRUE(a.data->Release(again).ok());
  EXPECT_EQ(Blob("final"), "CCBB from mount b");
}

TEST_F(FileDataTest, TruncateGrowShrinkSparseHolesAndAppendRoundTrip) {
  Mount m = NewMount("a");
  std::string model = Pattern(3 * kBlock + 10, 9);
  Commit(m, "t", model);
  uint64_t ino = OpenExisting(m, "t");
  ASSERT_TRUE(m.data->Truncate(ino, kBlock + 5).ok());
  model.resize(kBlock + 5);
  ASSERT_TRUE(m.data->Truncate(ino, 6 * kBlock).ok());
  model.resize(6 * kBlock, '\0');
  Write(m, ino, "tail", model.size());
  model += "tail";
  Write(m, ino, "hole", 9 * kBlock);  // a sparse region in between
  model.resize(9 * kBlock, '\0');
  model += "hole";
  EXPECT_EQ(ReadAll(m, ino, model.size()), model);
  ASSERT_TRUE(m.data->Release(ino).ok());
  EXPECT_EQ(Blob("t"), model);
  Mount cold = NewMount("cold");
  uint64_t ic = OpenExisting(cold, "t", false);
  EXPECT_EQ(ReadAll(cold, ic, model.size()), model);
  ASSERT_TRUE(cold.data->Release(ic).ok());
}

TEST_F(FileDataTest, SequentialReadsPrefetchAheadAndReopenKeepsTheKernelCache) {
  Mount a = NewMount("a");
  const std::string content = Pattern(12 * kBlock, 10);
  Commit(a, "seq", content);
  Mount b = NewMount("b");
  auto attr = b.ns->Lookup(kRootIno, "seq");
  ASSERT_TRUE(attr.ok());
  auto first = b.data->Open(attr->ino, OpenFlags{});
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->keep_cache);
  char buf[4096];
  ASSERT_TRUE(b.data->Read(attr->ino, buf, sizeof(buf), 0).ok());
  ASSERT_TRUE(b.data->Read(attr->ino, buf, sizeof(buf), sizeof(buf)).ok());
  // The first read starts one stream of the whole file.
  EXPECT_TRUE(Eventually([&] { return b.blocks->Stats().blocks == 12; }))
      << "blocks ahead are fetched";
  EXPECT_EQ(plan_->calls("ReadStream"), 1);
  EXPECT_EQ(ReadAll(b, attr->ino, content.size()), content);
  ASSERT_TRUE(b.data->Release(attr->ino).ok());
  auto second = b.data->Open(attr->ino, OpenFlags{});
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->keep_cache) << "same version as the last open";
  const int reads = plan_->calls("Read");
  EXPECT_EQ(ReadAll(b, attr->ino, content.size()), content);
  EXPECT_EQ(plan_->calls("Read"), reads) << "a warm cache reads nothing";
  ASSERT_TRUE(b.data->Release(attr->ino).ok());
}

// ---- read-ahead streams (fs/data/file_stream.cc)

}  // namespace

// `content` committed as "f" by another mount; returns a mount with a cold
// cache of `capacity` bytes that has "f" open for reading as *ino.
Mount FileDataTest::ColdReader(const std::string& content, uint64_t* ino, uint64_t capacity) {
  Mount writer = NewMount("writer");
  Commit(writer, "f", content);
  Mount m = NewMount("reader", capacity);
  *ino = OpenExisting(m, "f", false);
  return m;
}

namespace {

// Lets a stream run up to `at` (stream offset), then holds it there.
class StreamGate {
 public:
  explicit StreamGate(uint64_t at) : at_(at) {}
  Status Pass(uint64_t offset) {
    while (offset >= at_ && !open_.load()) {
      if (CurrentlyCancelled()) return Cancelled("held stream");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return Status::Ok();
  }
  void Open() { open_ = true; }

 private:
  const uint64_t at_;
  std::atomic<bool> open_{false};
};

TEST_F(FileDataTest, AColdSequentialReadIsOneStreamedGet) {
  const std::string content = Pattern(12 * kBlock + 1000, 30);
  uint64_t ino = 0;
  Mount b = ColdReader(content, &ino);
  const int reads = plan_->calls("Read"), streams = plan_->calls("ReadStream");
  EXPECT_EQ(ReadAll(b, ino, content.size()), content);
  EXPECT_EQ(plan_->calls("Read"), reads);
  EXPECT_EQ(plan_->calls("ReadStream"), streams + 1);
  EXPECT_EQ(b.blocks->Stats().blocks, 13u);
  ASSERT_TRUE(b.data->Release(ino).ok());
}

TEST_F(FileDataTest, AReaderGetsEachBlockAsItArrivesAndAJumpAheadDoesNotWait) {
  const std::string content = Pattern(12 * kBlock, 31);
  uint64_t ino = 0;
  Mount b = ColdReader(content, &ino);
  StreamGate gate(5 * kBlock);
  plan_->SetStreamHook([&](uint64_t at) { return gate.Pass(at); });
  std::atomic<bool> done{false};
  std::string got;
  std::thread reader([&] {
    got = ReadAll(b, ino, content.size());
    done = true;
  });
  // Blocks 0-4 arrived: the reader has them and waits for block 5.
  EXPECT_TRUE(Eventually([&] { return b.blocks->Stats().blocks == 5; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(done.load());
  // A read far ahead of the stream fetches its block itself, without waiting.
  const int reads = plan_->calls("Read");
  std::string far(100, '\0');
  ASSERT_TRUE(b.data->Read(ino, far.data(), far.size(), 9 * kBlock).ok());
  EXPECT_EQ(far, content.substr(9 * kBlock, 100));
  EXPECT_EQ(plan_->calls("Read"), reads + 1);
  gate.Open();
  reader.join();
  EXPECT_EQ(got, content);
  EXPECT_EQ(plan_->calls("ReadStream"), 1) << "no second GET for the blocks streamed";
  EXPECT_EQ(plan_->calls("Read"), reads + 1);
  ASSERT_TRUE(b.data->Release(ino).ok());
}

// sqlite3 opens a database read-only, closes it and opens it again at once:
// the kernel's release of the first open may run while the second opens.
TEST_F(FileDataTest, AnOpenWhileTheLastReleaseWaitsForTheStreamKeepsTheFileOpen) {
  const std::string content = Pattern(12 * kBlock, 33);
  uint64_t ino = 0;
  Mount b = ColdReader(content, &ino);
  std::atomic<bool> hold{true}, held{false};
  plan_->SetStreamHook([&](uint64_t at) {
    while (at >= 2 * kBlock && hold.load()) {  // deaf to the cancel: a slow service
      held = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return Status::Ok();
  });
  std::string head(20000, '\0');
  ASSERT_TRUE(b.data->Read(ino, head.data(), head.size(), 0).ok());
  ASSERT_TRUE(Eventually([&] { return held.load(); })) << "the read-ahead stream runs";
  std::thread closer([&] { EXPECT_TRUE(b.data->Release(ino).ok()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // waits for the stream
  ASSERT_TRUE(b.data->Open(ino, OpenFlags{false, false, false}).ok());
  hold = false;
  closer.join();
  std::string mid(100, '\0');
  auto r = b.data->Read(ino, mid.data(), mid.size(), 5 * kBlock);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(mid, content.substr(5 * kBlock, 100));
  ASSERT_TRUE(b.data->Release(ino).ok());
}

TEST_F(FileDataTest, AVersionChangedMidStreamIsAnErrorNeverAMix) {
  const std::string v1 = Pattern(16 * kBlock, 32);
  uint64_t ib = 0;
  Mount b = ColdReader(v1, &ib);
  StreamGate gate(6 * kBlock);
  std::atomic<bool> changed{false};
  // The service ends a stream whose version changed: 412 mid-body.
  plan_->SetStreamHook([&](uint64_t at) {
    Status s = gate.Pass(at);
    return changed.load() && at >= 6 * kBlock ? PreconditionFailed() : s;
  });
  std::string head(6 * kBlock, '\0');
  for (uint64_t off = 0; off < head.size(); off += 8192) {
    ASSERT_TRUE(b.data->Read(ib, head.data() + off, 8192, off).ok());
  }
  EXPECT_EQ(head, v1.substr(0, head.size()));
  Mount a = NewMount("a");
  uint64_t ia = OpenExisting(a, "f");
  Write(a, ia, Pattern(16 * kBlock, 33), 0);
  ASSERT_TRUE(a.data->Release(ia).ok());
  changed = true;
  gate.Open();
  std::string next(100, '\0');
  auto r = b.data->Read(ib, next.data(), next.size(), 6 * kBlock);
  EXPECT_TRUE(r.status().Is(Code::kPreconditionFailed)) << r.status().ToString();
  r = b.data->Read(ib, next.data(), next.size(), 12 * kBlock);
  EXPECT_TRUE(r.status().Is(Code::kPreconditionFailed)) << r.status().ToString();
  // What was served is still the first version.
  ASSERT_TRUE(b.data->Read(ib, next.data(), next.size(), 5 * kBlock).ok());
  EXPECT_EQ(next, v1.substr(5 * kBlock, 100));
  ASSERT_TRUE(b.data->Release(ib).ok());
}

TEST_F(FileDataTest, AStreamFailingMidBlockLeavesNoPartialBlockAndTheNextReadResumes) {
  const std::string content = Pattern(12 * kBlock, 34);
  uint64_t ino = 0;
  Mount b = ColdReader(content, &ino);
  plan_->SetStreamHook([](uint64_t at) {
    return at >= 4 * kBlock + kBlock / 2 ? Status(Code::kTransport, "injected: reset") : Status();
  });
  char buf[100];
  ASSERT_TRUE(b.data->Read(ino, buf, sizeof(buf), 0).ok());
  EXPECT_TRUE(Eventually([&] { return plan_->calls("ReadStream") == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(b.blocks->Stats().blocks, 4u) << "block 4 arrived in part: not cached";
  plan_->Clear();
  EXPECT_EQ(ReadAll(b, ino, content.size()), content);
  EXPECT_EQ(plan_->calls("ReadStream"), 2) << "resumed at block 4";
  ASSERT_TRUE(b.data->Release(ino).ok());
}

TEST_F(FileDataTest, TheLastCloseEndsAStreamThatStalled) {
  const std::string content = Pattern(12 * kBlock, 35);
  uint64_t ino = 0;
  Mount b = ColdReader(content, &ino);
  StreamGate gate(3 * kBlock);  // never opened: the service stalls
  plan_->SetStreamHook([&](uint64_t at) { return gate.Pass(at); });
  char buf[100];
  ASSERT_TRUE(b.data->Read(ino, buf, sizeof(buf), 0).ok());
  EXPECT_TRUE(Eventually([&] { return b.blocks->Stats().blocks == 3; }));
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(b.data->Release(ino).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(b.blocks->Stats().blocks, 3u);
  plan_->Clear();
  ino = OpenExisting(b, "f", false);
  EXPECT_EQ(ReadAll(b, ino, content.size()), content);
  ASSERT_TRUE(b.data->Release(ino).ok());
}

TEST_F(FileDataTest, ACacheSmallerThanTheFileStreamsWithinItAndReadsTheWholeFile) {
  const std::string content = Pattern(40 * kBlock + 5, 36);
  uint64_t ino = 0;
  Mount b = ColdReader(content, &ino, 8 * kBlock);
  EXPECT_EQ(ReadAll(b, ino, content.size()), content);
  EXPECT_LE(b.blocks->Stats().used, 8 * kBlock);
  EXPECT_GE(plan_->calls("ReadStream"), 1);
  EXPECT_LE(plan_->calls("ReadStream") + plan_->calls("Read"), 41) << "no block read twice";
  ASSERT_TRUE(b.data->Release(ino).ok());
}

TEST_F(FileDataTest, DirtyBlocksAreNeverEvictedAndAWriterWaitsForRoomThenProceeds) {
  Mount m = NewMount("a", 4 * kBlock);
  uint64_t a = Create(m, "a");
  const std::string a_data = Pattern(4 * kBlock, 11);
  Write(m, a, a_data, 0);  // the cache is now full of a's uncommitted data
  EXPECT_GE(m.blocks->Stats().uncommitted, 4 * kBlock);
  uint64_t b = Create(m, "b");
  std::atomic<bool> flushed{false}, written{false};
  std::thread writer([&] {
    const std::string b_data(kBlock, 'b');
    auto w = m.data->Write(b, b_data.data(), b_data.size(), 0);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    EXPECT_TRUE(flushed.load()) << "the writer waited for room";
    written = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(written.load());
  EXPECT_GE(m.blocks->Stats().uncommitted, 4 * kBlock) << "dirty data was not evicted";
  flushed = true;
  ASSERT_TRUE(m.data->Flush(a).ok());
  writer.join();
  EXPECT_TRUE(written.load());
  ASSERT_TRUE(m.data->Release(a).ok());
  ASSERT_TRUE(m.data->Release(b).ok());
  EXPECT_EQ(Blob("a"), a_data);
  EXPECT_EQ(Blob("b"), std::string(kBlock, 'b'));
}

TEST_F(FileDataTest, AWriterLargerThanTheCacheCommitsCheckpointsInsteadOfFailing) {
  Mount m = NewMount("a", 4 * kBlock);
  const std::string content = Pattern(20 * kBlock, 12);
  uint64_t ino = Create(m, "huge");
  Write(m, ino, content, 0, kBlock);
  EXPECT_LE(m.blocks->Stats().used, 5 * kBlock);
  ASSERT_TRUE(m.data->Release(ino).ok());
  EXPECT_EQ(Blob("huge"), content);
  EXPECT_GE(plan_->calls("PutBlockList"), 2) << "checkpoints";
}

TEST_F(FileDataTest, ARenameWhileOpenCommitsToTheNewBlobWithStagedBlocksRestaged) {
  Mount m = NewMount("a");
  std::string content = Pattern(6 * kBlock, 15);
  Commit(m, "old", content);
  uint64_t ino = OpenExisting(m, "old");
  const std::string patch = Pattern(2 * kBlock, 16);
  const int staged = plan_->calls("PutBlock");
  Write(m, ino, patch, kBlock);  // completes blocks 1 and 2: staged on "old" in the background
  EXPECT_TRUE(Eventually([&] { return plan_->calls("PutBlock") == staged + 2; }));
  ASSERT_TRUE(m.ns->Rename(kRootIno, "old", kRootIno, "new", 0).ok());
  ASSERT_TRUE(m.data->Release(ino).ok());
  EXPECT_GE(plan_->calls("PutBlock"), staged + 4)
      << "blocks staged on the old name are staged again";
  content.replace(kBlock, patch.size(), patch);
  EXPECT_EQ(Blob("new"), content);
  EXPECT_FALSE(raw_blobs_->GetProperties(kContainer, "old").ok()) << "the old name's blob is gone";
  auto st = m.ns->GetFile(ino, true);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->blob_etag, raw_blobs_->GetProperties(kContainer, "new")->etag);
  EXPECT_EQ(st->attr.size, content.size());
}

TEST_F(FileDataTest, AConflictCopyLandsInTheFilesOwnDirectory) {
  Mount a = NewMount("a");
  Mount b = NewMount("b");
  auto dir = a.ns->Mkdir(kRootIno, "sub", 0755, 0, 0);
  ASSERT_TRUE(dir.ok());
  auto created = a.ns->Create(dir->ino, "f", 0600, 0, 0);
  ASSERT_TRUE(created.ok());
  ASSERT_TRUE(a.data->Open(created->ino, OpenFlags{true, true, true}).ok());
  Write(a, created->ino, "from a", 0);
  auto bdir = b.ns->Lookup(kRootIno, "sub");
  ASSERT_TRUE(bdir.ok());
  auto bf = b.ns->Lookup(bdir->ino, "f");
  ASSERT_TRUE(bf.ok());
  ASSERT_TRUE(b.data->Open(bf->ino, OpenFlags{false, false, true}).ok());
  Write(b, bf->ino, "from b", 0);
  ASSERT_TRUE(b.data->Release(bf->ino).ok()) << "both were new: the first commit wins";
  EXPECT_TRUE(a.data->Release(created->ino).Is(Code::kPreconditionFailed));
  EXPECT_EQ(Blob("sub/f"), "from b");
  auto listing = a.ns->ReadDir(dir->ino);
  ASSERT_TRUE(listing.ok());
  ASSERT_EQ(listing->size(), 2u);
  for (const DirEntry& e : *listing) {
    if (e.name == "f") continue;
    EXPECT_EQ(e.name.rfind("f.conflict-testhost-", 0), 0u) << e.name;
    EXPECT_EQ(Blob("sub/" + e.name), "from a");
    EXPECT_EQ(e.attr.mode & 07777, 0600u) << "the copy keeps the file's mode";
  }
}

// mkdir z0 z1; ln -s t z0/a; echo hello > z1/b; mv -T z0/a z1/b: the
// replaced file's blob went nowhere (left behind, and the next file named
// z1/b met it as a false conflict).
TEST_F(FileDataTest, ASymlinkRenamedOverAFileInAnotherDirectoryLeavesNoBlob) {
  Mount a = NewMount("a");
  auto z0 = a.ns->Mkdir(kRootIno, "z0", 0755, 0, 0);
  auto z1 = a.ns->Mkdir(kRootIno, "z1", 0755, 0, 0);
  ASSERT_TRUE(z0.ok() && z1.ok());
  ASSERT_TRUE(a.ns->Symlink(z0->ino, "a", "t", 0, 0).ok());
  auto b = a.ns->Create(z1->ino, "b", 0644, 0, 0);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(a.data->Open(b->ino, OpenFlags{true, true, true}).ok());
  Write(a, b->ino, "hello\n", 0);
  ASSERT_TRUE(a.data->Release(b->ino).ok());
  ASSERT_EQ(Blob("z1/b"), "hello\n");
  auto orphans = a.ns->Rename(z0->ino, "a", z1->ino, "b", 0);
  ASSERT_TRUE(orphans.ok()) << orphans.status().ToString();
  for (const std::string& blob : *orphans) a.data->DeleteBlobWhenUnused(0, blob);
  EXPECT_TRUE(raw_blobs_->GetProperties(kContainer, "z1/b").status().Is(Code::kNotFound));
  // The name takes a new file without a conflict.
  ASSERT_TRUE(a.ns->Unlink(z1->ino, "b").ok());
  auto again = a.ns->Create(z1->ino, "b", 0644, 0, 0);
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(a.data->Open(again->ino, OpenFlags{true, true, true}).ok());
  Write(a, again->ino, "new\n", 0);
  EXPECT_TRUE(a.data->Release(again->ino).ok());
  EXPECT_EQ(Blob("z1/b"), "new\n");
}

// Mount a writes a1, b reads it, a appends a2-long, b appends b1 and b2 with
// the kernel's offsets from the size b saw first: the appends go at the end
// of the version b's open validated, and a's bytes stay.
TEST_F(FileDataTest, AnAppendLandsAtTheEndOfTheVersionItExtendsNotAtAStaleOffset) {
  Mount a = NewMount("a");
  Mount b = NewMount("b");
  Commit(a, "log", "a1\n");
  uint64_t ib = OpenExisting(b, "log", false);
  EXPECT_EQ(ReadAll(b, ib, 3), "a1\n");
  ASSERT_TRUE(b.data->Release(ib).ok());
  uint64_t ia = OpenExisting(a, "log");
  auto wa = a.data->Write(ia, "a2-long\n", 8, 3, true);
  ASSERT_TRUE(wa.ok());
  ASSERT_TRUE(a.data->Release(ia).ok());
  uint64_t kernel_size = 3;  // b's i_size: a's append is not known there yet
  for (const std::string rec : {"b1\n", "b2\n"}) {
    ib = OpenExisting(b, "log");
    auto wb = b.data->Write(ib, rec.data(), rec.size(), kernel_size, true);
    ASSERT_TRUE(wb.ok()) << wb.status().ToString();
    kernel_size += rec.size();
    ASSERT_TRUE(b.data->Release(ib).ok());
  }
  EXPECT_EQ(Blob("log"), "a1\na2-long\nb1\nb2\n");
}

// Another mount renames a file this mount has open with changes: the next
// commit finds no entry at the path it knows. The data was dropped (flush
// and close returned 0, as for a file unlinked here); it is kept as a
// conflict copy (EIO). Found by tests/sim (switch rename-open, seed 1010).
TEST_F(FileDataTest, ChangesToAFileAnotherMountRenamedAreKeptAsACopyNotDropped) {
  Mount a = NewMount("a");
  Mount b = NewMount("b");
  Commit(a, "doc", "v0");
  uint64_t ia = OpenExisting(a, "doc");
  Write(a, ia, "changes made on a", 0);
  ASSERT_TRUE(b.ns->Lookup(kRootIno, "doc").ok());
  ASSERT_TRUE(b.ns->Rename(kRootIno, "doc", kRootIno, "moved", 0).ok());
  now_ms_ += 10'000;  // a's cached entry is past its TTL
  Status s = a.data->Release(ia);
  EXPECT_TRUE(s.Is(Code::kPreconditionFailed)) << s.ToString();
  auto listing = b.ns->ReadDir(kRootIno);
  ASSERT_TRUE(listing.ok());
  std::string copy;
  for (const DirEntry& e : *listing) {
    if (e.name.rfind("doc.conflict-", 0) == 0) copy = e.name;
  }
  ASSERT_FALSE(copy.empty()) << "the changes are in a conflict copy";
  EXPECT_EQ(Blob(copy), "changes made on a");
  EXPECT_EQ(Blob("moved"), "v0");
}

// Copies of one file within one second (a fixed clock): each gets a name of
// its own, and the conflict stays EIO (it once ran out of names: EEXIST).
TEST_F(FileDataTest, ManyConflictCopiesWithinOneSecondGetNamesOfTheirOwn) {
  now_ = [] { return int64_t{1'700'000'000} * 1'000'000'000; };
  Mount a = NewMount("a");
  Mount b = NewMount("b");
  Commit(a, "doc", "v0");
  std::set<std::string> contents;
  for (int i = 0; i < 14; ++i) {
    uint64_t ia = OpenExisting(a, "doc");
    uint64_t ib = OpenExisting(b, "doc");
    Write(a, ia, "from a #" + std::to_string(i), 0);
    Write(b, ib, "from b #" + std::to_string(i), 0);
    ASSERT_TRUE(b.data->Release(ib).ok());
    Status s = a.data->Release(ia);
    ASSERT_TRUE(s.Is(Code::kPreconditionFailed)) << i << ": " << s.ToString();
    contents.insert("from a #" + std::to_string(i));
  }
  auto listing = a.ns->ReadDir(kRootIno);
  ASSERT_TRUE(listing.ok());
  std::set<std::string> copies;
  for (const DirEntry& e : *listing) {
    if (e.name.rfind("doc.conflict-testhost-20231114T221320Z", 0) == 0) copies.insert(Blob(e.name));
  }
  EXPECT_EQ(copies, contents) << "every writer's data in a copy of its own";
}

// Creates without O_EXCL: the entry waits for the first commit.

TEST_F(DeferredCreateTest, ANewFileIsOnePutAndOneTransactionAtItsCommit) {
  Mount a = NewMount("a");
  Mount b = NewMount("b");
  Commit(a, "first", "takes the inode range");
  const int before = plan_->calls();
  uint64_t ino = CreateDeferred(a, kRootIno, "new");
  Write(a, ino, "hello", 0);
  SetAttrRequest chmod;
  chmod.mode = 0600;
  ASSERT_TRUE(a.ns->SetAttr(ino, chmod).ok());
  EXPECT_EQ(plan_->calls() - before, 0) << "create, write and chmod stay in this mount";
  EXPECT_TRUE(a.ns->Lookup(kRootIno, "new").ok());
  auto listing = a.ns->ReadDir(kRootIno);
  ASSERT_TRUE(listing.ok());
  EXPECT_EQ(listing->size(), 2u);
  EXPECT_FALSE(InTable("/", "new"));
  EXPECT_TRUE(b.ns->Lookup(kRootIno, "new").status().Is(Code::kNotFound))
      << "another mount sees it after the commit";

  const int at_close = plan_->calls();
  ASSERT_TRUE(a.data->Release(ino).ok());
  EXPECT_EQ(plan_->calls() - at_close, 2) << "Put Blob, then the entry's insert";
  auto seen = b.ns->Lookup(kRootIno, "new");
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ(seen->size, 5u);
  EXPECT_EQ(seen->mode & 07777, 0600u);
  auto st = b.ns->GetFile(seen->ino, true);
  ASSERT_TRUE(st.ok());
  auto props = raw_blobs_->GetProperties(kContainer, "new");
  ASSERT_TRUE(props.ok());
  EXPECT_EQ(st->blob_etag, props->etag);
}

// printf 'from-A' > A/f while B made f: bash's close(3) after dup2 flushes
// the still-empty new file, which conflicts (a copy is saved, the open file
// shows B's version); the write to fd 1 that follows must not succeed and
// vanish (it did: the copy empty, from-A nowhere, close 0). It fails (EIO);
// an open made after the conflict writes as usual.
TEST_F(DeferredCreateTest, AWriteAfterAnEarlyFlushFoundAConflictFailsInsteadOfVanishing) {
  Mount a = NewMount("a");
  Mount b = NewMount("b");
  auto attr = a.ns->Create(kRootIno, "f", 0644, 0, 0, true);
  ASSERT_TRUE(attr.ok());
  auto opened = a.data->Open(attr->ino, OpenFlags{true, true, true});
  ASSERT_TRUE(opened.ok());
  Commit(b, "f", "from-B\n");
  EXPECT_TRUE(a.data->Flush(attr->ino).Is(Code::kPreconditionFailed)) << "close(3): the conflict";
  auto w = a.data->Write(attr->ino, "from-A\n", 7, 0, false, opened->handle);
  EXPECT_TRUE(w.status().Is(Code::kPreconditionFailed)) << "write(1) after it";
  // The inode lost its name to B's file: an open of it (the kernel's dentry
  // within the TTL) may not write either (it was accepted, then committed
  // nowhere).
  auto stale = a.data->Open(attr->ino, OpenFlags{false, false, true});
  ASSERT_TRUE(stale.ok());
  EXPECT_TRUE(a.data->Write(attr->ino, "lost?\n", 6, 0, false, stale->handle)
                  .status()
                  .Is(Code::kPreconditionFailed));
  EXPECT_TRUE(a.data->Release(attr->ino).ok());
  EXPECT_TRUE(a.data->Release(attr->ino).ok());
  // The name, looked up again, is B's file, and writes to it commit.
  uint64_t winner = OpenExisting(a, "f");
  EXPECT_NE(winner, attr->ino);
  Write(a, winner, "again\n", 7);
  EXPECT_TRUE(a.data->Release(winner).ok());
  EXPECT_EQ(Blob("f"), "from-B\nagain\n");
}

TEST_F(DeferredCreateTest, AnUnlinkBeforeTheCommitLeavesNothing) {
  Mount a = NewMount("a");
  uint64_t ino = CreateDeferred(a, kRootIno, "tmp");
  Write(a, ino, "scratch", 0);
  const int before = plan_->calls();
  ASSERT_TRUE(a.ns->Unlink(kRootIno, "tmp").ok());
  EXPECT_EQ(plan_->calls() - before, 0);
  a.data->Release(ino).PermitUnchecked();
  EXPECT_FALSE(InTable("/", "tmp"));
  EXPECT_TRUE(raw_blobs_->GetProperties(kContainer, "tmp").status().Is(Code::kNotFound));
  EXPECT_TRUE(a.ns->Lookup(kRootIno, "tmp").status().Is(Code::kNotFound));
}

TEST_F(DeferredCreateTest, ANameAnotherMountTookFirstGetsTheDataAsAConflictCopy) {
  Mount a = NewMount("a");
  Mount b = NewMount("b");
  uint64_t ino = CreateDeferred(a, kRootIno, "f");
  Write(a, ino, "from a", 0);
  auto theirs = b.ns->Mkdir(kRootIno, "f", 0755, 0, 0);
  ASSERT_TRUE(theirs.ok());
  EXPECT_TRUE(a.data->Release(ino).Is(Code::kPreconditionFailed));
  EXPECT_TRUE(raw_blobs_->GetProperties(kContainer, "f").status().Is(Code::kNotFound))
      << "the blob written for the lost name is withdrawn";
  auto listing = b.ns->ReadDir(kRootIno);
  ASSERT_TRUE(listing.ok());
  ASSERT_EQ(listing->size(), 2u);
  for (const DirEntry& e : *listing) {
    if (e.name == "f") {
      EXPECT_TRUE(e.attr.IsDir());
      continue;
    }
    EXPECT_EQ(e.name.rfind("f.conflict-testhost-", 0), 0u) << e.name;
    EXPECT_EQ(Blob(e.name), "from a");
  }
}

TEST_F(DeferredCreateTest, ADirectoryRemovedMeanwhileSendsTheDataToTheRoot) {
  Mount a = NewMount("a");
  Mount b = NewMount("b");
  uint64_t ino = PendingInRemovedDirectory(a, b, "f", "kept");
  EXPECT_FALSE(a.data->Release(ino).ok());
  auto listing = b.ns->ReadDir(kRootIno);
  ASSERT_TRUE(listing.ok());
  ASSERT_EQ(listing->size(), 1u);
  EXPECT_EQ((*listing)[0].name.rfind("f.conflict-testhost-", 0), 0u);
  EXPECT_EQ(Blob((*listing)[0].name), "kept");
  EXPECT_TRUE(raw_blobs_->GetProperties(kContainer, "d/f").status().Is(Code::kNotFound));
}

TEST_F(DeferredCreateTest, TwoMountsCreatingOneNameEndWithOneFileAndOneCopy) {
  Mount a = NewMount("a");
  Mount b = NewMount("b");
  uint64_t ia = CreateDeferred(a, kRootIno, "x");
  uint64_t ib = CreateDeferred(b, kRootIno, "x");
  Write(a, ia, "from a", 0);
  Write(b, ib, "from b", 0);
  ASSERT_TRUE(b.data->Release(ib).ok());
  EXPECT_TRUE(a.data->Release(ia).Is(Code::kPreconditionFailed));
  auto seen = a.ns->Lookup(kRootIno, "x");
  ASSERT_TRUE(seen.ok()) << "the loser sees the winner's file, not its own lost one";
  EXPECT_EQ(seen->ino, b.ns->Lookup(kRootIno, "x")->ino);
  auto listing = a.ns->ReadDir(kRootIno);
  ASSERT_TRUE(listing.ok());
  ASSERT_EQ(listing->size(), 2u);
  EXPECT_EQ(Blob("x"), "from b");
  for (const DirEntry& e : *listing) {
    if (e.name != "x") {
      EXPECT_EQ(Blob(e.name), "from a") << e.name;
    }
  }
}

TEST_F(DeferredCreateTest, AnEmptyNewFileInARemovedDirectoryIsENOENTAndLeavesNothing) {
  Mount a = NewMount("a");
  Mount b = NewMount("b");
  uint64_t ino = PendingInRemovedDirectory(a, b, "empty", "");
  EXPECT_TRUE(a.data->Release(ino).Is(Code::kNotFound));
  auto listing = b.ns->ReadDir(kRootIno);
  ASSERT_TRUE(listing.ok());
  EXPECT_TRUE(listing->empty()) << "no conflict copy of nothing";
  EXPECT_TRUE(raw_blobs_->GetProperties(kContainer, "d/empty").status().Is(Code::kNotFound));
  EXPECT_TRUE(a.blocks->Journaled().empty());
}

TEST_F(DeferredCreateTest, ANewFileLostInACrashIsReplayedUnderItsName) {
  const std::string data = Pattern(3 * kBlock + 5, 31);
  {
    Mount m = NewMount("crash");
    uint64_t ino = CreateDeferred(m, kRootIno, "unsynced");
    Write(m, ino, data, 0);
    // kill -9 before the first commit: the entry never reached the table.
  }
  EXPECT_FALSE(InTable("/", "unsynced"));
  Mount after = NewMount("crash");
  ASSERT_TRUE(after.data->ReplayJournal().ok());
  EXPECT_EQ(Blob("unsynced"), data);
  auto attr = after.ns->Lookup(kRootIno, "unsynced");
  ASSERT_TRUE(attr.ok());
  EXPECT_EQ(attr->size, data.size());
  EXPECT_TRUE(after.blocks->Journaled().empty());
}

// Found by tests/sim (seed 1310): the journal of a new file unlinked while
// open named it still, so the replay after a kill -9 created it again.
TEST_F(DeferredCreateTest, ANewFileUnlinkedWhileOpenStaysGoneAfterACrash) {
  {
    Mount m = NewMount("crash");
    uint64_t ino = CreateDeferred(m, kRootIno, "gone");
    Write(m, ino, "written, then unlinked", 0);
    auto gone = m.ns->Unlink(kRootIno, "gone");
    ASSERT_TRUE(gone.ok());
    m.data->Unlinked(ino, gone->blob, gone->blob_etag);
    Write(m, ino, " and more", 22);
    // kill -9 with the file still open.
  }
  Mount after = NewMount("crash");
  ASSERT_TRUE(after.data->ReplayJournal().ok());
  EXPECT_FALSE(InTable("/", "gone"));
  EXPECT_TRUE(raw_blobs_->GetProperties(kContainer, "gone").status().Is(Code::kNotFound));
  EXPECT_TRUE(after.blocks->Journaled().empty());
}

// Found by tests/sim (seed 678889444063): the blob of a file unlinked while
// open was deleted by name at its last close, whatever the name held by then.
TEST_F(DeferredCreateTest, TheLastCloseOfAnUnlinkedFileSparesTheBlobOfANewFileOfItsName) {
  Mount a = NewMount("a");
  Mount b = NewMount("b");
  uint64_t ino = Create(a, "name");  // O_EXCL: the entry is in the table, no blob yet
  auto gone = a.ns->Unlink(kRootIno, "name");
  ASSERT_TRUE(gone.ok());
  a.data->Unlinked(ino, gone->blob, gone->blob_etag);
  Write(a, ino, "to an unlinked file", 0);
  Commit(b, "name", "another mount's new file");
  a.data->Release(ino).PermitUnchecked();
  EXPECT_EQ(Blob("name"), "another mount's new file");
}

// Its data is made local first: the open file reads from the cache alone,
// and a new file of the name is free to commit (tests/unit/unlinked_test.cc).
TEST_F(DeferredCreateTest, AnUnlinkedOpenFileLosesItsBlobAtOnceAndKeepsItsData) {
  Mount a = NewMount("a");
  Commit(a, "old", "committed");
  uint64_t ino = OpenExisting(a, "old");
  auto gone = a.ns->Unlink(kRootIno, "old");
  ASSERT_TRUE(gone.ok());
  a.data->Unlinked(ino, gone->blob, gone->blob_etag);
  EXPECT_TRUE(raw_blobs_->GetProperties(kContainer, "old").status().Is(Code::kNotFound));
  EXPECT_EQ(ReadAll(a, ino, 9), "committed");
  ASSERT_TRUE(a.data->Release(ino).ok());
  EXPECT_TRUE(raw_blobs_->GetProperties(kContainer, "old").status().Is(Code::kNotFound));
}

// The service is away at the unlink: the blob stays until the last close.
TEST_F(DeferredCreateTest, AnUnlinkedOpenFileWhoseDataCannotBeFetchedKeepsItsBlobUntilClosed) {
  const std::string content = Pattern(3 * kBlock, 3);
  uint64_t ino = 0;
  Mount m = ColdReader(content, &ino);
  auto gone = m.ns->Unlink(kRootIno, "f");
  ASSERT_TRUE(gone.ok());
  plan_->FailAlways(Status(Code::kTransport, "injected"), "Read");
  m.data->Unlinked(ino, gone->blob, gone->blob_etag);
  plan_->Clear();
  EXPECT_EQ(Blob("f"), content) << "kept while open";
  EXPECT_EQ(ReadAll(m, ino, content.size()), content);
  ASSERT_TRUE(m.data->Release(ino).ok());
  EXPECT_TRUE(raw_blobs_->GetProperties(kContainer, "f").status().Is(Code::kNotFound));
}

TEST_F(DeferredCreateTest, ARenameFindingThePendingNameTakenKeepsTheDataForACopy) {
  Mount a = NewMount("a");
  Mount b = NewMount("b");
  Commit(a, "other", "x");
  uint64_t ino = CreateDeferred(a, kRootIno, "f");
  Write(a, ino, "from a", 0);
  Commit(b, "f", "from b");
  ASSERT_TRUE(a.ns->Rename(kRootIno, "other", kRootIno, "other2", 0).ok());
  EXPECT_TRUE(a.data->Release(ino).Is(Code::kPreconditionFailed)) << "not a silent success";
  EXPECT_EQ(Blob("f"), "from b");
  int copies = 0;
  auto listing = b.ns->ReadDir(kRootIno);
  ASSERT_TRUE(listing.ok());
  for (const DirEntry& e : *listing) {
    if (e.name.rfind("f.conflict-", 0) == 0) {
      copies++;
      EXPECT_EQ(Blob(e.name), "from a");
    }
  }
  EXPECT_EQ(copies, 1);
}

TEST_F(DeferredCreateTest, UnlinkingAPendingFileLeavesAnotherMountsBlobAlone) {
  Mount a = NewMount("a");
  Mount b = NewMount("b");
  uint64_t ino = CreateDeferred(a, kRootIno, "f");
  Commit(b, "f", "from b");
  auto gone = a.ns->Unlink(kRootIno, "f");
  ASSERT_TRUE(gone.ok());
  a.data->Unlinked(ino, gone->blob, gone->blob_etag);
  a.data->Release(ino).PermitUnchecked();
  EXPECT_EQ(Blob("f"), "from b");
}

TEST_F(DeferredCreateTest, RenameAndNameClashesSeeThePendingEntry) {
  Mount a = NewMount("a");
  uint64_t ino = CreateDeferred(a, kRootIno, "p");
  EXPECT_TRUE(a.ns->Create(kRootIno, "p", 0644, 0, 0).status().Is(Code::kAlreadyExists));
  EXPECT_TRUE(a.ns->Create(kRootIno, "p", 0644, 0, 0, true).status().Is(Code::kAlreadyExists));
  EXPECT_TRUE(a.ns->Mkdir(kRootIno, "p", 0755, 0, 0).status().Is(Code::kAlreadyExists));
  Write(a, ino, "moved", 0);
  ASSERT_TRUE(a.ns->Rename(kRootIno, "p", kRootIno, "q", 0).ok());
  EXPECT_FALSE(InTable("/", "q")) << "a pending file is renamed in memory";
  EXPECT_FALSE(InTable("/", "p"));
  EXPECT_EQ(a.ns->Lookup(kRootIno, "q")->ino, ino);
  EXPECT_TRUE(a.ns->Lookup(kRootIno, "p").status().Is(Code::kNotFound));
  ASSERT_TRUE(a.data->Release(ino).ok());
  EXPECT_TRUE(InTable("/", "q")) << "its first commit inserts it under the new name";
  EXPECT_FALSE(InTable("/", "p"));
  EXPECT_EQ(Blob("q"), "moved");
}

TEST_F(FileDataTest, CommitAllAtShutdownCommitsFilesStillOpen) {
  const std::string content = Pattern(3 * kBlock + 5, 21);
  Mount m = NewMount("shutdown");
  uint64_t ino = Create(m, "open-at-exit");
  Write(m, ino, content, 0);
  EXPECT_EQ(m.data->CommitAll(std::chrono::seconds(30)), 0u);
  EXPECT_EQ(Blob("open-at-exit"), content);
  EXPECT_TRUE(m.blocks->Journaled().empty());
}

TEST_F(FileDataTest, CommitAllLeavesWhatFailsInTheJournal) {
  Mount m = NewMount("shutdown-fails");
  uint64_t ino = Create(m, "unlucky");
  Write(m, ino, "changes", 0);
  plan_->FailAlways(Status(Code::kTransport, "backend gone"), "Put");
  plan_->FailAlways(Status(Code::kTransport, "backend gone"), "PutBlockList");
  EXPECT_EQ(m.data->CommitAll(std::chrono::seconds(30)), 1u);
  EXPECT_EQ(m.blocks->Journaled().size(), 1u);
}

TEST_F(FileDataTest, TheJournalReplaysWritesAfterASimulatedCrash) {
  const std::string v1 = Pattern(4 * kBlock, 13);
  const std::string fresh = Pattern(3 * kBlock + 77, 14);
  uint64_t existing_ino = 0;
  {
    Mount m = NewMount("crash");
    Commit(m, "existing", v1);
    existing_ino = OpenExisting(m, "existing");
    Write(m, existing_ino, "journaled patch", 2 * kBlock + 3);
    uint64_t n = Create(m, "fresh");
    Write(m, n, fresh, 0);
    // kill -9: no flush, no release; the objects just go away.
  }
  EXPECT_EQ(Blob("existing"), v1);
  Mount after = NewMount("crash");
  ASSERT_EQ(after.blocks->Journaled().size(), 2u);
  ASSERT_TRUE(after.data->ReplayJournal().ok());
  std::string expected = v1;
  expected.replace(2 * kBlock + 3, 15, "journaled patch");
  EXPECT_EQ(Blob("existing"), expected);
  EXPECT_EQ(Blob("fresh"), fresh);
  EXPECT_TRUE(after.blocks->Journaled().empty());
  auto attr = after.ns->Lookup(kRootIno, "fresh");
  ASSERT_TRUE(attr.ok());
  EXPECT_EQ(attr->size, fresh.size());
  (void)existing_ino;
}

TEST_F(FileDataTest, AReplayAfterAnotherWriterCommittedBecomesAConflictCopy) {
  {
    Mount m = NewMount("crash");
    Commit(m, "shared", "base");
    uint64_t ino = OpenExisting(m, "shared");
    Write(m, ino, "lost?", 0);
  }
  Mount other = NewMount("other");
  Commit(other, "unrelated", "x");
  uint64_t io = OpenExisting(other, "shared");
  Write(other, io, "winner", 0);
  ASSERT_TRUE(other.data->Release(io).ok());
  Mount after = NewMount("crash");
  ASSERT_TRUE(after.data->ReplayJournal().ok());
  EXPECT_EQ(Blob("shared"), "winner");
  auto listing = after.ns->ReadDir(kRootIno);
  ASSERT_TRUE(listing.ok());
  bool found = false;
  for (const DirEntry& e : *listing) {
    if (e.name.rfind("shared.conflict-", 0) == 0) {
      found = true;
      EXPECT_EQ(Blob(e.name), "lost?");
    }
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace stampfs
