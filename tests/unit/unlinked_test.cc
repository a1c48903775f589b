// Files unlinked (or renamed over) while open on this mount, a new file of
// the same name, and opens racing a rename over their target (issue 14).
#include <atomic>
#include <cerrno>
#include <chrono>
#include <optional>
#include <thread>

#include "file_data_fixture.h"
#include "fs/fuse/errno_map.h"
#include "fs/namespace/hard_links.h"

namespace stampfs {
namespace {

class UnlinkedTest : public DeferredCreateTest {
 protected:
  bool BlobGone(const std::string& name) {
    return raw_blobs_->GetProperties(kContainer, name).status().Is(Code::kNotFound);
  }
  // What fstat shows through a descriptor (fs/fuse/fuse_ops.cc EntryFor).
  Attr Fstat(Mount& m, uint64_t ino) {
    auto attr = m.ns->GetAttr(ino);
    EXPECT_TRUE(attr.ok()) << attr.status().ToString();
    if (!attr.ok()) return {};
    Attr shown = *attr;
    m.data->OverrideAttr(ino, &shown);
    return shown;
  }
  Status Unlink(Mount& m, const std::string& name) {
    auto gone = m.ns->Unlink(kRootIno, name);
    if (!gone.ok()) return gone.status();
    m.data->Unlinked(*gone);  // as fs/fuse/fuse_ops.cc OnUnlink
    return Status::Ok();
  }
  // LinkedFile opened through "g" by `m`, nothing read, then "g" and "f"
  // unlinked: the blob moved from "f" to "h", the last name. Returns the inode.
  uint64_t OpenColdWithOneNameLeft(Mount& m, const std::string& content) {
    const uint64_t ino = LinkedFile(content);
    EXPECT_EQ(OpenExisting(m, "g", false), ino);
    EXPECT_TRUE(Unlink(m, "g").ok());
    EXPECT_TRUE(Unlink(m, "f").ok());
    return ino;
  }
  // An atomic save over `name` (open here as `ino`): "tmp" holding `data`
  // renamed over it, as fs/fuse/fuse_ops.cc OnRename runs it.
  void RenameOver(Mount& m, const std::string& name, uint64_t ino, const std::string& data) {
    Commit(m, "tmp", data);
    m.data->CommitDue();
    m.data->BeforeRemoval(ino);
    RenameTmpOver(m, name, ino);
  }
  // The rest of OnRename once its target `ino` was prepared: "tmp" renamed
  // over `name`, the replaced file removed, the rename over (RenameDone).
  void RenameTmpOver(Mount& m, const std::string& name, uint64_t ino) {
    auto orphans = m.ns->Rename(kRootIno, "tmp", kRootIno, name, 0);
    ASSERT_TRUE(orphans.ok()) << orphans.status().ToString();
    ASSERT_TRUE(m.ns->RemovedHere(ino));
    m.data->Unlinked(ino, "", "");
    for (const std::string& blob : *orphans) m.data->DeleteBlobWhenUnused(0, blob);
    m.data->RenameDone(ino);
  }
  // Through the descriptor of a file with no name left (`expect`: its
  // data): fstat (st_nlink 0), read, write, ftruncate, fchmod, fsync, read,
  // close.
  void UseWithNoNameLeft(Mount& m, uint64_t ino, std::string expect) {
    Attr st = Fstat(m, ino);
    EXPECT_EQ(ToStat(st).st_nlink, 0u);
    EXPECT_EQ(st.size, expect.size());
    EXPECT_EQ(ReadAll(m, ino, expect.size()), expect);
    const std::string more = "written with no name left";
    Write(m, ino, more, 10);
    expect.replace(10, more.size(), more);
    EXPECT_EQ(ReadAll(m, ino, expect.size()), expect);
    ASSERT_TRUE(m.data->Truncate(ino, 3 * kBlock).ok());
    expect.resize(3 * kBlock);
    EXPECT_EQ(Fstat(m, ino).size, expect.size());
    EXPECT_EQ(ToStat(Fstat(m, ino)).st_nlink, 0u);
    SetAttrRequest chmod;
    chmod.mode = 0600;
    auto changed = m.data->SetAttr(ino, chmod);
    ASSERT_TRUE(changed.ok()) << changed.status().ToString();
    EXPECT_EQ(Fstat(m, ino).mode & 07777, 0600u);
    EXPECT_TRUE(m.data->Sync(ino).ok());
    EXPECT_EQ(ReadAll(m, ino, expect.size()), expect);
    EXPECT_TRUE(m.data->Flush(ino).ok());
    EXPECT_TRUE(m.data->Release(ino).ok());
  }
  // The open/unlink/read/write/fstat/ftruncate/fsync/close sequence of a
  // build tool's temporary file, on a cold cache (nothing read yet).
  void UnlinkedOpenFileSequence() {
    const std::string content = Pattern(5 * kBlock + 123, 7);  // a block blob
    {
      Mount writer = NewMount("writer");
      Commit(writer, "f", content);
      writer.data->CommitDue();
    }
    Mount m = NewMount("reader");
    uint64_t ino = OpenExisting(m, "f", false);
    ASSERT_TRUE(m.data->Open(ino, OpenFlags{false, false, true}).ok());  // a writer too
    ASSERT_TRUE(Unlink(m, "f").ok());
    EXPECT_TRUE(BlobGone("f")) << "its data lives in the cache alone now";
    EXPECT_TRUE(m.ns->Lookup(kRootIno, "f").status().Is(Code::kNotFound));
    UseWithNoNameLeft(m, ino, content);
    EXPECT_TRUE(m.data->Release(ino).ok());
    m.data->CommitDue();
    EXPECT_TRUE(BlobGone("f")) << "nothing written after the unlink was committed";
    EXPECT_FALSE(InTable("/", "f"));
    EXPECT_TRUE(m.blocks->Journaled().empty());
  }
  // SQLite's -wal: unlinked while another connection has it open, then
  // created again under the same name.
  void UnlinkThenCreateTheSameName(bool exclusive) {
    Mount m = NewMount("m");
    Commit(m, "db-wal", "old frames");
    m.data->CommitDue();
    uint64_t old_ino = OpenExisting(m, "db-wal");
    ASSERT_TRUE(Unlink(m, "db-wal").ok());
    uint64_t new_ino = exclusive ? Create(m, "db-wal") : CreateDeferred(m, kRootIno, "db-wal");
    ASSERT_NE(new_ino, old_ino) << "a new inode";
    Write(m, new_ino, "new frames, longer", 0);
    EXPECT_TRUE(m.data->Release(new_ino).ok()) << "no conflict with the unlinked file";
    ASSERT_TRUE(m.data->SyncAll().ok());
    EXPECT_EQ(ReadAll(m, old_ino, 10), "old frames") << "the old descriptor sees the old data";
    EXPECT_TRUE(m.data->Release(old_ino).ok());
    m.data->CommitDue();
    EXPECT_EQ(Blob("db-wal"), "new frames, longer");
    EXPECT_EQ(ConflictCopies(m), 0);
    auto attr = m.ns->Lookup(kRootIno, "db-wal");
    ASSERT_TRUE(attr.ok());
    EXPECT_EQ(attr->ino, new_ino);
  }
  size_t InodeRecords() {
    auto rows = raw_table_->QueryPartition(kTable, kInodesPartition);
    return rows.ok() ? rows->size() : 999;
  }
  size_t Blobs() {
    auto listing = raw_blobs_->ListBlobs(kContainer, {});
    return listing.ok() ? listing->blobs.size() : 999;
  }
  // A committed file "f" (a block blob) with the names "g" and "h" linked to
  // it, written by another mount: `m` reads it cold. Returns the inode.
  uint64_t LinkedFile(const std::string& content) {
    Mount writer = NewMount("writer");
    Commit(writer, "f", content);
    writer.data->CommitDue();
    auto f = writer.ns->Lookup(kRootIno, "f");
    EXPECT_TRUE(f.ok());
    if (!f.ok()) return 0;
    EXPECT_TRUE(writer.ns->Link(f->ino, kRootIno, "g").ok());
    EXPECT_TRUE(writer.ns->Link(f->ino, kRootIno, "h").ok());
    return f->ino;
  }
  // A hard-linked file open through one name while every name goes, the
  // blob's name ("f") neither first nor last: it works through its
  // descriptor (st_nlink counting down to 0) until its last close, then the
  // record and the blob are gone, with no conflict copy.
  void LinkedOpenFileSequence(bool last_by_rename) {
    const std::string content = Pattern(5 * kBlock + 123, 7);
    const uint64_t ino = LinkedFile(content);
    Mount m = NewMount("reader");
    ASSERT_EQ(OpenExisting(m, "g"), ino);
    EXPECT_EQ(ToStat(Fstat(m, ino)).st_nlink, 3u);
    ASSERT_TRUE(Unlink(m, "g").ok()) << "the name it was opened by";
    EXPECT_EQ(ToStat(Fstat(m, ino)).st_nlink, 2u);
    Write(m, ino, "through g", 0);
    std::string expect = content;
    expect.replace(0, 9, "through g");
    ASSERT_TRUE(m.data->Sync(ino).ok());
    ASSERT_TRUE(Unlink(m, "f").ok()) << "the blob's name: it moves to h";
    EXPECT_EQ(ToStat(Fstat(m, ino)).st_nlink, 1u);
    EXPECT_EQ(ReadAll(m, ino, expect.size()), expect);
    Write(m, ino, "after f", 100);
    expect.replace(100, 7, "after f");
    ASSERT_TRUE(m.data->Sync(ino).ok());
    {
      Mount other = NewMount("other");
      EXPECT_EQ(ReadFile(other, kRootIno, "h"), expect) << "h keeps the data";
    }
    EXPECT_EQ(ConflictCopies(m), 0);
    if (last_by_rename) {
      RenameOver(m, "h", ino, "the new h");
    } else {
      ASSERT_TRUE(Unlink(m, "h").ok()) << "the last name";
      EXPECT_TRUE(m.ns->Lookup(kRootIno, "h").status().Is(Code::kNotFound));
    }
    EXPECT_EQ(InodeRecords(), 0u);
    UseWithNoNameLeft(m, ino, expect);
    m.data->CommitDue();
    EXPECT_EQ(InodeRecords(), 0u);
    EXPECT_EQ(Blobs(), last_by_rename ? 1u : 0u) << "the new h's alone";
    if (last_by_rename) {
      EXPECT_EQ(Blob("h"), "the new h");
    }
    EXPECT_EQ(ConflictCopies(m), 0);
    EXPECT_TRUE(m.blocks->Journaled().empty());
  }
};

TEST_F(UnlinkedTest, AnUnlinkedOpenFileWorksUntilItsLastCloseWithCommitClose) {
  UnlinkedOpenFileSequence();
}

TEST_F(UnlinkedTest, AnUnlinkedOpenFileWorksUntilItsLastCloseWithCommitAsync) {
  async_threads_ = 0;
  commit_delay_ms_ = 0;
  UnlinkedOpenFileSequence();
}

TEST_F(UnlinkedTest, UnlinkThenCreateOfTheSameNameWithCommitClose) {
  UnlinkThenCreateTheSameName(false);
}

TEST_F(UnlinkedTest, UnlinkThenExclusiveCreateOfTheSameNameWithCommitClose) {
  UnlinkThenCreateTheSameName(true);
}

TEST_F(UnlinkedTest, UnlinkThenCreateOfTheSameNameWithCommitAsync) {
  async_threads_ = 0;
  UnlinkThenCreateTheSameName(false);
}

TEST_F(UnlinkedTest, UnlinkThenExclusiveCreateOfTheSameNameWithCommitAsync) {
  async_threads_ = 0;
  UnlinkThenCreateTheSameName(true);
}

// SQLite's -wal in WAL mode (e2e unlinked): one process unlinks the file
// while another, holding it open, closes it. A close whose commit finds the
// entry gone after the unlink's transaction landed, before the unlink was
// recorded, took the name as removed by another mount: a conflict copy, and
// the close failed. It is this mount's unlink: the data goes with the name.
TEST_F(UnlinkedTest, ACloseRacingAnUnlinkOfItsFileDropsTheDataWithoutAConflict) {
  Mount m = NewMount("a");
  Commit(m, "f", Pattern(300, 1));
  uint64_t ino = OpenExisting(m, "f", true);
  Write(m, ino, "changed", 0);
  std::atomic<bool> closed{false};
  Status close_status;
  std::thread closer;
  plan_->SetAfterBatchHook([&] {
    plan_->SetAfterBatchHook(nullptr);  // the unlink's transaction, once
    now_ms_ += 60000;  // the close reads the entry from the table: gone
    closer = std::thread([&] {
      close_status = m.data->Flush(ino);
      closed = true;
    });
    // The close runs inside the window (it waits for the unlink with the fix).
    for (int i = 0; i < 50 && !closed; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  });
  ASSERT_TRUE(Unlink(m, "f").ok());
  closer.join();
  EXPECT_TRUE(close_status.ok()) << close_status.ToString();
  EXPECT_TRUE(m.data->Release(ino).ok());
  EXPECT_EQ(ConflictCopies(m), 0);
  EXPECT_TRUE(BlobGone("f"));
  EXPECT_FALSE(InTable("/", "f"));
}

// A rename over a file open here (an atomic save while a reader holds the
// old version): the reader keeps the old data, the new file owns the name
// and the blob, no conflict copy.
TEST_F(UnlinkedTest, ARenameOverAnOpenFileKeepsTheOldDataForItsReader) {
  const std::string old_data = Pattern(3 * kBlock + 5, 1);
  uint64_t old_ino = 0;
  Mount m = ColdReader(old_data, &old_ino);  // "f", nothing read yet
  RenameOver(m, "f", old_ino, "the new version");
  EXPECT_EQ(ReadAll(m, old_ino, old_data.size()), old_data);
  EXPECT_EQ(ToStat(Fstat(m, old_ino)).st_nlink, 0u);
  Write(m, old_ino, "never committed", 0);
  EXPECT_TRUE(m.data->Release(old_ino).ok());
  EXPECT_EQ(Blob("f"), "the new version");
  EXPECT_EQ(ConflictCopies(m), 0);
}

// The kernel resolved "target" to the old inode, then a rename replaced it
// before the open arrived: ESTALE, on which the kernel walks the path again
// and opens the new file (never ENOENT).
TEST_F(UnlinkedTest, AnOpenRacingARenameOverItsTargetIsStaleNotMissing) {
  Mount m = NewMount("m");
  Commit(m, "target", "old");
  Commit(m, "tmp", "new");
  auto old_attr = m.ns->Lookup(kRootIno, "target");
  ASSERT_TRUE(old_attr.ok());
  ASSERT_TRUE(m.ns->Rename(kRootIno, "tmp", kRootIno, "target", 0).ok());
  auto opened = m.data->Open(old_attr->ino, OpenFlags{false, false, false});
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(ErrnoFor(opened.status()), ESTALE) << opened.status().ToString();
  auto now = m.ns->Lookup(kRootIno, "target");
  ASSERT_TRUE(now.ok());
  EXPECT_NE(now->ino, old_attr->ino);
  EXPECT_TRUE(m.data->Open(now->ino, OpenFlags{false, false, false}).ok());
  EXPECT_EQ(ReadAll(m, now->ino, 3), "new");
  EXPECT_TRUE(m.data->Release(now->ino).ok());
}

// The kernel resolved "target" to the old inode, and the open arrived while
// a rename over it was under way (after BeforeRename made the open copies
// local, before the rename's copy overwrote the blob). Bound to the old
// version then, its data was neither local nor readable afterwards: reads
// failed with ENOENT ("inode N is not known"; 3 of ~60,000 opens in the
// e2e's rename-over race with 4 busy loops). Such an open makes its data
// local before the copy: the reader reads the old data (or, had the copy
// been made, the open is ESTALE).
TEST_F(UnlinkedTest, AnOpenArrivingDuringARenameOverItsTargetNeverLosesItsData) {
  const std::string old_data = Pattern(3 * kBlock + 5, 2);
  Mount writer = NewMount("writer");
  Commit(writer, "target", old_data);
  Mount m = NewMount("m");  // nothing of "target" cached here
  Commit(m, "tmp", "new");
  auto old_attr = m.ns->Lookup(kRootIno, "target");
  ASSERT_TRUE(old_attr.ok());
  const uint64_t ino = old_attr->ino;
  ASSERT_EQ(m.data->BeforeRename(kRootIno, "tmp", kRootIno, "target", false), ino);
  std::atomic<bool> returned{false};
  std::optional<Result<OpenResult>> opened;
  std::thread opener([&] {
    opened = m.data->Open(ino, OpenFlags{false, false, false});
    returned = true;
  });
  // The open goes first, as the kernel's did.
  for (int i = 0; i < 100 && !returned; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  RenameTmpOver(m, "target", ino);
  opener.join();
  ASSERT_TRUE(opened.has_value());
  if (opened->ok()) {
    EXPECT_TRUE(ReadAll(m, ino, old_data.size()) == old_data) << "the open lost its old data";
    EXPECT_TRUE(m.data->Release(ino).ok());
  } else {
    EXPECT_EQ(ErrnoFor(opened->status()), ESTALE) << opened->status().ToString();
  }
  EXPECT_EQ(Blob("target"), "new");
}

// A file closed with its changes not committed (the service failed) waits
// for a later commit, loaded. An open of it during a rename over it that
// cannot make its data local is taken back (ESTALE) without committing
// those changes: the kernel holds no handle, and what becomes of them is the
// rename's to decide (here: replaced). Taking it back as a close committed
// them, If-Match a version the rename was overwriting.
TEST_F(UnlinkedTest, AnOpenTakenBackDuringARenameCommitsNothingForIt) {
  Mount writer = NewMount("writer");
  Commit(writer, "target", Pattern(3 * kBlock, 6));
  Mount m = NewMount("m");  // nothing of "target" cached here
  const uint64_t ino = OpenExisting(m, "target");
  Write(m, ino, "kept", 0);
  plan_->FailAlways(ServerBusy(), "PutBlock");
  EXPECT_FALSE(m.data->Release(ino).ok()) << "kept, with its changes";
  plan_->Clear();
  Commit(m, "tmp", "new");
  ASSERT_EQ(m.data->BeforeRename(kRootIno, "tmp", kRootIno, "target", false), ino);
  // Its data cannot be made local (the first read fails; a commit's would not).
  std::atomic<int> reads{0};
  plan_->SetInjector([&](const std::string& op, int) {
    return op == "Read" && reads++ == 0 ? ServerBusy() : Status::Ok();
  });
  const int uploads = plan_->calls("PutBlock") + plan_->calls("PutBlockList") + plan_->calls("Put");
  auto opened = m.data->Open(ino, OpenFlags{false, false, false});
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(ErrnoFor(opened.status()), ESTALE) << opened.status().ToString();
  EXPECT_EQ(plan_->calls("PutBlock") + plan_->calls("PutBlockList") + plan_->calls("Put"), uploads)
      << "the open that was taken back committed the kept changes";
  plan_->SetInjector(nullptr);
  RenameTmpOver(m, "target", ino);
  EXPECT_EQ(Blob("target"), "new");
  EXPECT_EQ(raw_blobs_->ListBlobs(kContainer, {})->blobs.size(), 1u) << "no conflict copy";
}

// A removal of an open file (here, as OnRename calls it after a rename over
// it) waits while the last close commits; the close then unloads the file.
// There is nothing left to keep local: the removal made the closed file's
// cached blocks dirty (never evicted, counted as uncommitted: writers met
// backpressure for data no file holds) and, had they not been cached,
// fetched them into descriptor -1 (the e2e rename-over race's "cannot punch
// a hole in the block cache: Bad file descriptor").
TEST_F(UnlinkedTest, ARemovalWaitingForTheLastCloseLeavesTheClosedFileAlone) {
  Mount m = NewMount("m");
  const std::string data = Pattern(3 * kBlock + 3, 5);
  Commit(m, "f", data);
  const uint64_t ino = OpenExisting(m, "f");
  Write(m, ino, "X", 0);
  std::atomic<bool> uploading{false}, go{false};
  plan_->SetInjector([&](const std::string& op, int) {
    if (op == "PutBlock" || op == "PutBlockList") {
      uploading = true;
      while (!go) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return Status::Ok();
  });
  std::thread closer([&] { EXPECT_TRUE(m.data->Release(ino).ok()); });
  for (int i = 0; i < 5000 && !uploading; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(uploading);
  std::thread remover([&] { m.data->Unlinked(ino, "", ""); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // it waits for the commit
  go = true;
  closer.join();
  remover.join();
  plan_->SetInjector(nullptr);
  EXPECT_EQ(Blob("f"), "X" + data.substr(1));
  EXPECT_EQ(m.blocks->Stats().uncommitted, 0u) << "the closed file's blocks were pinned as dirty";
}

// fgetxattr/fsetxattr/flistxattr/fremovexattr reach FUSE by inode: on an
// unlinked open file they act on its kept entry, in memory, until the last
// close; the new file of the same name has its own attributes.
TEST_F(UnlinkedTest, XattrsOfAnUnlinkedOpenFileWorkThroughItsDescriptor) {
  Mount m = NewMount("m");
  Commit(m, "f", "data");
  m.data->CommitDue();
  uint64_t ino = OpenExisting(m, "f");
  ASSERT_TRUE(m.ns->SetXattr(ino, "user.before", "kept", 0).ok());
  ASSERT_TRUE(Unlink(m, "f").ok());
  auto before = m.ns->GetXattr(ino, "user.before");
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_EQ(*before, "kept");
  const int64_t ctime = Fstat(m, ino).ctime_ns;
  ASSERT_TRUE(m.ns->SetXattr(ino, "user.after", "local", 0).ok());
  EXPECT_GE(Fstat(m, ino).ctime_ns, ctime);
  EXPECT_TRUE(m.ns->SetXattr(ino, "user.after", "again", Namespace::kXattrCreate)
                  .Is(Code::kAlreadyExists));
  EXPECT_EQ(*m.ns->GetXattr(ino, "user.after"), "local");
  auto names = m.ns->ListXattr(ino);
  ASSERT_TRUE(names.ok()) << names.status().ToString();
  EXPECT_EQ(names->size(), 2u);
  ASSERT_TRUE(m.ns->RemoveXattr(ino, "user.before").ok());
  EXPECT_TRUE(m.ns->GetXattr(ino, "user.before").status().Is(Code::kNoAttribute));
  EXPECT_TRUE(m.ns->RemoveXattr(ino, "user.before").Is(Code::kNoAttribute));
  // A new file of the name: its own (no) attributes; the table is untouched.
  uint64_t fresh = Create(m, "f");
  auto fresh_names = m.ns->ListXattr(fresh);
  ASSERT_TRUE(fresh_names.ok());
  EXPECT_TRUE(fresh_names->empty());
  EXPECT_EQ(*m.ns->GetXattr(ino, "user.after"), "local");
  EXPECT_TRUE(m.data->Release(fresh).ok());
  EXPECT_TRUE(m.data->Release(ino).ok());
  m.ns->Forget(ino, 2);  // the create's and the open's lookups
  EXPECT_FALSE(m.ns->GetXattr(ino, "user.after").ok()) << "gone after the last close";
}

TEST_F(UnlinkedTest, AHardLinkedFileOpenWhileItsNamesGoWorksUntilItsLastCloseWithCommitClose) {
  LinkedOpenFileSequence(false);
}

TEST_F(UnlinkedTest, AHardLinkedFileOpenWhileItsNamesGoWorksUntilItsLastCloseWithCommitAsync) {
  async_threads_ = 0;
  commit_delay_ms_ = 0;
  LinkedOpenFileSequence(false);
}

TEST_F(UnlinkedTest, AHardLinkedFileOpenWhileItsLastNameIsRenamedOverWorksUntilItsLastClose) {
  LinkedOpenFileSequence(true);
}

// A hard-linked file open here, nothing read yet, while every name goes:
// the unlink of "f" moved its blob to "h", so the last unlink makes its data
// local from the copy (it read the deleted "f" and lost the data). With the
// service away then, the blob stays until the last close, and so does the
// record (dropped after the blob, never before).
class ColdLinkedTest : public UnlinkedTest, public ::testing::WithParamInterface<bool> {};

TEST_P(ColdLinkedTest, AColdHardLinkedFileFollowsItsMovedBlobWhenItsLastNameGoes) {
  const bool service_away = GetParam();
  const std::string content = Pattern(5 * kBlock + 123, 7);
  Mount m = NewMount("reader");
  const uint64_t ino = OpenColdWithOneNameLeft(m, content);
  auto gone = m.ns->Unlink(kRootIno, "h");
  ASSERT_TRUE(gone.ok()) << gone.status().ToString();
  EXPECT_TRUE(gone->inode_record);
  if (service_away) plan_->FailAlways(Status(Code::kTransport, "injected"), "Read");
  m.data->Unlinked(*gone);
  plan_->Clear();
  EXPECT_EQ(Blobs(), service_away ? 1u : 0u);
  EXPECT_EQ(InodeRecords(), service_away ? 1u : 0u);
  EXPECT_EQ(ToStat(Fstat(m, ino)).st_nlink, 0u);
  EXPECT_TRUE(ReadAll(m, ino, content.size()) == content);
  ASSERT_TRUE(m.data->Release(ino).ok());
  EXPECT_EQ(Blobs(), 0u);
  EXPECT_EQ(InodeRecords(), 0u);
}

INSTANTIATE_TEST_SUITE_P(ServiceAway, ColdLinkedTest, ::testing::Bool());

// The same when an atomic save replaces the last name: its data is made
// local from the moved blob before the rename's copy overwrites that blob.
TEST_F(UnlinkedTest, AColdHardLinkedFileFollowsItsMovedBlobWhenItsLastNameIsRenamedOver) {
  const std::string content = Pattern(5 * kBlock + 123, 7);
  Mount m = NewMount("reader");
  const uint64_t ino = OpenColdWithOneNameLeft(m, content);
  RenameOver(m, "h", ino, "the new h");
  EXPECT_EQ(ToStat(Fstat(m, ino)).st_nlink, 0u);
  EXPECT_TRUE(ReadAll(m, ino, content.size()) == content);
  ASSERT_TRUE(m.data->Release(ino).ok());
  EXPECT_EQ(Blob("h"), "the new h");
  EXPECT_EQ(Blobs(), 1u);
  EXPECT_EQ(InodeRecords(), 0u);
}

}  // namespace
}  // namespace stampfs
