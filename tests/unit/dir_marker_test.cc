// -o dir_markers on the fakes: mkdir writes blobfuse's marker blob, rmdir
// removes it (never a blob that is not a marker), a directory rename moves
// the markers of the whole tree (also when rolled forward after a failure),
// and fsck reports and writes missing markers.
#include "fs/namespace/dir_marker.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <memory>

#include "fs/admin/fsck.h"
#include "fs/namespace/inode_table.h"
#include "fs/namespace/namespace.h"
#include "storage/fakes.h"

namespace stampfs {
namespace {

constexpr const char* kContainer = "markercontainer";
constexpr const char* kTable = "markertable";

class DirMarkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    plan_ = std::make_shared<FaultPlan>();
    table_ = MakeFaultyTableStore(*raw_table_, plan_);
    blobs_ = MakeFaultyBlobStore(*raw_blobs_, plan_);
  }

  std::unique_ptr<Namespace> NewNamespace(bool markers) {
    NamespaceOptions o;
    o.container = kContainer;
    o.table = kTable;
    o.dir_markers = markers;
    auto ns = std::make_unique<Namespace>(*table_, *blobs_, nullptr, o);
    EXPECT_TRUE(ns->Init().ok());
    return ns;
  }

  bool IsMarker(const std::string& blob) {
    auto p = raw_blobs_->GetProperties(kContainer, blob);
    return p.ok() && IsDirMarkerBlob(*p);
  }
  bool Exists(const std::string& blob) { return raw_blobs_->GetProperties(kContainer, blob).ok(); }

  std::shared_ptr<FaultPlan> plan_;
  std::unique_ptr<TableStore> raw_table_ = MakeFakeTableStore();
  std::unique_ptr<BlobStore> raw_blobs_ = MakeFakeBlobStore();
  std::unique_ptr<TableStore> table_;
  std::unique_ptr<BlobStore> blobs_;
};

TEST_F(DirMarkerTest, MkdirWritesAMarkerWithTheDirectorysAttributesAndRmdirRemovesIt) {
  auto ns = NewNamespace(true);
  auto a = ns->Mkdir(kRootIno, "a", 0750, 12, 34);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(ns->Mkdir(a->ino, "b c", 0755, 0, 0).ok());
  ASSERT_TRUE(IsMarker("a"));
  ASSERT_TRUE(IsMarker("a/b c"));
  auto props = raw_blobs_->GetProperties(kContainer, "a");
  EXPECT_EQ(props->metadata["hdi_isfolder"], "true");
  EXPECT_EQ(props->metadata["mode"], std::to_string(S_IFDIR | 0750));
  EXPECT_EQ(props->metadata["uid"], "12");
  EXPECT_EQ(props->metadata["gid"], "34");
  ASSERT_TRUE(ns->Rmdir(a->ino, "b c").ok());
  EXPECT_FALSE(Exists("a/b c"));
  EXPECT_TRUE(IsMarker("a"));
}

TEST_F(DirMarkerTest, WithoutTheOptionNoMarkerIsWritten) {
  auto ns = NewNamespace(false);
  ASSERT_TRUE(ns->Mkdir(kRootIno, "a", 0755, 0, 0).ok());
  EXPECT_FALSE(Exists("a"));
  EXPECT_EQ(plan_->calls("Put"), 0);
  EXPECT_EQ(plan_->calls("GetProperties"), 0);
}

TEST_F(DirMarkerTest, RmdirNeverDeletesABlobThatIsNotAMarker) {
  ASSERT_TRUE(raw_blobs_->CreateContainer(kContainer).ok() ||
              raw_blobs_->GetContainerProperties(kContainer).ok());
  auto ns = NewNamespace(true);
  ASSERT_TRUE(raw_blobs_->PutString(kContainer, "d", "data", {}, Condition::None()).ok());
  ASSERT_TRUE(ns->Mkdir(kRootIno, "d", 0755, 0, 0).ok()) << "the table is the truth";
  ASSERT_TRUE(ns->Rmdir(kRootIno, "d").ok());
  EXPECT_EQ(*raw_blobs_->ReadToString(kContainer, "d"), "data");
}

TEST_F(DirMarkerTest, ADirectoryRenameMovesTheMarkersOfTheWholeTree) {
  auto ns = NewNamespace(true);
  auto a = ns->Mkdir(kRootIno, "a", 0755, 0, 0);
  auto b = ns->Mkdir(a->ino, "b", 0755, 0, 0);
  ASSERT_TRUE(ns->Mkdir(b->ino, "c", 0755, 0, 0).ok());
  auto to = ns->Mkdir(kRootIno, "to", 0755, 0, 0);
  ASSERT_TRUE(ns->Rename(kRootIno, "a", to->ino, "z", 0).ok());
  for (const char* gone : {"a", "a/b", "a/b/c"}) EXPECT_FALSE(Exists(gone)) << gone;
  for (const char* moved : {"to/z", "to/z/b", "to/z/b/c"}) EXPECT_TRUE(IsMarker(moved)) << moved;
}

TEST_F(DirMarkerTest, ARenameInterruptedWhileMovingMarkersIsFinishedByTheRollForward) {
  auto ns = NewNamespace(true);
  auto a = ns->Mkdir(kRootIno, "a", 0755, 0, 0);
  ASSERT_TRUE(ns->Mkdir(a->ino, "b", 0755, 0, 0).ok());
  plan_->FailAlways(ServerBusy(), "Copy");  // the markers stay; the rename stops
  EXPECT_FALSE(ns->Rename(kRootIno, "a", kRootIno, "z", 0).ok());
  EXPECT_TRUE(IsMarker("a/b")) << "the subdirectory's marker was not moved";
  plan_->Clear();
  auto other = NewNamespace(true);  // its start may roll it forward already
  auto done = other->RollForwardIntents(true);
  ASSERT_TRUE(done.ok());
  for (const IntentOutcome& o : *done) EXPECT_TRUE(o.status.ok()) << o.status.ToString();
  EXPECT_TRUE(raw_table_->QueryPartition(kTable, kIntentsPartition)->empty());
  for (const char* gone : {"a", "a/b"}) EXPECT_FALSE(Exists(gone)) << gone;
  for (const char* moved : {"z", "z/b"}) EXPECT_TRUE(IsMarker(moved)) << moved;
  EXPECT_TRUE(other->Lookup(kRootIno, "z").ok());
}

TEST_F(DirMarkerTest, FsckReportsAndWritesMissingMarkersOnlyWithTheOption) {
  auto plain = NewNamespace(false);
  ASSERT_TRUE(plain->Mkdir(kRootIno, "a", 0755, 0, 0).ok());
  auto with = NewNamespace(true);
  ASSERT_TRUE(with->Mkdir(kRootIno, "m", 0755, 0, 0).ok());
  auto run = [&](bool markers, bool repair) {
    FsckOptions o;
    o.container = kContainer;
    o.table = kTable;
    o.dir_markers = markers;
    o.repair = repair;
    auto r = Fsck(*raw_table_, *raw_blobs_, o).Run();
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : FsckReport{};
  };
  EXPECT_TRUE(run(false, false).clean()) << "a marker counts as named by its directory";
  FsckReport found = run(true, false);
  ASSERT_EQ(found.findings.size(), 1u);
  EXPECT_EQ(found.findings[0].kind, FsckKind::kMissingMarker);
  EXPECT_EQ(found.findings[0].where, "/a");
  EXPECT_TRUE(run(true, true).clean());
  EXPECT_TRUE(IsMarker("a"));
  EXPECT_TRUE(run(true, false).findings.empty());
}

}  // namespace
}  // namespace stampfs
