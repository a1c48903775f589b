// What other tools read from a file's blob: the Content-MD5 of block-list
// commits (set when every byte is local, dropped when it would need a
// download), and chmod/chown/utimens of a closed file reaching the blob's
// metadata, with the entry following the blob's new ETag.
#include <sys/stat.h>

#include "fs/namespace/blob_times.h"
#include "storage/content_md5.h"
#include "tests/unit/file_data_fixture.h"

namespace stampfs {
namespace {

std::string Md5Of(BlobStore& blobs, const std::string& blob) {
  auto p = blobs.GetProperties(kContainer, blob);
  EXPECT_TRUE(p.ok());
  return p.ok() ? p->content_md5 : "?";
}

TEST_F(FileDataTest, ABlockListCommitOfAFileWrittenThroughCarriesItsContentMd5) {
  Mount m = NewMount("a");
  const std::string big = Pattern(10 * kBlock + 123, 21);
  Commit(m, "big", big);
  EXPECT_GE(plan_->calls("PutBlockList"), 1);
  EXPECT_EQ(Md5Of(*raw_blobs_, "big"), ContentMd5::Of(big));
  const std::string small = Pattern(kBlock, 22);
  Commit(m, "small", small);  // one Put Blob: the service computes it
  EXPECT_EQ(Md5Of(*raw_blobs_, "small"), ContentMd5::Of(small));
}

TEST_F(FileDataTest, ARewriteWithEveryBlockCachedKeepsAnExactContentMd5) {
  Mount m = NewMount("a");
  std::string content = Pattern(10 * kBlock, 23);
  Commit(m, "big", content);
  uint64_t ino = OpenExisting(m, "big");
  Write(m, ino, "patch", 4 * kBlock + 7);
  Write(m, ino, "tail", content.size());  // grows it too
  ASSERT_TRUE(m.data->Release(ino).ok());
  content.replace(4 * kBlock + 7, 5, "patch");
  content += "tail";
  ASSERT_EQ(Blob("big"), content);
  EXPECT_EQ(Md5Of(*raw_blobs_, "big"), ContentMd5::Of(content));
}

TEST_F(FileDataTest, ARandomRewriteOfALargeFileNotCachedDropsTheContentMd5) {
  Mount m = NewMount("a");
  std::string content = Pattern(10 * kBlock, 24);
  Commit(m, "big", content);
  Mount cold = NewMount("b");
  uint64_t ino = OpenExisting(cold, "big");
  Write(cold, ino, "patch", 2 * kBlock + 1);
  ASSERT_TRUE(cold.data->Release(ino).ok());
  content.replace(2 * kBlock + 1, 5, "patch");
  ASSERT_EQ(Blob("big"), content);
  EXPECT_EQ(Md5Of(*raw_blobs_, "big"), "") << "no stale MD5, and no download to recompute it";
  EXPECT_EQ(plan_->calls("Read"), 1) << "only the block rewritten was fetched";
}

class BlobAttrsTest : public FileDataTest {
 protected:
  uint64_t Committed(Mount& m, const std::string& name, const std::string& content) {
    Commit(m, name, content);
    return m.ns->Lookup(kRootIno, name)->ino;
  }
  BlobMetadata Meta(const std::string& blob) {
    return raw_blobs_->GetProperties(kContainer, blob)->metadata;
  }
  std::string Etag(const std::string& blob) {
    return raw_blobs_->GetProperties(kContainer, blob)->etag;
  }
  static SetAttrRequest Times(int64_t mtime_ns) {
    SetAttrRequest r;
    r.mtime_ns = mtime_ns;
    return r;
  }
  int BlobReads() { return plan_->calls("Read") + plan_->calls("ReadStream"); }
  // Opens `name` again and reads it all, with no request to the blob.
  void ExpectReadFromTheCache(Mount& m, const std::string& name, const std::string& data) {
    const int reads = BlobReads();
    uint64_t again = OpenExisting(m, name, false);
    EXPECT_EQ(ReadAll(m, again, data.size()), data);
    EXPECT_EQ(BlobReads(), reads) << "the cache follows the blob's new ETag";
    ASSERT_TRUE(m.data->Release(again).ok());
  }
  static constexpr int64_t kWhen = 1234567890123456789;
};

TEST_F(BlobAttrsTest, UtimensAndChmodOfAClosedFileReachTheBlobAndTheEntryFollowsItsEtag) {
  Mount m = NewMount("a");
  const std::string data = Pattern(3 * kBlock, 25);
  uint64_t ino = Committed(m, "f", data);
  const std::string md5 = Md5Of(*raw_blobs_, "f");
  auto attr = m.data->SetAttr(ino, Times(kWhen));
  ASSERT_TRUE(attr.ok()) << attr.status().ToString();
  EXPECT_EQ(attr->mtime_ns, kWhen);
  EXPECT_EQ(Meta("f")["mtime"], FormatBlobMtime(kWhen));
  SetAttrRequest chmod;
  chmod.mode = 0600;
  chmod.uid = 7;
  ASSERT_TRUE(m.data->SetAttr(ino, chmod).ok());
  BlobMetadata meta = Meta("f");
  EXPECT_EQ(meta["mode"], std::to_string(S_IFREG | 0600));
  EXPECT_EQ(meta["uid"], "7");
  EXPECT_EQ(meta["mtime"], FormatBlobMtime(kWhen));
  EXPECT_EQ(meta["stampfs"], "1") << "the other keys are kept";
  EXPECT_EQ(Md5Of(*raw_blobs_, "f"), md5) << "Set Blob Metadata keeps the content's properties";
  EXPECT_EQ(m.ns->GetFile(ino, true)->blob_etag, Etag("f"));

  // Nothing to adopt, no conflict: a writer here and on another mount go on.
  Mount b = NewMount("b");
  uint64_t ib = OpenExisting(b, "f");
  EXPECT_EQ(ReadAll(b, ib, data.size()), data);
  Write(b, ib, "x", 0);
  ASSERT_TRUE(b.data->Release(ib).ok());
  uint64_t ia = OpenExisting(m, "f");
  Write(m, ia, "y", 1);
  ASSERT_TRUE(m.data->Release(ia).ok());
  EXPECT_EQ(Blob("f"), "xy" + data.substr(2));
  EXPECT_EQ(raw_blobs_->ListBlobs(kContainer, {})->blobs.size(), 1u) << "no conflict copy";
}

TEST_F(BlobAttrsTest, AMetadataChangeWhoseAnswerWasLostIsRecognisedByReadingTheBlob) {
  Mount m = NewMount("a");
  uint64_t ino = Committed(m, "f", "small");
  plan_->FailNth(1, RequestTimeout(), "SetMetadata", /*after_call=*/true);
  ASSERT_TRUE(m.data->SetAttr(ino, Times(kWhen)).ok());
  EXPECT_EQ(Meta("f")["mtime"], FormatBlobMtime(kWhen));
  EXPECT_EQ(m.ns->GetFile(ino, true)->blob_etag, Etag("f")) << "the entry names the new version";
}

TEST_F(BlobAttrsTest, ACrashBetweenTheBlobAndTheEntryIsAdoptedWithTheNewTime) {
  Mount m = NewMount("a");
  uint64_t ino = Committed(m, "f", "small");
  plan_->FailAlways(ServerBusy(), "ExecuteBatch");  // the entry merge never lands
  plan_->FailAlways(ServerBusy(), "Update");
  EXPECT_FALSE(m.data->SetAttr(ino, Times(kWhen)).ok());
  plan_->Clear();
  EXPECT_NE(m.ns->GetFile(ino, true)->blob_etag, Etag("f"));
  Mount b = NewMount("b");
  uint64_t ib = OpenExisting(b, "f");  // an open for writing validates the version
  ASSERT_TRUE(b.data->Release(ib).ok());
  auto healed = b.ns->GetFile(ib, true);
  EXPECT_EQ(healed->blob_etag, Etag("f"));
  EXPECT_EQ(healed->attr.mtime_ns, kWhen);
}

TEST_F(BlobAttrsTest, AChangeToAnOpenFileWaitsForItsCommit) {
  Mount m = NewMount("a");
  uint64_t ino = Committed(m, "f", "small");
  uint64_t open = OpenExisting(m, "f");
  ASSERT_EQ(open, ino);
  Write(m, ino, "S", 0);  // a write sets mtime: utimens after it, as cp -p and tar do
  ASSERT_TRUE(m.data->SetAttr(ino, Times(kWhen)).ok());
  EXPECT_EQ(plan_->calls("SetMetadata"), 0);
  ASSERT_TRUE(m.data->Release(ino).ok());
  EXPECT_EQ(Meta("f")["mtime"], FormatBlobMtime(kWhen));
  EXPECT_EQ(Blob("f"), "Small");
}

// The kernel sends a release after close(2) returned: `cp a b; touch -d T b`
// often changes b while it is still open here, with nothing left to commit.
TEST_F(BlobAttrsTest, AChangeWhileOpenWithNothingToCommitReachesTheBlobAtTheLastClose) {
  Mount m = NewMount("a");
  const std::string data = Pattern(3 * kBlock, 26);
  uint64_t ino = Committed(m, "f", data);
  ASSERT_EQ(OpenExisting(m, "f", false), ino);
  SetAttrRequest r = Times(kWhen);
  r.mode = 0640;
  ASSERT_TRUE(m.data->SetAttr(ino, r).ok());
  EXPECT_EQ(plan_->calls("SetMetadata"), 0) << "not while open";
  ASSERT_TRUE(m.data->Release(ino).ok());
  EXPECT_EQ(Meta("f")["mtime"], FormatBlobMtime(kWhen));
  EXPECT_EQ(Meta("f")["mode"], std::to_string(S_IFREG | 0640));
  EXPECT_EQ(m.ns->GetFile(ino, true)->blob_etag, Etag("f"));
  ExpectReadFromTheCache(m, "f", data);
}

// The cached blocks of a closed file follow its blob's new ETag: a chmod or
// touch is not a reason to download the file again (they were dropped: the
// cache was asked for the old version with no block size, which made a new
// empty file and dropped the real one).
TEST_F(BlobAttrsTest, AChangeToAClosedFileKeepsItsCachedData) {
  Mount m = NewMount("a");
  const std::string data = Pattern(3 * kBlock + 7, 27);
  uint64_t ino = Committed(m, "f", data);
  SetAttrRequest r = Times(kWhen);
  r.mode = 0640;
  ASSERT_TRUE(m.data->SetAttr(ino, r).ok());
  EXPECT_EQ(m.ns->GetFile(ino, true)->blob_etag, Etag("f"));
  ExpectReadFromTheCache(m, "f", data);
}

TEST_F(BlobAttrsTest, ABlobAnotherWriterChangedIsLeftToItsOwnCommit) {
  Mount m = NewMount("a");
  uint64_t ino = Committed(m, "f", "small");
  ASSERT_TRUE(raw_blobs_->PutString(kContainer, "f", "other", {}, Condition::None()).ok());
  const std::string theirs = Etag("f");
  ASSERT_TRUE(m.data->SetAttr(ino, Times(kWhen)).ok());
  EXPECT_EQ(Etag("f"), theirs);
  EXPECT_EQ(plan_->calls("SetMetadata"), 0);
}

}  // namespace
}  // namespace stampfs
