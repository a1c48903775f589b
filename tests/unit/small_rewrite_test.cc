// Small rewrites stay small: a commit that changes a few bytes of a large
// committed file uploads a bounded number of bytes (the rewrite layout,
// fs/data/block_layout.h), and the file reads back the same on this mount and on
// a cold one.
#include <gtest/gtest.h>

#include <string>

#include "fs/data/block_layout.h"
#include "storage/stats.h"
#include "tests/unit/file_data_fixture.h"

namespace stampfs {
namespace {

uint64_t DataUp() {
  for (const auto& [name, value] : StatsSnapshot()) {
    if (name == "bytes.data_up") return value;
  }
  return 0;
}

TEST(BlockLayoutTest, RewriteBlockSizeKeepsAbout4096BlocksAndRoomToGrow) {
  EXPECT_EQ(RewriteBlockSize(0), kMinBlockSize);
  EXPECT_EQ(RewriteBlockSize(8ull << 20), kMinBlockSize);
  EXPECT_EQ(RewriteBlockSize(64ull << 20), kMinBlockSize);
  EXPECT_EQ(RewriteBlockSize((64ull << 20) + 1), 2 * kMinBlockSize);
  EXPECT_EQ(RewriteBlockSize(1ull << 30), 256ull << 10);
  EXPECT_EQ(RewriteBlockSize(1ull << 50), kMaxBlockSize);
  EXPECT_GE(BlockLayout(kMinBlockSize).MaxFileSize(), 7ull << 40) << "a database may grow";
  EXPECT_EQ(BlockLayout(kMinBlockSize).MaxFileSize(), 2000 * kMinBlockSize * ((1ull << 18) - 1));
  EXPECT_EQ(BlockLayout().MaxFileSize(), 31 * 10000 * kDefaultBlockSize);
  for (uint64_t size : {1ull << 20, 100ull << 20, 3ull << 30}) {
    const BlockLayout layout(RewriteBlockSize(size));
    EXPECT_TRUE(ValidBlockSize(layout.base()));
    EXPECT_LE(layout.CountFor(size), kRewriteBlocks);
    EXPECT_GE(layout.MaxFileSize(), 64 * size);
  }
}

class SmallRewriteTest : public FileDataTest {
 protected:
  void SetUp() override {
    FileDataTest::SetUp();
    block_size_ = kDefaultBlockSize;  // the daemon's defaults
    single_put_limit_ = 8ull << 20;
  }

  // Overwrites `patch` at `off` through a new open of `name` on `m` and
  // commits it; returns the file data bytes uploaded.
  uint64_t Rewrite(Mount& m, const std::string& name, std::string* content,
                   const std::string& patch, uint64_t off) {
    const uint64_t before = DataUp();
    uint64_t ino = OpenExisting(m, name);
    Write(m, ino, patch, off);
    EXPECT_TRUE(m.data->Release(ino).ok());
    content->replace(off, patch.size(), patch);
    return DataUp() - before;
  }

  void ExpectReadsBack(Mount& m, const std::string& name, const std::string& content) {
    uint64_t ino = OpenExisting(m, name, false);
    EXPECT_TRUE(ReadAll(m, ino, content.size()) == content) << name << " reads back";
    EXPECT_TRUE(m.data->Release(ino).ok());
  }
};

TEST_F(SmallRewriteTest, A100ByteOverwriteOfA8MiBFileUploadsOneSmallBlock) {
  Mount m = NewMount("a");
  const uint64_t size = 8ull << 20;
  std::string content = Pattern(size, 21);
  Commit(m, "db", content);
  const std::string patch = Pattern(100, 22);

  // The first in-place rewrite of a file put whole moves it to the rewrite
  // layout: one upload of the whole file (nothing of a Put Blob is reusable).
  EXPECT_LE(Rewrite(m, "db", &content, patch, size / 2 + 5), size);
  for (int i = 1; i <= 20; ++i) {
    const int put_blocks = plan_->calls("PutBlock");
    const uint64_t up = Rewrite(m, "db", &content, patch, size / 2 + 4096 * i + 7);
    EXPECT_LE(up, 2 * kMinBlockSize) << "rewrite " << i;
    EXPECT_LE(plan_->calls("PutBlock") - put_blocks, 2) << "rewrite " << i;
  }
  EXPECT_TRUE(Blob("db") == content);
  ExpectReadsBack(m, "db", content);

  Mount cold = NewMount("cold");  // a remount with an empty cache
  ExpectReadsBack(cold, "db", content);
  EXPECT_LE(Rewrite(cold, "db", &content, patch, 123456), 2 * kMinBlockSize);
  EXPECT_TRUE(Blob("db") == content);
  Mount cold2 = NewMount("cold2");
  ExpectReadsBack(cold2, "db", content);
  auto list = raw_blobs_->GetBlockList(kContainer, "db", BlockListType::kCommitted);
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->committed.size(), size / kMinBlockSize);
}

TEST_F(SmallRewriteTest, ABlockListFileMovesToTheRewriteLayoutOnceItsWasteReachesHalfItsSize) {
  Mount m = NewMount("a");
  const uint64_t size = 12ull << 20;  // three 4 MiB blocks
  std::string content = Pattern(size, 23);
  Commit(m, "big", content);
  const std::string patch = "a small change";

  // Open once, as a database does: every commit of the open counts.
  const uint64_t before = DataUp();
  uint64_t ino = OpenExisting(m, "big");
  std::vector<uint64_t> ups;
  for (int i = 0; i < 8; ++i) {
    const uint64_t at = DataUp();
    const uint64_t off = 5ull * 1000 * 1000 + 65536 * i;
    Write(m, ino, patch, off);
    ASSERT_TRUE(m.data->Sync(ino).ok());
    content.replace(off, patch.size(), patch);
    ups.push_back(DataUp() - at);
  }
  ASSERT_TRUE(m.data->Release(ino).ok());
  EXPECT_EQ(ups[0], kDefaultBlockSize) << "one 4 MiB block";
  EXPECT_EQ(ups[1], size) << "waste 8 MiB >= 6 MiB: the whole file in small blocks";
  for (size_t i = 2; i < ups.size(); ++i) EXPECT_LE(ups[i], 2 * kMinBlockSize) << i;
  EXPECT_LE(DataUp() - before, kDefaultBlockSize + size + 6 * 2 * kMinBlockSize);
  EXPECT_TRUE(Blob("big") == content);
  Mount cold = NewMount("cold");
  ExpectReadsBack(cold, "big", content);
}

TEST_F(SmallRewriteTest, AFileMostlyRewrittenOrNewStaysOnePutBlob) {
  Mount m = NewMount("a");
  const uint64_t size = 1ull << 20;
  std::string content = Pattern(size, 24);
  Commit(m, "f", content);
  const int puts = plan_->calls("Put");
  // More than half written: not in place, put whole as before.
  EXPECT_EQ(Rewrite(m, "f", &content, Pattern(size * 3 / 4, 25), 0), size);
  EXPECT_EQ(plan_->calls("Put") - puts, 1);
  EXPECT_EQ(plan_->calls("PutBlock"), 0);
  EXPECT_TRUE(Blob("f") == content);
}

TEST_F(SmallRewriteTest, ACrashAfterTheRelayoutCommitsTheNewLayoutOnReplay) {
  Mount m = NewMount("a");
  const uint64_t size = 2ull << 20;
  std::string content = Pattern(size, 26);
  Commit(m, "db", content);
  plan_->FailAlways(ServerBusy(), "PutBlockList");
  uint64_t ino = OpenExisting(m, "db");
  const std::string patch = "changed after the relayout";
  Write(m, ino, patch, 777777);
  content.replace(777777, patch.size(), patch);
  EXPECT_FALSE(m.data->Flush(ino).ok());
  m = Mount{};  // crash: the changes and the new layout are in the cache journal
  plan_->Clear();
  Mount restarted = NewMount("a");
  ASSERT_TRUE(restarted.data->ReplayJournal().ok());
  EXPECT_TRUE(Blob("db") == content);
  Mount cold = NewMount("cold");
  ExpectReadsBack(cold, "db", content);
  EXPECT_LE(Rewrite(cold, "db", &content, "x", 99), 2 * kMinBlockSize);
  EXPECT_TRUE(Blob("db") == content);
}

}  // namespace
}  // namespace stampfs
