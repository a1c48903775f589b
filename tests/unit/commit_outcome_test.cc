// Ambiguous commit outcomes on the fakes: a 404 the table gives for an entry
// that exists. The rule under test: data is never deleted, and a
// commit is never called another writer's, on an inference; what is stored
// is read first.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/file_data_fixture.h"

namespace stampfs {
namespace {

Status InjectedNotFound() {
  return Status(Code::kNotFound, "injected: the specified resource does not exist", 404,
                "ResourceNotFound");
}

// Names in the root other than `name` (conflict copies, say).
std::vector<std::string> OthersIn(Mount& m, const std::string& name) {
  std::vector<std::string> out;
  auto listing = m.ns->ReadDir(kRootIno);
  EXPECT_TRUE(listing.ok()) << listing.status().ToString();
  if (!listing.ok()) return out;
  for (const DirEntry& e : *listing) {
    if (e.name != name) out.push_back(e.name);
  }
  return out;
}

using CommitOutcomeTest = DeferredCreateTest;

// Azurite's $batch answered 404 to the merge of an existing entry: the mount
// took it for a removal by another mount and deleted the blob it had just
// written (close returned 0, the data was gone).
TEST_F(CommitOutcomeTest, A404OnTheEntryMergeOfAnEntryThatExistsKeepsTheData) {
  Mount m = NewMount("a");
  Commit(m, "kept", "first version");
  uint64_t ino = OpenExisting(m, "kept");
  Write(m, ino, "second version", 0);
  plan_->FailNth(1, InjectedNotFound(), "ExecuteBatch");
  Status s = m.data->Flush(ino);
  EXPECT_TRUE(s.Is(Code::kInternal)) << "EIO, not success: " << s.ToString();
  EXPECT_EQ(Blob("kept"), "second version") << "the blob written is not deleted";
  EXPECT_EQ(m.blocks->Journaled().size(), 1u) << "the changes stay journaled";
  ASSERT_TRUE(m.data->Release(ino).ok()) << "the next commit finishes it";
  EXPECT_EQ(Blob("kept"), "second version");
  auto st = m.ns->GetFile(ino, true);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->attr.size, 14u);
  EXPECT_EQ(st->blob_etag, raw_blobs_->GetProperties(kContainer, "kept")->etag);
  EXPECT_TRUE(m.blocks->Journaled().empty());
}

// The same on a new file's first commit (the entry insert's "." merge): the
// directory is there, so the name was not lost: no blob withdrawn, no copy.
TEST_F(CommitOutcomeTest, A404OnANewFilesInsertInADirectoryThatExistsMakesNoCopy) {
  Mount m = NewMount("a");
  uint64_t ino = CreateDeferred(m, kRootIno, "new");
  Write(m, ino, "new data", 0);
  plan_->FailNth(1, InjectedNotFound(), "ExecuteBatch");
  EXPECT_TRUE(m.data->Flush(ino).Is(Code::kInternal));
  EXPECT_EQ(Blob("new"), "new data");
  EXPECT_TRUE(OthersIn(m, "new").empty()) << "no conflict copy";
  ASSERT_TRUE(m.data->Release(ino).ok());
  EXPECT_TRUE(InTable("/", "new"));
  EXPECT_EQ(Blob("new"), "new data");
  EXPECT_TRUE(OthersIn(m, "new").empty());
  EXPECT_TRUE(m.blocks->Journaled().empty());
}

// An unlink answered 404 for an entry that exists is an error (EIO), not
// ENOENT: the file is still there.
TEST_F(CommitOutcomeTest, A404OnTheDeleteOfAnEntryThatExistsIsAServiceError) {
  Mount m = NewMount("a");
  Commit(m, "stays", "x");
  plan_->FailNth(1, InjectedNotFound(), "ExecuteBatch");
  auto gone = m.ns->Unlink(kRootIno, "stays");
  EXPECT_TRUE(gone.status().Is(Code::kInternal)) << gone.status().ToString();
  EXPECT_TRUE(InTable("/", "stays"));
}

}  // namespace
}  // namespace stampfs
