// Ambiguous commit outcomes on the fakes: a 404 the table gives for an entry
// that exists, a reply lost after the blob was written, a crash inside a new
// file's first commit. The rule under test: data is never deleted, and a
// commit is never called another writer's, on an inference; what is stored
// is read first.
#include <gtest/gtest.h>

#include <string>
#include <utility>
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

class CommitOutcomeTest : public DeferredCreateTest {
 protected:
  // The next `n` transactions answer 404 whatever their rows (as Azurite's
  // $batch did, every time, for RowKeys starting with ',').
  void FailBatchesWithNotFound(int n) {
    for (int i = 1; i <= n; ++i) plan_->FailNth(i, InjectedNotFound(), "ExecuteBatch");
  }
  // "old" committed ("version one") then open with "version two" written;
  // "new" created without O_EXCL holding "new data": both uncommitted.
  std::pair<uint64_t, uint64_t> TwoFilesWithChanges(Mount& m) {
    Commit(m, "old", "version one");
    uint64_t existing = OpenExisting(m, "old");
    Write(m, existing, "version two", 0);
    uint64_t fresh = CreateDeferred(m, kRootIno, "new");
    Write(m, fresh, "new data", 0);
    return {existing, fresh};
  }
};

// Azurite's $batch answered 404 to the merge of an existing entry: the mount
// took it for a removal by another mount and deleted the blob it had just
// written (close returned 0, the data was gone).
TEST_F(CommitOutcomeTest, A404OnTheEntryMergeOfAnEntryThatExistsKeepsTheData) {
  Mount m = NewMount("a");
  Commit(m, "kept", "first version");
  uint64_t ino = OpenExisting(m, "kept");
  Write(m, ino, "second version", 0);
  FailBatchesWithNotFound(2);  // the transaction and its one retry
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
  FailBatchesWithNotFound(2);  // the transaction and its one retry
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
  FailBatchesWithNotFound(2);  // the transaction and its one retry
  auto gone = m.ns->Unlink(kRootIno, "stays");
  EXPECT_TRUE(gone.status().Is(Code::kInternal)) << gone.status().ToString();
  EXPECT_TRUE(InTable("/", "stays"));
}

// A 404 whose row a point read then finds was true a moment earlier when
// another mount renamed the directory away and back (e2e coherence: a create
// in a directory renamed back and forth got EIO): the transaction is tried
// once more, and succeeds.
TEST_F(CommitOutcomeTest, OneTransientUnexpected404IsRetriedOnce) {
  Mount m = NewMount("a");
  uint64_t ino = CreateDeferred(m, kRootIno, "new");
  Write(m, ino, "new data", 0);
  FailBatchesWithNotFound(1);
  EXPECT_TRUE(m.data->Flush(ino).ok());
  EXPECT_TRUE(InTable("/", "new"));
  EXPECT_EQ(Blob("new"), "new data");
  EXPECT_TRUE(OthersIn(m, "new").empty());
  EXPECT_TRUE(m.data->Release(ino).ok());
}

// ---- a blob write whose answer was lost (issue 12, defect 8)

// The entry at `name` names the blob's current version, of `size` bytes.
void ExpectEntryNamesBlob(BlobStore& blobs, Mount& m, const std::string& name, uint64_t size) {
  auto attr = m.ns->Lookup(kRootIno, name);
  ASSERT_TRUE(attr.ok()) << name << ": " << attr.status().ToString();
  auto st = m.ns->GetFile(attr->ino, true);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->attr.size, size) << name;
  auto props = blobs.GetProperties(kContainer, name);
  ASSERT_TRUE(props.ok());
  EXPECT_EQ(st->blob_etag, props->etag) << name << ": entry and blob agree (fsck: no etag-mismatch)";
}

// The Put Blob landed but its answer was lost (a timeout; the HTTP layer's
// resend then gets 409/412 from our own write): the blob carries this
// commit's id, so the commit is finished, not a conflict.
TEST_F(CommitOutcomeTest, ABlobWriteWhoseAnswerWasLostIsFinishedNotCopied) {
  Mount m = NewMount("a");
  auto [existing, fresh] = TwoFilesWithChanges(m);
  plan_->FailNth(1, RequestTimeout(), "Put", /*after_call=*/true);
  plan_->FailNth(2, PreconditionFailed(), "Put", /*after_call=*/true);  // a resend's answer
  EXPECT_TRUE(m.data->Release(existing).ok());
  EXPECT_TRUE(m.data->Release(fresh).ok());
  EXPECT_EQ(Blob("old"), "version two");
  EXPECT_EQ(Blob("new"), "new data");
  ExpectEntryNamesBlob(*raw_blobs_, m, "old", 11);
  ExpectEntryNamesBlob(*raw_blobs_, m, "new", 8);
  auto others = OthersIn(m, "old");
  EXPECT_EQ(others, std::vector<std::string>{"new"}) << "no conflict copy";
  EXPECT_TRUE(m.blocks->Journaled().empty());
}

// The service froze: the Put timed out and so did the read of the blob, then
// the Put was applied. The next commit (here at unmount) gets 409/412 from
// this mount's own data: it commits on top of it, with no conflict copy and
// no blob left without an entry.
TEST_F(CommitOutcomeTest, ABlobWriteThatLandedAfterItTimedOutIsNotAnotherWriters) {
  Mount m = NewMount("a");
  auto [existing, fresh] = TwoFilesWithChanges(m);
  plan_->FailNth(1, RequestTimeout(), "Put", /*after_call=*/true);
  plan_->FailNth(2, RequestTimeout(), "Put", /*after_call=*/true);
  plan_->FailAlways(RequestTimeout(), "GetProperties");
  EXPECT_FALSE(m.data->Release(existing).ok());
  EXPECT_FALSE(m.data->Release(fresh).ok());
  plan_->Clear();
  Write(m, existing, "version three", 0);  // written after the lost commit
  EXPECT_EQ(m.data->CommitAll(std::chrono::seconds(30)), 0u);
  EXPECT_EQ(Blob("old"), "version three");
  EXPECT_EQ(Blob("new"), "new data");
  ExpectEntryNamesBlob(*raw_blobs_, m, "old", 13);
  ExpectEntryNamesBlob(*raw_blobs_, m, "new", 8);
  EXPECT_EQ(OthersIn(m, "old"), std::vector<std::string>{"new"}) << "no conflict copy";
  EXPECT_TRUE(m.blocks->Journaled().empty());
}

// ---- a crash inside a new file's first commit (issue 12, defect 7)

// kill -9 after the blob write of a new file's first commit, before its
// entry named it: the restarted mount's replay finds its own commit in the
// blob (the id journaled before the write) and finishes it. Before, it took
// it for another writer's: the name showed 0 bytes and the data went to
// NAME.conflict-... (fsck: etag-mismatch, entry ETag (none)).
TEST_F(CommitOutcomeTest, AReplayFinishesItsOwnHalfDoneFirstCommit) {
  const std::string small = Pattern(1000, 41);
  const std::string big = Pattern(3 * kBlock + 5, 42);  // a block list
  const std::string deferred = Pattern(500, 43);
  {
    Mount m = NewMount("crash");
    uint64_t f = Create(m, "excl");  // O_EXCL: the entry is in the table, no blob yet
    Write(m, f, small, 0);
    uint64_t g = Create(m, "big");
    Write(m, g, big, 0);
    uint64_t h = CreateDeferred(m, kRootIno, "deferred");
    Write(m, h, deferred, 0);
    // Each blob write lands; the daemon dies before it learns so.
    plan_->FailNth(1, RequestTimeout(), "Put", /*after_call=*/true);
    plan_->FailNth(2, RequestTimeout(), "Put", /*after_call=*/true);
    plan_->FailNth(1, RequestTimeout(), "PutBlockList", /*after_call=*/true);
    plan_->FailAlways(RequestTimeout(), "GetProperties");
    EXPECT_FALSE(m.data->Flush(f).ok());
    EXPECT_FALSE(m.data->Flush(g).ok());
    EXPECT_FALSE(m.data->Flush(h).ok());
    // kill -9: no release; the objects just go away.
  }
  plan_->Clear();
  EXPECT_EQ(Blob("excl"), small) << "the blob was written before the crash";
  Mount after = NewMount("crash");
  ASSERT_EQ(after.blocks->Journaled().size(), 3u);
  ASSERT_TRUE(after.data->ReplayJournal().ok());
  EXPECT_EQ(Blob("excl"), small);
  EXPECT_EQ(Blob("big"), big);
  EXPECT_EQ(Blob("deferred"), deferred);
  ExpectEntryNamesBlob(*raw_blobs_, after, "excl", small.size());
  ExpectEntryNamesBlob(*raw_blobs_, after, "big", big.size());
  ExpectEntryNamesBlob(*raw_blobs_, after, "deferred", deferred.size());
  auto listing = after.ns->ReadDir(kRootIno);
  ASSERT_TRUE(listing.ok());
  EXPECT_EQ(listing->size(), 3u) << "no conflict copy";
  EXPECT_TRUE(after.blocks->Journaled().empty());
}

}  // namespace
}  // namespace stampfs
