// A rename keeps the file's cached data: the server-side copy holds the same
// bytes under a new ETag, and the cache file of the copied version is keyed
// by the copy's (blob, ETag) from then on. Never another version's bytes.
#include <sys/stat.h>

#include "tests/unit/file_data_fixture.h"

namespace stampfs {
namespace {

int Gets(const FaultPlan& plan) { return plan.calls("Read") + plan.calls("ReadStream"); }

class RenameCacheTest : public FileDataTest {
 protected:
  std::string Etag(const std::string& blob) {
    return raw_blobs_->GetProperties(kContainer, blob)->etag;
  }
};

TEST_F(RenameCacheTest, ARenamedFileIsReadFromTheCacheWithoutAGet) {
  Mount writer = NewMount("w");
  Mount m = NewMount("m");
  const std::string data = Pattern(kBlock + 300, 41);  // two blocks, one Put Blob
  Commit(writer, "f.tmp", data);
  EXPECT_EQ(ReadFile(m, kRootIno, "f.tmp"), data);
  const int gets = Gets(*plan_);
  ASSERT_GE(gets, 1);
  const std::string before = Etag("f.tmp");
  ASSERT_TRUE(m.ns->Rename(kRootIno, "f.tmp", kRootIno, "f", 0).ok());
  ASSERT_NE(Etag("f"), before) << "the copy has an ETag of its own";
  EXPECT_EQ(ReadFile(m, kRootIno, "f"), data);
  EXPECT_EQ(Gets(*plan_), gets) << "the renamed file's blocks came from the cache";
}

TEST_F(RenameCacheTest, ARenameOverAnotherFileServesTheSourcesBytes) {
  Mount m = NewMount("m");
  const std::string old_target = Pattern(500, 42), data = Pattern(700, 43);
  Commit(m, "target", old_target);
  Commit(m, "src", data);
  EXPECT_EQ(ReadFile(m, kRootIno, "target"), old_target);
  EXPECT_EQ(ReadFile(m, kRootIno, "src"), data);
  const int gets = Gets(*plan_);
  ASSERT_TRUE(m.ns->Rename(kRootIno, "src", kRootIno, "target", 0).ok());
  EXPECT_EQ(ReadFile(m, kRootIno, "target"), data);
  EXPECT_EQ(Gets(*plan_), gets);
}

TEST_F(RenameCacheTest, FilesOfARenamedDirectoryKeepTheirCachedData) {
  Mount writer = NewMount("w");
  Mount m = NewMount("m");
  auto dir = writer.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
  ASSERT_TRUE(dir.ok());
  const std::string data = Pattern(900, 44);
  auto attr = writer.ns->Create(dir->ino, "x", 0644, 0, 0);
  ASSERT_TRUE(attr.ok());
  ASSERT_TRUE(writer.data->Open(attr->ino, OpenFlags{true, true, true}).ok());
  Write(writer, attr->ino, data, 0);
  ASSERT_TRUE(writer.data->Release(attr->ino).ok());
  auto d = m.ns->Lookup(kRootIno, "d");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(ReadFile(m, d->ino, "x"), data);
  const int gets = Gets(*plan_);
  ASSERT_TRUE(m.ns->Rename(kRootIno, "d", kRootIno, "e", 0).ok());
  auto e = m.ns->Lookup(kRootIno, "e");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(ReadFile(m, e->ino, "x"), data);
  EXPECT_EQ(Gets(*plan_), gets);
}

// The cache follows the copy's ETag only: a version written after the
// rename (by another mount) is read from the service, never the old bytes.
TEST_F(RenameCacheTest, AVersionWrittenAfterTheRenameIsNeverServedFromTheOldData) {
  Mount m = NewMount("m");
  Mount other = NewMount("o");
  const std::string data = Pattern(600, 45), newer = Pattern(600, 46);
  Commit(m, "a", data);
  EXPECT_EQ(ReadFile(m, kRootIno, "a"), data);
  ASSERT_TRUE(m.ns->Rename(kRootIno, "a", kRootIno, "b", 0).ok());
  uint64_t ino = OpenExisting(other, "b");
  Write(other, ino, newer, 0);
  ASSERT_TRUE(other.data->Release(ino).ok());
  now_ms_ += 5000;  // past the TTL: m sees the new entry
  const int gets = Gets(*plan_);
  EXPECT_EQ(ReadFile(m, kRootIno, "b"), newer);
  EXPECT_GT(Gets(*plan_), gets);
}

}  // namespace
}  // namespace stampfs
