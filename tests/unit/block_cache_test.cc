// BlockCache: versions keyed by (blob, ETag), LRU eviction of clean blocks
// only (dirty, staged and pinned blocks stay), hole punching, the journal, and
// everything surviving a reopen.
#include "cache/block_cache.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace stampfs {
namespace {

constexpr uint64_t kBlock = 4096;

class BlockCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("stampfs-block-cache-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<BlockCache> OpenCache(uint64_t capacity) {
    auto c = BlockCache::Open(dir_.string(), capacity);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // Writes block k filled with `fill` and records it in `state`.
  void PutBlock(BlockCache& c, int64_t id, uint64_t k, char fill, BlockState state) {
    std::string data(kBlock, fill);
    ASSERT_EQ(pwrite(c.fd(id), data.data(), data.size(), static_cast<off_t>(k * kBlock)),
              static_cast<ssize_t>(kBlock));
    ASSERT_TRUE(c.Set(id, k, state, k * kBlock, kBlock, kBlock).ok());
  }

  std::string ReadBlock(BlockCache& c, int64_t id, uint64_t k) {
    std::string data(kBlock, '?');
    ssize_t n = pread(c.fd(id), data.data(), data.size(), static_cast<off_t>(k * kBlock));
    data.resize(n < 0 ? 0 : static_cast<size_t>(n));
    return data;
  }

  std::filesystem::path dir_;
};

TEST_F(BlockCacheTest, AVersionIsReusedOnlyForTheSameBlobAndEtag) {
  auto c = OpenCache(1 << 20);
  auto a = c->Acquire("dir/a", "\"e1\"", kBlock);
  ASSERT_TRUE(a.ok());
  auto again = c->Acquire("dir/a", "\"e1\"", kBlock);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*a, *again);
  auto other = c->Acquire("dir/a", "\"e2\"", kBlock);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*a, *other);
  auto fresh1 = c->Acquire("dir/b", "", kBlock);
  auto fresh2 = c->Acquire("dir/b", "", kBlock);
  ASSERT_TRUE(fresh1.ok() && fresh2.ok());
  EXPECT_NE(*fresh1, *fresh2) << "a file without a committed version is never shared";
}

TEST_F(BlockCacheTest, EvictionTakesLeastRecentlyUsedCleanBlocksAndPunchesHoles) {
  auto c = OpenCache(4 * kBlock);
  auto id = c->Acquire("f", "\"e\"", kBlock);
  ASSERT_TRUE(id.ok());
  for (uint64_t k = 0; k < 4; ++k)
    PutBlock(*c, *id, k, static_cast<char>('a' + k), BlockState::kClean);
  c->Touch(*id, 0);  // block 1 is now the least recently used
  EXPECT_TRUE(c->MakeRoom(kBlock));
  EXPECT_EQ(c->State(*id, 1), BlockState::kAbsent);
  EXPECT_EQ(c->State(*id, 0), BlockState::kClean);
  EXPECT_EQ(ReadBlock(*c, *id, 1), std::string(kBlock, '\0')) << "an evicted block reads as zeros";
  EXPECT_EQ(ReadBlock(*c, *id, 0), std::string(kBlock, 'a'));
  EXPECT_EQ(c->Stats().used, 3 * kBlock);
}

TEST_F(BlockCacheTest, TheBlockCountIsBoundedToo) {
  auto c = BlockCache::Open(dir_.string(), 1ull << 30, 3);
  ASSERT_TRUE(c.ok());
  for (int i = 0; i < 5; ++i) {
    auto id = (*c)->Acquire("small" + std::to_string(i), "\"e\"", kBlock);
    ASSERT_TRUE(id.ok());
    EXPECT_TRUE((*c)->MakeRoom(10));
    ASSERT_TRUE((*c)->Set(*id, 0, BlockState::kClean, 0, kBlock, 10).ok());
    (*c)->Release(*id);
  }
  EXPECT_EQ((*c)->Stats().blocks, 3u);
  EXPECT_EQ((*c)->Stats().files, 3u) << "files left without blocks are removed";
}

TEST_F(BlockCacheTest, DirtyStagedAndPinnedBlocksAreNeverEvicted) {
  auto c = OpenCache(3 * kBlock);
  auto id = c->Acquire("f", "", kBlock);
  ASSERT_TRUE(id.ok());
  PutBlock(*c, *id, 0, 'd', BlockState::kDirty);
  PutBlock(*c, *id, 1, 's', BlockState::kStaged);
  PutBlock(*c, *id, 2, 'p', BlockState::kClean);
  c->Pin(*id, 2);
  EXPECT_FALSE(c->MakeRoom(kBlock)) << "nothing may be evicted";
  EXPECT_EQ(c->State(*id, 0), BlockState::kDirty);
  EXPECT_EQ(c->State(*id, 1), BlockState::kStaged);
  EXPECT_EQ(c->State(*id, 2), BlockState::kClean);
  EXPECT_EQ(c->Stats().uncommitted, 2 * kBlock);
  c->Unpin(*id, 2);
  EXPECT_FALSE(c->MakeRoom(2 * kBlock)) << "the pinned block went, dirty data still fills it";
  EXPECT_EQ(c->State(*id, 2), BlockState::kAbsent);
  ASSERT_TRUE(c->MarkClean(*id).ok());
  EXPECT_EQ(c->UncommittedBytes(*id), 0u);
  EXPECT_TRUE(c->MakeRoom(3 * kBlock)) << "once committed, the blocks are evictable";
}

TEST_F(BlockCacheTest, BlocksVersionsAndJournalSurviveReopen) {
  int64_t clean_id, dirty_id;
  {
    auto c = OpenCache(1 << 20);
    auto a = c->Acquire("f", "\"e1\"", kBlock);
    ASSERT_TRUE(a.ok());
    clean_id = *a;
    PutBlock(*c, clean_id, 0, 'x', BlockState::kClean);
    auto b = c->Acquire("g", "", kBlock);
    ASSERT_TRUE(b.ok());
    dirty_id = *b;
    PutBlock(*c, dirty_id, 2, 'y', BlockState::kDirty);
    JournalRecord j;
    j.ino = 42;
    j.path = "/g";
    j.size = 3 * kBlock;
    j.tag = 0xfeedfacecafebeefull;
    j.commit_ids = {1, 0xfedcba9876543210ull};
    ASSERT_TRUE(c->SetJournal(dirty_id, j).ok());
    // No Release: as if the process were killed (the destructor still runs
    // here, but nothing depends on it).
  }
  auto c = OpenCache(1 << 20);
  auto again = c->Acquire("f", "\"e1\"", kBlock);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, clean_id) << "a remount starts warm";
  EXPECT_EQ(c->State(clean_id, 0), BlockState::kClean);
  EXPECT_EQ(ReadBlock(*c, clean_id, 0), std::string(kBlock, 'x'));
  auto journaled = c->Journaled();
  ASSERT_EQ(journaled.size(), 1u);
  EXPECT_EQ(journaled[0].id, dirty_id);
  ASSERT_TRUE(journaled[0].journal.has_value());
  EXPECT_EQ(journaled[0].journal->ino, 42u);
  EXPECT_EQ(journaled[0].journal->tag, 0xfeedfacecafebeefull);
  EXPECT_EQ(journaled[0].journal->commit_ids, (std::vector<uint64_t>{1, 0xfedcba9876543210ull}));
  EXPECT_EQ(c->State(dirty_id, 2), BlockState::kDirty);
  EXPECT_EQ(c->Stats().uncommitted, kBlock);
}

// A cache directory of an older stampfs (schema 1: no commit ids in the
// journal) keeps its journal: the column is added, the record replays.
TEST_F(BlockCacheTest, ASchemaOneIndexIsMigratedWithItsJournal) {
  std::filesystem::create_directories(dir_);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "index.db").c_str(), &db), SQLITE_OK);
  const char* v1 =
      "CREATE TABLE files(id INTEGER PRIMARY KEY, blob TEXT NOT NULL, etag TEXT NOT NULL,"
      " bsize INTEGER NOT NULL, journaled INTEGER NOT NULL DEFAULT 0, j_ino INTEGER,"
      " j_path BLOB, j_base TEXT, j_size INTEGER, j_remote INTEGER, j_mtime INTEGER,"
      " j_tag INTEGER);"
      "CREATE INDEX files_by_version ON files(blob, etag);"
      "CREATE TABLE blocks(file INTEGER NOT NULL, idx INTEGER NOT NULL, offset INTEGER NOT NULL,"
      " length INTEGER NOT NULL, extent INTEGER NOT NULL, state INTEGER NOT NULL,"
      " access INTEGER NOT NULL, PRIMARY KEY(file, idx)) WITHOUT ROWID;"
      "INSERT INTO files VALUES(7, 'g', '', 4096, 1, 42, X'2F67', '', 3, 0, 5, 9);"
      "PRAGMA user_version = 1;";
  ASSERT_EQ(sqlite3_exec(db, v1, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
  { std::ofstream data(dir_ / "7.data"); }
  auto c = OpenCache(1 << 20);
  ASSERT_TRUE(c);
  auto journaled = c->Journaled();
  ASSERT_EQ(journaled.size(), 1u);
  EXPECT_EQ(journaled[0].journal->path, "/g");
  EXPECT_TRUE(journaled[0].journal->commit_ids.empty());
  JournalRecord j = *journaled[0].journal;
  j.commit_ids = {3};
  ASSERT_TRUE(c->SetJournal(7, j).ok());
  c.reset();
  c = OpenCache(1 << 20);
  ASSERT_EQ(c->Journaled().size(), 1u);
  EXPECT_EQ(c->Journaled()[0].journal->commit_ids, std::vector<uint64_t>{3});
}

TEST_F(BlockCacheTest, RekeyMakesTheNewVersionCurrentAndDropsUnusedStaleOnes) {
  auto c = OpenCache(1 << 20);
  auto old_version = c->Acquire("f", "\"e1\"", kBlock);
  ASSERT_TRUE(old_version.ok());
  PutBlock(*c, *old_version, 0, 'o', BlockState::kClean);
  c->Release(*old_version);
  auto writer = c->Acquire("f", "", kBlock);
  ASSERT_TRUE(writer.ok());
  PutBlock(*c, *writer, 0, 'n', BlockState::kDirty);
  ASSERT_TRUE(c->MarkClean(*writer).ok());
  ASSERT_TRUE(c->Rekey(*writer, "f", "\"e2\"").ok());
  EXPECT_FALSE(c->Info(*old_version).has_value()) << "the stale version is gone";
  auto reuse = c->Acquire("f", "\"e2\"", kBlock);
  ASSERT_TRUE(reuse.ok());
  EXPECT_EQ(*reuse, *writer);
  EXPECT_EQ(ReadBlock(*c, *reuse, 0), std::string(kBlock, 'n'));
}

TEST_F(BlockCacheTest, DiscardAndDropFromForgetBlocks) {
  auto c = OpenCache(1 << 20);
  auto id = c->Acquire("f", "", kBlock);
  ASSERT_TRUE(id.ok());
  for (uint64_t k = 0; k < 3; ++k) PutBlock(*c, *id, k, 'z', BlockState::kDirty);
  ASSERT_TRUE(c->DropFrom(*id, 1).ok());
  EXPECT_EQ(c->Blocks(*id).size(), 1u);
  EXPECT_EQ(c->Stats().used, kBlock);
  ASSERT_TRUE(c->Discard(*id).ok());
  EXPECT_TRUE(c->Blocks(*id).empty());
  c->Release(*id);
  EXPECT_FALSE(c->Info(*id).has_value());
  EXPECT_EQ(c->Stats().used, 0u);
}

}  // namespace
}  // namespace stampfs
