// Read-ahead across a directory's small files (fs/data/dir_readahead.h): a reader
// opening files in listing order finds the next ones in the cache, fetched
// once each; out-of-order opens and large files fetch nothing ahead; a stale
// listing never serves another version's bytes.
#include <chrono>
#include <cstdio>
#include <thread>

#include "tests/unit/file_data_fixture.h"

namespace stampfs {
namespace {

int Gets(const FaultPlan& plan) { return plan.calls("Read") + plan.calls("ReadStream"); }

std::string NameOf(int i) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "f%02d", i);
  return buf;
}

class DirReadAheadTest : public FileDataTest {
 protected:
  // `n` files of `size` bytes written by another mount; `m` has the listing.
  void Populate(Mount& m, int n, size_t size) {
    Mount writer = NewMount("writer");
    for (int i = 0; i < n; ++i) Commit(writer, NameOf(i), Pattern(size, 100 + i));
    ASSERT_TRUE(m.ns->ReadDir(kRootIno).ok());
  }
  std::string ReadFile(Mount& m, const std::string& name) {
    return FileDataTest::ReadFile(m, kRootIno, name);
  }
  // Waits (bounded) until the GETs stop changing.
  int SettledGets() {
    int last = -1;
    for (int i = 0; i < 100; ++i) {
      int now = Gets(*plan_);
      if (now == last) return now;
      last = now;
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
    }
    return last;
  }
};

TEST_F(DirReadAheadTest, InOrderOpensFindTheNextFilesFetchedAheadOnceEach) {
  Mount m = NewMount("m");
  Populate(m, 20, 3000);
  const int before = Gets(*plan_);
  EXPECT_EQ(ReadFile(m, NameOf(0)), Pattern(3000, 100));
  EXPECT_EQ(ReadFile(m, NameOf(1)), Pattern(3000, 101));  // in order: the rest is fetched ahead
  EXPECT_EQ(SettledGets() - before, 20) << "every file fetched, none twice";
  for (int i = 2; i < 20; ++i) EXPECT_EQ(ReadFile(m, NameOf(i)), Pattern(3000, 100 + i));
  EXPECT_EQ(SettledGets() - before, 20) << "the reader found them cached";
}

TEST_F(DirReadAheadTest, OpensOutOfListingOrderFetchNothingAhead) {
  Mount m = NewMount("m");
  Populate(m, 12, 3000);
  const int before = Gets(*plan_);
  for (int i : {5, 2, 9, 0, 7}) EXPECT_EQ(ReadFile(m, NameOf(i)), Pattern(3000, 100 + i));
  EXPECT_EQ(SettledGets() - before, 5);
}

TEST_F(DirReadAheadTest, FilesLargerThanOneBlockAreLeftToTheReader) {
  Mount m = NewMount("m");
  Populate(m, 6, 2 * kBlock);
  const int before = Gets(*plan_);
  EXPECT_EQ(ReadFile(m, NameOf(0)), Pattern(2 * kBlock, 100));
  EXPECT_EQ(ReadFile(m, NameOf(1)), Pattern(2 * kBlock, 101));
  const int two = SettledGets() - before;
  EXPECT_EQ(ReadFile(m, NameOf(2)), Pattern(2 * kBlock, 102));
  EXPECT_GT(SettledGets() - before, two) << "f02 was not fetched ahead";
}

// The listing m cached names f03's old version: the GET ahead is pinned to
// it and fails (412); the reader, past the TTL, reads the new bytes.
TEST_F(DirReadAheadTest, AStaleListingNeverServesAnotherVersionsBytes) {
  Mount m = NewMount("m");
  Populate(m, 6, 3000);
  Mount other = NewMount("o");
  uint64_t ino = OpenExisting(other, NameOf(3));
  const std::string newer = Pattern(3000, 999);
  Write(other, ino, newer, 0);
  ASSERT_TRUE(other.data->Release(ino).ok());
  EXPECT_EQ(ReadFile(m, NameOf(0)), Pattern(3000, 100));
  EXPECT_EQ(ReadFile(m, NameOf(1)), Pattern(3000, 101));
  SettledGets();
  now_ms_ += 5000;  // past the TTL: m revalidates the listing
  EXPECT_EQ(ReadFile(m, NameOf(2)), Pattern(3000, 102));
  EXPECT_EQ(ReadFile(m, NameOf(3)), newer);
}

}  // namespace
}  // namespace stampfs
