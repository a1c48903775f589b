// Paths Azure cannot take as blob names (over 1,024 characters or 254
// segments; Linux takes any depth) store their data under a hashed blob
// name (BlobNameFor): created, committed, read by another mount, renamed
// across the limit both ways, listed by fsck as clean and left by import.
#include <gtest/gtest.h>

#include "fs/admin/fsck.h"
#include "fs/admin/import.h"
#include "fs/namespace/inode_table.h"
#include "storage/fakes.h"
#include "tests/unit/file_data_fixture.h"

namespace stampfs {
namespace {

class LongPathsTest : public FileDataTest {
 protected:
  // Directories of `component` characters below the root down to `depth`.
  uint64_t MakeDirs(Mount& m, int depth, size_t component, std::string* path) {
    uint64_t dir = kRootIno;
    path->clear();
    for (int i = 0; i < depth; ++i) {
      const std::string name(component, static_cast<char>('a' + i % 26));
      auto d = m.ns->Mkdir(dir, name, 0755, 0, 0);
      EXPECT_TRUE(d.ok()) << i << ": " << d.status().ToString();
      if (!d.ok()) return 0;
      dir = d->ino;
      *path += "/" + name;
    }
    return dir;
  }
  void WriteFile(Mount& m, uint64_t dir, const std::string& name, const std::string& data) {
    auto attr = m.ns->Create(dir, name, 0644, 0, 0);
    ASSERT_TRUE(attr.ok()) << attr.status().ToString();
    ASSERT_TRUE(m.data->Open(attr->ino, OpenFlags{true, true, true}).ok());
    Write(m, attr->ino, data, 0);
    ASSERT_TRUE(m.data->Release(attr->ino).ok());
  }
  // The inode of `path` as a fresh mount walks to it.
  uint64_t Walk(Mount& m, const std::string& path) {
    uint64_t ino = kRootIno;
    for (const std::string& part : SplitPath(path)) {
      auto a = m.ns->Lookup(ino, part);
      EXPECT_TRUE(a.ok()) << part.substr(0, 8) << ": " << a.status().ToString();
      if (!a.ok()) return 0;
      ino = a->ino;
    }
    return ino;
  }
  static std::vector<std::string> SplitPath(const std::string& path) {
    std::vector<std::string> out;
    for (size_t at = 1; at < path.size();) {
      size_t slash = path.find('/', at);
      if (slash == std::string::npos) slash = path.size();
      out.push_back(path.substr(at, slash - at));
      at = slash + 1;
    }
    return out;
  }
  void ExpectFsckClean() {
    FsckOptions o;
    o.container = kContainer;
    o.table = kTable;
    auto r = Fsck(*raw_table_, *raw_blobs_, o).Run();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->findings.empty())
        << r->findings.size()
        << " finding(s), first: " << (r->findings.empty() ? "" : r->findings[0].where);
  }
};

TEST(LongPathBlobNames, UpToAzuresLimitsAPathIsItsBlobNameBeyondThemAHash) {
  const std::string at_limit = "/" + std::string(1024, 'a');
  EXPECT_EQ(BlobNameFor(at_limit), at_limit.substr(1));
  const std::string over = "/" + std::string(1025, 'a');
  const std::string hashed = BlobNameFor(over);
  EXPECT_TRUE(IsLongPathBlob(hashed)) << hashed;
  EXPECT_EQ(hashed, BlobNameFor(over)) << "stable";
  EXPECT_NE(hashed, BlobNameFor(over + "b"));
  EXPECT_FALSE(IsLongPathBlob(at_limit.substr(1)));
  // Characters are UTF-16 units: 512 x U+00E9 (2 bytes each) is 512 characters.
  std::string accents;
  for (int i = 0; i < 512; ++i) accents += "\xC3\xA9";
  EXPECT_EQ(BlobNameFor("/" + accents), accents);
  std::string deep, deeper;
  for (int i = 0; i < 254; ++i) deep += "/d";
  deeper = deep + "/d";
  EXPECT_FALSE(IsLongPathBlob(BlobNameFor(deep))) << "254 segments";
  EXPECT_TRUE(IsLongPathBlob(BlobNameFor(deeper))) << "255 segments";
  EXPECT_FALSE(IsLongPathBlob(".stampfs-long/x")) << "only the hashed form";
}

// pjdfstest's deepest path: 32 components (4,095 characters, PATH_MAX - 1).
TEST_F(LongPathsTest, AFileAt4095CharactersIsWrittenReadByAnotherMountAndChecksClean) {
  Mount m = NewMount("a");
  std::string dir_path;
  const uint64_t dir = MakeDirs(m, 31, 127, &dir_path);
  ASSERT_NE(dir, 0u);
  const std::string name(126, 'z');
  const std::string path = dir_path + "/" + name;
  ASSERT_EQ(path.size(), 4095u);
  WriteFile(m, dir, name, Pattern(5000, 1));
  EXPECT_EQ(Blob(BlobNameFor(path)), Pattern(5000, 1)) << "in its hashed blob";
  EXPECT_TRUE(IsLongPathBlob(BlobNameFor(path)));
  Mount other = NewMount("b");
  const uint64_t ino = Walk(other, dir_path);
  ASSERT_NE(ino, 0u);
  EXPECT_EQ(ReadFile(other, ino, name), Pattern(5000, 1));
  ExpectFsckClean();
}

// A file renamed from a short path to a long one and back, and a directory
// renamed so that its files' paths cross the limit: the data follows.
TEST_F(LongPathsTest, RenamesAcrossTheLimitMoveTheData) {
  Mount m = NewMount("a");
  std::string dir_path;
  const uint64_t deep = MakeDirs(m, 4, 250, &dir_path);  // 1,004 characters
  ASSERT_NE(deep, 0u);
  WriteFile(m, kRootIno, "f", "short to long");
  const std::string long_name(40, 'L');
  ASSERT_TRUE(m.ns->Rename(kRootIno, "f", deep, long_name, 0).ok());
  EXPECT_FALSE(raw_blobs_->ReadToString(kContainer, "f").ok()) << "moved away";
  EXPECT_EQ(Blob(BlobNameFor(dir_path + "/" + long_name)), "short to long");
  EXPECT_EQ(ReadFile(m, deep, long_name), "short to long");
  // The directory above gets a shorter name: the file's path fits again.
  auto top = SplitPath(dir_path)[0];
  ASSERT_TRUE(m.ns->Rename(kRootIno, top, kRootIno, "t", 0).ok());
  const std::string now = "/t" + dir_path.substr(1 + top.size()) + "/" + long_name;
  EXPECT_FALSE(IsLongPathBlob(BlobNameFor(now)));
  EXPECT_EQ(Blob(BlobNameFor(now)), "short to long");
  Mount other = NewMount("b");
  const uint64_t ino = Walk(other, ParentPath(now));
  ASSERT_NE(ino, 0u);
  EXPECT_EQ(ReadFile(other, ino, long_name), "short to long");
  ExpectFsckClean();
}

// Import adds no file for a hashed blob: an entry names it, or it is
// reported (its path was only in the table).
TEST_F(LongPathsTest, ImportLeavesHashedBlobsAndReportsOnesNoEntryNames) {
  Mount m = NewMount("a");
  std::string dir_path;
  const uint64_t dir = MakeDirs(m, 9, 120, &dir_path);
  ASSERT_NE(dir, 0u);
  WriteFile(m, dir, "kept", "named");
  const std::string orphan = BlobNameFor(dir_path + "/lost");
  ASSERT_TRUE(raw_blobs_->PutString(kContainer, orphan, "x", {}, Condition::None()).ok());
  ImportOptions o;
  o.container = kContainer;
  o.table = kTable;
  auto report = Importer(*raw_table_, *raw_blobs_, o).Run();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->problems.size(), 1u);
  EXPECT_EQ(report->problems[0].blob, orphan);
  Mount other = NewMount("b");
  auto root = other.ns->ReadDir(kRootIno);
  ASSERT_TRUE(root.ok());
  for (const DirEntry& e : *root) EXPECT_NE(e.name, ".stampfs-long") << "no file of a hash";
  const uint64_t ino = Walk(other, dir_path);
  ASSERT_NE(ino, 0u);
  EXPECT_EQ(ReadFile(other, ino, "kept"), "named");
}

}  // namespace
}  // namespace stampfs
