// -o commit=async on the fakes: close is durable in the journal and sends
// nothing; the pipeline commits due files (one Put Blob and a share of one
// entity group transaction per new file); fsync commits at once; a crash
// with commits queued loses nothing; a conflict found after close is a copy;
// entry changes of one directory share transactions, and one refused
// operation fails only its own caller.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <thread>

#include "fs/data/file_data.h"
#include "storage/cancel.h"
#include "storage/fakes.h"
#include "storage/table_keys.h"
#include "tests/unit/file_data_fixture.h"

namespace stampfs {
namespace {

class CommitPipelineTest : public FileDataTest {
 protected:
  void SetUp() override {
    FileDataTest::SetUp();
    async_threads_ = 0;  // the test runs CommitDue
    now_ = [this] { return clock_ns_.load(); };
  }
  void Advance(int64_t ms) { clock_ns_ += ms * 1000000; }
  // The service goes away as `m`'s queued commit sends: its Put lands with
  // the answer lost, and nothing answers after it (until plan_->Clear()).
  void SendLandsUnanswered(Mount& m) {
    plan_->FailNth(1, RequestTimeout(), "Put", true);
    plan_->FailAlways(RequestTimeout());
    Advance(600);
    EXPECT_EQ(m.data->CommitDue(), 1u);
  }
  // f committed with Pattern(500, seed), then rewritten with `rewrite`, whose
  // send lands with its answer lost; the service answers again after it.
  void CommitThenRewriteLandsUnanswered(Mount& m, uint32_t seed, const std::string& rewrite) {
    const uint64_t ino = Redirect(m, kRootIno, "f", Pattern(500, seed));
    Advance(600);
    EXPECT_EQ(m.data->CommitDue(), 1u);
    EXPECT_EQ(Blob("f"), Pattern(500, seed));
    EXPECT_TRUE(m.data->Open(ino, OpenFlags{true, true, false}).ok());
    Write(m, ino, rewrite, 0);
    EXPECT_TRUE(m.data->Flush(ino).ok());
    EXPECT_TRUE(m.data->Release(ino).ok());
    SendLandsUnanswered(m);
    plan_->Clear();
    EXPECT_EQ(Blob("f"), rewrite) << "the send landed";
  }
  // The landed version at f is gone (no entry names it) and one conflict
  // copy holds `data`.
  void ExpectOnlyTheCopyHoldsIt(const std::string& data) {
    EXPECT_TRUE(raw_blobs_->GetProperties(kContainer, "f").status().Is(Code::kNotFound))
        << "no entry names the landed version";
    ListOptions lo;
    lo.prefix = "f.conflict-testhost-";
    auto list = raw_blobs_->ListBlobs(kContainer, lo);
    ASSERT_TRUE(list.ok());
    ASSERT_EQ(list->blobs.size(), 1u);
    EXPECT_EQ(Blob(list->blobs[0].name), data);
  }
  // A new file as a shell's `>` makes it: created without O_EXCL, flushed
  // once empty (close after dup2), written, flushed and released.
  uint64_t Redirect(Mount& m, uint64_t dir, const std::string& name, const std::string& data) {
    auto attr = m.ns->Create(dir, name, 0640, 7, 8, true);
    EXPECT_TRUE(attr.ok()) << attr.status().ToString();
    if (!attr.ok()) return 0;
    EXPECT_TRUE(m.data->Open(attr->ino, OpenFlags{true, true, true}).ok());
    EXPECT_TRUE(m.data->Flush(attr->ino).ok());
    Write(m, attr->ino, data, 0);
    EXPECT_TRUE(m.data->Flush(attr->ino).ok());
    EXPECT_TRUE(m.data->Release(attr->ino).ok());
    return attr->ino;
  }
  // A mount with pipeline threads on the system clock.
  Mount PipelineMount(int upload_slots, int64_t commit_delay_ms) {
    async_threads_ = upload_slots;
    commit_delay_ms_ = commit_delay_ms;
    now_ = nullptr;
    return NewMount("a");
  }
  // Files d/f0.. by shell redirects in `dir`, committed by the pipeline and
  // checked in the container; returns the transactions their commits took.
  int RedirectAndDrain(Mount& m, uint64_t dir, int files) {
    const int batches_before = plan_->calls("ExecuteBatch");
    for (int i = 0; i < files; ++i) Redirect(m, dir, "f" + std::to_string(i), Pattern(64, i));
    EXPECT_TRUE(Eventually([&] { return m.data->Pipeline().queued == 0; }));
    plan_->SetInjector(nullptr);
    for (int i = 0; i < files; ++i) EXPECT_EQ(Blob("d/f" + std::to_string(i)), Pattern(64, i));
    return plan_->calls("ExecuteBatch") - batches_before;
  }
  // The other writer's x is untouched, and mount `a`'s data is the one copy
  // of x, with nothing left queued or journaled.
  void ExpectOtherWonAndOurDataIsACopy(Mount& a, const std::string& theirs,
                                       const std::string& ours) {
    EXPECT_EQ(Blob("x"), theirs) << "the other writer's file is untouched";
    ListOptions lo;
    lo.prefix = "x.conflict-testhost-";
    auto list = raw_blobs_->ListBlobs(kContainer, lo);
    ASSERT_TRUE(list.ok());
    ASSERT_EQ(list->blobs.size(), 1u) << "this mount's data went to a copy";
    EXPECT_EQ(Blob(list->blobs[0].name), ours);
    EXPECT_EQ(a.data->Pipeline().queued, 0u);
    EXPECT_TRUE(a.blocks->Journaled().empty());
  }
  std::atomic<int64_t> clock_ns_{int64_t{1700000000} * 1000000000};
};

TEST_F(CommitPipelineTest, CloseSendsNothingAndTheDueCommitIsOnePutAndOneTransaction) {
  Mount m = NewMount("a");
  ASSERT_TRUE(m.ns->ReserveInoRange().ok());  // as a mount does before serving
  const int before = plan_->calls();
  uint64_t ino = Redirect(m, kRootIno, "f", Pattern(3000, 1));
  EXPECT_EQ(plan_->calls(), before) << "close in async mode is local";
  EXPECT_EQ(m.blocks->Journaled().size(), 1u) << "and durable in the journal";
  EXPECT_EQ(m.data->Pipeline().queued, 1u);
  EXPECT_EQ(m.data->CommitDue(), 0u) << "not due before commit_delay";
  Advance(600);
  EXPECT_EQ(m.data->CommitDue(), 1u);
  EXPECT_EQ(plan_->calls("Put"), 1);
  EXPECT_EQ(plan_->calls("ExecuteBatch"), 1) << "the entry is inserted with the blob's ETag";
  EXPECT_EQ(plan_->calls(), before + 2);
  EXPECT_EQ(Blob("f"), Pattern(3000, 1));
  EXPECT_TRUE(m.blocks->Journaled().empty());
  EXPECT_EQ(m.data->Pipeline().queued, 0u);
  auto st = m.ns->GetFile(ino, true);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->attr.size, 3000u);
  EXPECT_EQ(st->attr.mode & 07777, 0640u);
}

// RENAME_EXCHANGE of a committed file and a new one whose commit is queued
// (e2e namespace under load: a conflict copy). A pipeline commit that ran
// while the exchange put the blobs back wrote the new file's data to the
// blob name the other file's data was moving to. Before an exchange both
// files' queued changes are committed, new files included.
TEST_F(CommitPipelineTest, AnExchangeCommitsBothFilesFirstAndMakesNoConflictCopy) {
  Mount m = NewMount("a");
  const uint64_t x = Redirect(m, kRootIno, "x", "keep");
  Advance(600);
  ASSERT_EQ(m.data->CommitDue(), 1u);
  const uint64_t z = Redirect(m, kRootIno, "z", "src");
  ASSERT_TRUE(m.ns->IsPending(z));
  ASSERT_TRUE(m.data->Pending(z));
  EXPECT_EQ(m.data->BeforeRename(kRootIno, "z", kRootIno, "x", true), 0u);
  EXPECT_FALSE(m.data->Pending(z)) << "committed before the exchange";
  EXPECT_FALSE(m.data->Pending(x));
  EXPECT_EQ(m.data->Pipeline().queued, 0u);
  ASSERT_TRUE(m.ns->Rename(kRootIno, "z", kRootIno, "x", Namespace::kExchange).ok());
  m.data->Renamed(x);
  m.data->Renamed(z);
  Advance(600);
  m.data->CommitDue();
  EXPECT_EQ(Blob("x"), "src");
  EXPECT_EQ(Blob("z"), "keep");
  EXPECT_EQ(ConflictCopies(m), 0);
}

// git writes .git/config as config.lock and renames it over config. A
// rename over a table entry takes the table path: it inserted the new
// file's entry without data (MaterializePending), and the file's queued
// commit merged that entry while the rename held its ETag: 412, and git
// failed (e2e slow_tools). The source is committed first, as for an exchange.
TEST_F(CommitPipelineTest, ANewFileRenamedOverACommittedOneIsCommittedFirst) {
  Mount m = NewMount("a");
  Redirect(m, kRootIno, "config", "old");
  Advance(600);
  ASSERT_EQ(m.data->CommitDue(), 1u);
  const uint64_t lock = Redirect(m, kRootIno, "config.lock", "new");
  ASSERT_TRUE(m.ns->IsPending(lock));
  EXPECT_NE(m.data->BeforeRename(kRootIno, "config.lock", kRootIno, "config", false), 0u);
  EXPECT_FALSE(m.data->Pending(lock)) << "committed before the rename";
  EXPECT_FALSE(m.ns->IsPending(lock));
}

// The same race with the pipeline's threads and a service 3 ms away, as the
// FUSE adapter runs a rename (fs/fuse/fuse_ops.cc OnRename).
TEST_F(CommitPipelineTest, GitsLockFileRenamesNeverRaceTheFilesOwnCommit) {
  Mount m = PipelineMount(4, 1);
  plan_->SetInjector([](const std::string&, int) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    return Status::Ok();
  });
  Redirect(m, kRootIno, "config", "v0");
  for (int i = 1; i <= 40; ++i) {
    const std::string content = "v" + std::to_string(i);
    Redirect(m, kRootIno, "config.lock", content);
    const uint64_t target =
        m.data->BeforeRename(kRootIno, "config.lock", kRootIno, "config", false);
    uint64_t moved = 0;
    auto orphans = m.ns->Rename(kRootIno, "config.lock", kRootIno, "config", 0, &moved);
    if (orphans.ok() && target != 0 && m.ns->RemovedHere(target)) m.data->Unlinked(target, "", "");
    m.data->RenameDone(target);
    ASSERT_TRUE(orphans.ok()) << "round " << i << ": " << orphans.status().ToString();
    for (const std::string& blob : *orphans) m.data->DeleteBlobWhenUnused(0, blob);
    if (moved != 0) m.data->Renamed(moved);
    EXPECT_EQ(ReadFile(m, kRootIno, "config"), content);
  }
  ASSERT_TRUE(Eventually([&] { return m.data->Pipeline().queued == 0; }));
  plan_->SetInjector(nullptr);
  EXPECT_EQ(Blob("config"), "v40");
  EXPECT_FALSE(raw_blobs_->ReadToString(kContainer, "config.lock").ok());
  EXPECT_EQ(ConflictCopies(m), 0);
}

// A directory rename whose last transaction lands with its answer lost
// fails (EIO), leaving its intent unfinished; a file then created in the
// directory by its inode went to the old name, and its commit found the
// directory "removed": a conflict copy in the root, with no other writer
// (simulation seed 7835). This mount's own unfinished renames are now
// finished before a create or lookup resolves a name, and the kernel's
// inode of the directory follows the rename.
TEST_F(CommitPipelineTest, ACreateInADirectoryWhoseRenameWentUnansweredGoesWhereItWent) {
  Mount m = NewMount("a");
  auto probe = m.ns->Mkdir(kRootIno, "probe", 0755, 0, 0);
  ASSERT_TRUE(probe.ok());
  const int before = plan_->calls("ExecuteBatch");
  ASSERT_TRUE(m.ns->Rename(kRootIno, "probe", kRootIno, "probe2", 0).ok());
  const int batches = plan_->calls("ExecuteBatch") - before;  // of a directory rename
  auto d1 = m.ns->Mkdir(kRootIno, "d1", 0755, 0, 0);
  ASSERT_TRUE(d1.ok());
  plan_->FailNth(batches, RequestTimeout(), "ExecuteBatch", true);
  auto renamed = m.ns->Rename(kRootIno, "d1", kRootIno, "d2", 0);
  ASSERT_FALSE(renamed.ok()) << "its last answer was lost";
  plan_->Clear();
  Redirect(m, d1->ino, "c", "data");
  Advance(600);
  m.data->CommitDue();
  EXPECT_EQ(ConflictCopies(m), 0);
  EXPECT_TRUE(InTable("/d2", "c"));
  EXPECT_EQ(Blob("d2/c"), "data");
  auto intents = raw_table_->QueryPartition(kTable, "~intents");
  ASSERT_TRUE(intents.ok());
  EXPECT_TRUE(intents->empty());
}

TEST_F(CommitPipelineTest, AFileRewrittenBeforeItsCommitIsUploadedOnce) {
  Mount m = NewMount("a");
  uint64_t ino = Redirect(m, kRootIno, "f", Pattern(3000, 1));
  Advance(100);
  ASSERT_TRUE(m.data->Open(ino, OpenFlags{false, false, true}).ok());
  Write(m, ino, Pattern(2000, 2), 0);
  ASSERT_TRUE(m.data->Release(ino).ok());
  Advance(450);
  EXPECT_EQ(m.data->CommitDue(), 0u) << "the last close moved the due time";
  Advance(100);
  EXPECT_EQ(m.data->CommitDue(), 1u);
  EXPECT_EQ(plan_->calls("Put"), 1);
  EXPECT_EQ(Blob("f"), Pattern(2000, 2) + Pattern(3000, 1).substr(2000));
}

TEST_F(CommitPipelineTest, FsyncCommitsAtOnce) {
  Mount m = NewMount("a");
  auto attr = m.ns->Create(kRootIno, "f", 0644, 0, 0, true);
  ASSERT_TRUE(attr.ok());
  ASSERT_TRUE(m.data->Open(attr->ino, OpenFlags{true, true, true}).ok());
  Write(m, attr->ino, Pattern(100, 3), 0);
  ASSERT_TRUE(m.data->Flush(attr->ino).ok());
  EXPECT_EQ(plan_->calls("Put"), 0);
  ASSERT_TRUE(m.data->Sync(attr->ino).ok());
  EXPECT_EQ(Blob("f"), Pattern(100, 3));
  ASSERT_TRUE(m.data->Release(attr->ino).ok());
  Advance(1000);
  EXPECT_EQ(m.data->CommitDue(), 0u) << "nothing changed since the fsync";
  EXPECT_EQ(plan_->calls("Put"), 1);
}

TEST_F(CommitPipelineTest, ACrashWithCommitsQueuedLosesNothingClosed) {
  uint64_t ino = 0;
  {
    Mount m = NewMount("a");
    auto dir = m.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
    ASSERT_TRUE(dir.ok());
    ino = Redirect(m, dir->ino, "f", Pattern(5000, 4));
    SetAttrRequest chmod;
    chmod.mode = 0600;
    ASSERT_TRUE(m.ns->SetAttr(ino, chmod).ok());
    ASSERT_TRUE(m.data->Open(ino, OpenFlags{false, false, true}).ok());
    ASSERT_TRUE(m.data->Release(ino).ok()) << "journals the attributes again";
    EXPECT_EQ(plan_->calls("Put"), 0);
    // kill -9: nothing more runs.
  }
  Mount after = NewMount("a");
  ASSERT_TRUE(after.data->ReplayJournal().ok());
  EXPECT_EQ(Blob("d/f"), Pattern(5000, 4));
  auto dir = after.ns->Lookup(kRootIno, "d");
  ASSERT_TRUE(dir.ok());
  auto f = after.ns->Lookup(dir->ino, "f");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->size, 5000u);
  EXPECT_EQ(f->mode & 07777, 0600u) << "a pending file's attributes are journaled";
  EXPECT_EQ(f->uid, 7u);
  EXPECT_EQ(f->gid, 8u);
}

// The first commit's blob write lands, then the daemon dies before the
// entry insert (seed 5017): the journal says "based on that blob" and the
// name has no entry. The next mount inserts the entry over that blob; it
// used to take the name as removed by someone else, save a conflict copy
// and leave the blob with no entry.
TEST_F(CommitPipelineTest, ACrashBetweenAFirstBlobWriteAndItsEntryInsertIsReplayedAsTheFile) {
  {
    Mount m = NewMount("a");
    Redirect(m, kRootIno, "f", Pattern(3000, 9));
    plan_->SetInjector([](const std::string& op, int) {
      return op == "ExecuteBatch" || op == "Insert" ? RequestTimeout() : Status::Ok();
    });
    Advance(600);
    m.data->CommitDue();
    plan_->SetInjector(nullptr);
    ASSERT_EQ(plan_->calls("Put"), 1) << "the blob write landed";
    // kill -9
  }
  Mount after = NewMount("a");
  ASSERT_TRUE(after.data->ReplayJournal().ok());
  auto f = after.ns->Lookup(kRootIno, "f");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->size, 3000u);
  EXPECT_EQ(f->mode & 07777, 0640u);
  EXPECT_EQ(Blob("f"), Pattern(3000, 9));
  EXPECT_EQ(EntryStartingWith(after, "f.conflict-"), "") << "no copy: nobody else wrote";
}

// The first commit's Put Blob lands but its answer is a 409 that is not
// BlobAlreadyExists (simulation seed 6785, in a journal replay): the blob's
// commit id shows it landed, so the entry follows at once. It used to be
// taken as a plain failure: the changes stayed journaled and the name's
// entry never named the blob.
TEST_F(CommitPipelineTest, AFirstCommitAnswered409AfterItLandedIsCommitted) {
  Mount m = NewMount("a");
  Redirect(m, kRootIno, "f", Pattern(2000, 3));
  plan_->FailNth(1, Status(Code::kConflict, "injected 409 Conflict"), "Put", true);
  Advance(600);
  EXPECT_EQ(m.data->CommitDue(), 1u);
  plan_->Clear();
  EXPECT_EQ(Blob("f"), Pattern(2000, 3));
  auto f = m.ns->Lookup(kRootIno, "f");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->size, 2000u);
  auto st = m.ns->GetFile(f->ino, true);
  ASSERT_TRUE(st.ok());
  EXPECT_FALSE(st->blob_etag.empty()) << "the entry names the blob";
  EXPECT_EQ(m.data->Pipeline().queued, 0u);
  EXPECT_TRUE(m.blocks->Journaled().empty());
}

TEST_F(CommitPipelineTest, AConflictFoundAfterCloseIsSavedAsACopy) {
  Mount a = NewMount("a");
  Redirect(a, kRootIno, "x", Pattern(700, 5));
  async_threads_ = -1;
  Mount c = NewMount("c");  // commit=close: the other writer commits first
  Commit(c, "x", Pattern(900, 6));
  Advance(600);
  EXPECT_EQ(a.data->CommitDue(), 1u);
  ExpectOtherWonAndOurDataIsACopy(a, Pattern(900, 6), Pattern(700, 5));
}

TEST_F(CommitPipelineTest, AFailedCommitIsRetriedWithTheChangesJournaled) {
  Mount m = NewMount("a");
  Redirect(m, kRootIno, "f", Pattern(100, 7));
  plan_->SetInjector([](const std::string& op, int) {
    return op == "Put" ? Status(Code::kThrottled, "503") : Status::Ok();
  });
  Advance(600);
  EXPECT_EQ(m.data->CommitDue(), 1u);
  EXPECT_EQ(m.data->Pipeline().queued, 1u);
  EXPECT_EQ(m.data->Pipeline().retrying, 1u);
  EXPECT_EQ(m.blocks->Journaled().size(), 1u);
  plan_->SetInjector(nullptr);
  EXPECT_EQ(m.data->CommitDue(), 0u) << "backoff";
  Advance(2000);
  EXPECT_EQ(m.data->CommitDue(), 1u);
  EXPECT_EQ(Blob("f"), Pattern(100, 7));
  EXPECT_EQ(m.data->Pipeline().queued, 0u);
}

// Issue 27, defect 2: the kernel forgets inodes (drop_caches, memory
// pressure) while commits are queued. The queued file stays pinned, but its
// directory was not: resolving the file's path failed ("inode N is not
// known"), the NotFound was taken for another writer's removal, and the file
// became a conflict copy (or, when the copy failed too, nothing).
TEST_F(CommitPipelineTest, AQueuedFileKeepsItsPathWhenTheKernelForgetsItsDirectory) {
  Mount m = NewMount("a");
  auto outer = m.ns->Mkdir(kRootIno, "o", 0755, 0, 0);
  ASSERT_TRUE(outer.ok());
  auto dir = m.ns->Mkdir(outer->ino, "d", 0755, 0, 0);
  ASSERT_TRUE(dir.ok());
  const uint64_t f = Redirect(m, dir->ino, "f", Pattern(300, 11));
  // FORGET of everything the kernel looked up: the file, then its directories.
  m.ns->Forget(f, 1);
  m.ns->Forget(dir->ino, 1);
  m.ns->Forget(outer->ino, 1);
  Advance(600);
  EXPECT_EQ(m.data->CommitDue(), 1u);
  EXPECT_EQ(Blob("o/d/f"), Pattern(300, 11));
  EXPECT_EQ(m.data->Pipeline().queued, 0u);
  EXPECT_TRUE(m.blocks->Journaled().empty());
  EXPECT_EQ(ConflictCopies(m), 0);
  EXPECT_EQ(EntryStartingWith(m, "f.conflict-"), "");
  EXPECT_EQ(m.ns->KnownPath(dir->ino), std::nullopt)
      << "once committed and unloaded, the forgotten directory goes";
}

// Issue 27, defect 1: during an outage the first send of a new file lands
// (its answer lost), and the retries go on for minutes. Each retry carried a
// new commit id and only the last 8 were kept, so when the service came back
// the 409 answering the file's own first send was taken for another writer's
// blob: a conflict copy, and the name left empty.
TEST_F(CommitPipelineTest, ASendThatLandedEarlyInALongOutageIsRecognisedAsOurs) {
  Mount m = NewMount("a");
  Redirect(m, kRootIno, "f", Pattern(2000, 12));
  plan_->FailNth(1, RequestTimeout(), "Put", true);  // lands, its answer lost
  plan_->FailAlways(RequestTimeout());               // then nothing answers
  for (int i = 0; i < 20; ++i) {
    Advance(31000);
    EXPECT_EQ(m.data->CommitDue(), 1u);
    EXPECT_EQ(m.data->Pipeline().queued, 1u) << "still queued after retry " << i;
  }
  plan_->Clear();
  Advance(31000);
  EXPECT_EQ(m.data->CommitDue(), 1u);
  EXPECT_EQ(Blob("f"), Pattern(2000, 12));
  EXPECT_EQ(ConflictCopies(m), 0) << "nobody else wrote f";
  EXPECT_EQ(m.data->Pipeline().queued, 0u);
  EXPECT_TRUE(m.blocks->Journaled().empty());
  auto f = m.ns->Lookup(kRootIno, "f");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->size, 2000u);
}

// A new file's first send lands during an outage (its answer lost), and the
// file is removed before any commit is known to have landed (simulation seed
// 3987). The blob carries one of its commit ids: it is the file's own and
// goes with the name, instead of staying without an entry.
TEST_F(CommitPipelineTest, AnUnlinkRemovesANewFilesSendThatLandedUnanswered) {
  Mount m = NewMount("a");
  Redirect(m, kRootIno, "f", Pattern(500, 15));
  SendLandsUnanswered(m);
  plan_->Clear();
  ASSERT_TRUE(raw_blobs_->GetProperties(kContainer, "f").ok()) << "the send landed";
  auto gone = m.ns->Unlink(kRootIno, "f");
  ASSERT_TRUE(gone.ok()) << gone.status().ToString();
  m.data->Unlinked(*gone);
  EXPECT_TRUE(raw_blobs_->GetProperties(kContainer, "f").status().Is(Code::kNotFound));
  Advance(60000);
  m.data->CommitDue();
  EXPECT_EQ(m.data->Pipeline().queued, 0u);
  EXPECT_TRUE(m.blocks->Journaled().empty());
}

// The same send, and the file renamed while the service is still away (the
// rename of a new file is local). Its commit goes to the new name; the send
// that landed at the old one is found by its id once the service answers
// and deleted, not left as a blob no entry names (simulation seed 181).
TEST_F(CommitPipelineTest, ARenameAwayFromANewFilesSendThatLandedUnansweredDeletesIt) {
  Mount m = NewMount("a");
  Redirect(m, kRootIno, "f", Pattern(500, 17));
  ASSERT_TRUE(m.ns->ReadDir(kRootIno).ok());  // listed: "g" is known to be free
  SendLandsUnanswered(m);
  auto renamed = m.ns->Rename(kRootIno, "f", kRootIno, "g", 0);
  ASSERT_TRUE(renamed.ok()) << renamed.status().ToString();
  Advance(60000);
  m.data->CommitDue();  // still away: the commit goes on failing
  plan_->Clear();
  ASSERT_TRUE(raw_blobs_->GetProperties(kContainer, "f").ok()) << "the send landed";
  Advance(60000);
  m.data->CommitDue();
  EXPECT_EQ(m.data->Pipeline().queued, 0u);
  EXPECT_EQ(Blob("g"), Pattern(500, 17));
  Advance(2000);
  m.data->CommitDue();
  EXPECT_TRUE(raw_blobs_->GetProperties(kContainer, "f").status().Is(Code::kNotFound))
      << "the landed send at the old name is no file's";
}

// The same with the pipeline's own threads: its scheduler sweeps the old
// name once the service answers (no drain, no unmount needed).
TEST_F(CommitPipelineTest, ThePipelineSweepsALandedSendLeftByARenameOnItsOwn) {
  Mount m = PipelineMount(2, 0);
  ASSERT_TRUE(m.ns->Mkdir(kRootIno, "warm", 0755, 0, 0).ok());  // inode numbers reserved
  ASSERT_TRUE(m.ns->ReadDir(kRootIno).ok());
  plan_->FailNth(1, RequestTimeout(), "Put", true);
  plan_->FailAlways(RequestTimeout());
  Redirect(m, kRootIno, "f", Pattern(500, 21));
  for (int i = 0; i < 500 && m.data->Pipeline().retrying == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(m.data->Pipeline().retrying, 1u) << "the send landed unanswered; the commit waits";
  auto renamed = m.ns->Rename(kRootIno, "f", kRootIno, "g", 0);
  ASSERT_TRUE(renamed.ok()) << renamed.status().ToString();
  plan_->Clear();
  bool swept = false;
  for (int i = 0; i < 1000 && !swept; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    swept = raw_blobs_->GetProperties(kContainer, "f").status().Is(Code::kNotFound) &&
            raw_blobs_->GetProperties(kContainer, "g").ok();
  }
  EXPECT_TRUE(swept) << "within 10 s: g committed, f's landed send deleted";
  EXPECT_EQ(Blob("g"), Pattern(500, 21));
}

// An unlink of such a file while the service is away cannot read whose the
// blob is: it asks again once the service answers.
TEST_F(CommitPipelineTest, AnUnlinkDuringTheOutageRemovesTheLandedSendOnceTheServiceAnswers) {
  Mount m = NewMount("a");
  Redirect(m, kRootIno, "f", Pattern(500, 18));
  SendLandsUnanswered(m);
  auto gone = m.ns->Unlink(kRootIno, "f");
  ASSERT_TRUE(gone.ok()) << gone.status().ToString();
  m.data->Unlinked(*gone);
  plan_->Clear();
  ASSERT_TRUE(raw_blobs_->GetProperties(kContainer, "f").ok()) << "the send landed";
  EXPECT_EQ(m.data->CommitAll(std::chrono::seconds(5)), 0u);
  EXPECT_TRUE(raw_blobs_->GetProperties(kContainer, "f").status().Is(Code::kNotFound));
}

// A committed file's send that landed unanswered (truncated during an
// outage, simulation seed 1939): the unlink deletes the version its ids name,
// not only the one the entry names.
TEST_F(CommitPipelineTest, AnUnlinkRemovesACommittedFilesSendThatLandedUnanswered) {
  Mount m = NewMount("a");
  CommitThenRewriteLandsUnanswered(m, 19, "shorter");
  auto gone = m.ns->Unlink(kRootIno, "f");
  ASSERT_TRUE(gone.ok()) << gone.status().ToString();
  m.data->Unlinked(*gone);
  EXPECT_TRUE(raw_blobs_->GetProperties(kContainer, "f").status().Is(Code::kNotFound));
}

// A committed file's rewrite lands unanswered; another mount removes the
// file, and its Delete (If-Match the version it knew) finds ours (412):
// nobody deleted the landed version, which no entry names (simulation seeds
// 2687, 3797, 7655). The writer, killed or not, saves its data as a copy and
// deletes the landed version (by its commit id).
class CommittedFileRemovedElsewhere : public CommitPipelineTest {
 protected:
  // Writes f, commits it, rewrites it and loses the answer of that send;
  // then mount "b" unlinks f. Returns the rewrite's content.
  std::string RewriteLandsThenAnotherMountUnlinks(Mount& a) {
    CommitThenRewriteLandsUnanswered(a, 31, "rewritten");
    async_threads_ = -1;
    Mount b = NewMount("b");
    auto gone = b.ns->Unlink(kRootIno, "f");
    EXPECT_TRUE(gone.ok()) << gone.status().ToString();
    if (gone.ok()) b.data->Unlinked(*gone);
    async_threads_ = 0;
    EXPECT_TRUE(raw_blobs_->GetProperties(kContainer, "f").ok()) << "b could not delete it";
    return "rewritten";
  }
};

TEST_F(CommittedFileRemovedElsewhere, TheWritersReplaySavesACopyAndDeletesItsLandedSend) {
  std::string data;
  {
    Mount a = NewMount("a");
    data = RewriteLandsThenAnotherMountUnlinks(a);
    // kill -9
  }
  Mount after = NewMount("a");
  ASSERT_TRUE(after.data->ReplayJournal().ok());
  ExpectOnlyTheCopyHoldsIt(data);
}

TEST_F(CommittedFileRemovedElsewhere, TheWritersNextCommitSavesACopyAndSweepsItsLandedSend) {
  Mount a = NewMount("a");
  const std::string data = RewriteLandsThenAnotherMountUnlinks(a);
  now_ms_ += 60000;  // a's cached entry expires: its lookup finds the name gone
  Advance(60000);
  a.data->CommitDue();
  Advance(2000);
  a.data->CommitDue();  // the sweep
  ExpectOnlyTheCopyHoldsIt(data);
}

// The same send, and the mount killed before it learned the outcome; another
// mount makes a symlink of the name (simulation seed 4927). The replay saves
// the data as a copy and deletes the landed blob, which no entry names.
TEST_F(CommitPipelineTest, AReplayDeletesALandedSendOfACreateWhoseNameIsNowASymlink) {
  {
    Mount m = NewMount("a");
    Redirect(m, kRootIno, "f", Pattern(500, 16));
    SendLandsUnanswered(m);
    plan_->Clear();
    // kill -9
  }
  async_threads_ = -1;
  Mount b = NewMount("b");
  ASSERT_TRUE(b.ns->Symlink(kRootIno, "f", "elsewhere", 0, 0).ok());
  async_threads_ = 0;
  Mount after = NewMount("a");
  ASSERT_TRUE(after.data->ReplayJournal().ok());
  ExpectOnlyTheCopyHoldsIt(Pattern(500, 16));
}

// A new file renamed while its first commit sends (git writes config.lock,
// then renames it over config; tests/e2e/slow_tools.sh): the blob was put at
// the old name and the entry inserted at the new one, naming that version,
// so the new name's blob was missing and the old one belonged to no entry.
TEST_F(CommitPipelineTest, ANewFileRenamedWhileItsFirstCommitSendsEndsAtTheNewName) {
  Mount m = NewMount("a");
  Redirect(m, kRootIno, "config.lock", "[core]\n");
  bool renamed = false;
  plan_->SetInjector([&](const std::string& op, int) {
    if (op == "Put" && !renamed) {
      renamed = true;  // the send is under way: git's rename comes now
      auto r = m.ns->Rename(kRootIno, "config.lock", kRootIno, "config", 0);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
    }
    return Status::Ok();
  });
  Advance(600);
  m.data->CommitDue();
  plan_->Clear();
  Advance(60000);
  m.data->CommitDue();
  Advance(2000);
  m.data->CommitDue();
  ASSERT_TRUE(renamed);
  EXPECT_EQ(m.data->Pipeline().queued, 0u);
  EXPECT_EQ(Blob("config"), "[core]\n");
  EXPECT_TRUE(raw_blobs_->GetProperties(kContainer, "config.lock").status().Is(Code::kNotFound))
      << "no blob left at the old name";
}

// Issue 27, defect 9: close(2) returns after FLUSH; RELEASE, which queues
// the file, comes later. The data and its journal row are synced at the
// flush, so a power cut between close and release loses nothing; the
// release then has nothing new to sync.
TEST_F(CommitPipelineTest, CloseMakesTheDataDurableBeforeItReturns) {
  Mount m = NewMount("a");
  auto attr = m.ns->Create(kRootIno, "f", 0644, 0, 0, true);
  ASSERT_TRUE(attr.ok());
  ASSERT_TRUE(m.data->Open(attr->ino, OpenFlags{true, true, true}).ok());
  Write(m, attr->ino, "acknowledged", 0);
  const uint64_t before = m.blocks->Stats().journal_syncs;
  ASSERT_TRUE(m.data->Flush(attr->ino).ok());
  EXPECT_EQ(m.blocks->Stats().journal_syncs, before + 1) << "synced when close returns";
  ASSERT_TRUE(m.data->Flush(attr->ino).ok());  // a dup'd descriptor closed: nothing new
  ASSERT_TRUE(m.data->Release(attr->ino).ok());
  EXPECT_EQ(m.blocks->Stats().journal_syncs, before + 1) << "no second sync";
  ASSERT_EQ(m.blocks->Journaled().size(), 1u);
  EXPECT_EQ(m.blocks->Journaled()[0].journal->size, 12u);
}

// Issue 27, defect 3: the queue's bound holds writers back where the kernel
// waits for the answer: at the flush of close(2) (the release that queues
// the file comes after close returned) and at a create; an interrupt ends
// the wait. Before, the wait was at the release: tar was never slowed, and
// files piled up beyond the bound, each with a cache file open (EMFILE, EIO).
TEST_F(CommitPipelineTest, AFullQueueHoldsCloseAndCreateBackNotRelease) {
  max_queued_ = 2;
  Mount m = PipelineMount(2, 0);
  plan_->FailAlways(RequestTimeout(), "Put");  // nothing commits: the queue stays full
  Redirect(m, kRootIno, "a", "aaa");
  Redirect(m, kRootIno, "b", "bbb");
  ASSERT_EQ(m.data->Pipeline().queued, 2u);

  auto c = m.ns->Create(kRootIno, "c", 0644, 0, 0, true);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(m.data->Open(c->ino, OpenFlags{true, true, true}).ok());
  Write(m, c->ino, "ccc", 0);
  std::atomic<bool> flushed{false};
  std::thread closer([&] {
    EXPECT_TRUE(m.data->Flush(c->ino).ok());
    flushed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(flushed) << "close waits while the queue is full";
  {
    CancelToken interrupt;
    interrupt.Cancel();
    ScopedCancelToken scoped(&interrupt);
    EXPECT_TRUE(m.data->WaitForRoom().Is(Code::kCancelled)) << "a create's wait, interrupted";
  }
  plan_->Clear();  // the service answers: the queue drains
  closer.join();
  EXPECT_TRUE(flushed);
  ASSERT_TRUE(m.data->Release(c->ino).ok());  // queues it, without waiting
  ASSERT_TRUE(m.data->SyncAll().ok());
  EXPECT_EQ(Blob("c"), "ccc");
}

// Issue 27, defect 1: a real conflict whose copy cannot be saved (the table
// times out) used to leave the queue with the data in the journal alone.
// The commit stays queued and the copy is saved once the service answers.
TEST_F(CommitPipelineTest, AConflictCopyThatCannotBeSavedYetStaysQueued) {
  Mount a = NewMount("a");
  Redirect(a, kRootIno, "x", Pattern(700, 13));
  async_threads_ = -1;
  Mount c = NewMount("c");
  Commit(c, "x", Pattern(900, 14));
  // Blob calls answer; every table call times out: the conflict is proven
  // (412/409 and a blob with no id of ours), the copy's entry is not made.
  plan_->SetInjector([](const std::string& op, int) {
    return op == "Put" || op == "GetProperties" || op == "Delete" ? Status::Ok() : RequestTimeout();
  });
  for (int i = 0; i < 3; ++i) {
    Advance(31000);
    EXPECT_EQ(a.data->CommitDue(), 1u);
    EXPECT_EQ(a.data->Pipeline().queued, 1u) << "kept queued after try " << i;
    EXPECT_EQ(a.blocks->Journaled().size(), 1u);
  }
  plan_->SetInjector(nullptr);
  Advance(31000);
  EXPECT_EQ(a.data->CommitDue(), 1u);
  ExpectOtherWonAndOurDataIsACopy(a, Pattern(900, 14), Pattern(700, 13));
}

TEST_F(CommitPipelineTest, UnmountCommitsWhatIsQueued) {
  Mount m = NewMount("a");
  for (int i = 0; i < 5; ++i) Redirect(m, kRootIno, "f" + std::to_string(i), Pattern(50, i));
  EXPECT_EQ(m.data->CommitAll(std::chrono::seconds(30)), 0u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Blob("f" + std::to_string(i)), Pattern(50, i));
  EXPECT_EQ(m.data->Pipeline().queued, 0u);
  EXPECT_TRUE(m.blocks->Journaled().empty());
}

TEST_F(CommitPipelineTest, PipelineThreadsCommitWithinTheDelayAndShareTransactions) {
  Mount m = PipelineMount(16, 50);
  auto dir = m.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
  ASSERT_TRUE(dir.ok());
  // A slow table, so that commits finishing together meet in one transaction.
  plan_->SetInjector([](const std::string& op, int) {
    if (op == "ExecuteBatch") std::this_thread::sleep_for(std::chrono::milliseconds(30));
    return Status::Ok();
  });
  constexpr int kFiles = 40;
  const int batches = RedirectAndDrain(m, dir->ino, kFiles);
  EXPECT_LE(batches, kFiles / 2) << "entry inserts of one directory share transactions";
  auto listed = m.ns->ReadDir(dir->ino);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), static_cast<size_t>(kFiles));
}

// A writer closing files one by one, as a shell loop or rsync does, and a
// round trip per upload: files closed within half a delay of each other are
// committed together, and their entries wait for each other's uploads to
// share transactions, instead of one transaction per file or two.
TEST_F(CommitPipelineTest, FilesClosedOneByOneShareTransactions) {
  Mount m = PipelineMount(16, 200);
  auto dir = m.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
  ASSERT_TRUE(dir.ok());
  plan_->SetInjector([](const std::string& op, int) {
    if (op == "Put") std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return Status::Ok();
  });
  const int batches_before = plan_->calls("ExecuteBatch");
  constexpr int kFiles = 48;
  for (int i = 0; i < kFiles; ++i) {
    Redirect(m, dir->ino, "f" + std::to_string(i), Pattern(64, i));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(Eventually([&] { return m.data->Pipeline().queued == 0; }));
  plan_->SetInjector(nullptr);
  for (int i = 0; i < kFiles; ++i) EXPECT_EQ(Blob("d/f" + std::to_string(i)), Pattern(64, i));
  const int batches = plan_->calls("ExecuteBatch") - batches_before;
  EXPECT_LE(batches, kFiles / 6) << "about one transaction per 16 files";
}

// rsync's pattern: a temporary file written, closed, renamed into place
// before its commit: no request until the commit, which uploads it once
// under its final name; a crash before the commit replays it there.
TEST_F(CommitPipelineTest, ATemporaryFileRenamedBeforeItsCommitIsUploadedOnceUnderItsFinalName) {
  {
    Mount m = NewMount("a");
    ASSERT_TRUE(m.ns->ReserveInoRange().ok());
    ASSERT_TRUE(m.ns->ListRoot().ok());
    const int before = plan_->calls();
    uint64_t ino = Redirect(m, kRootIno, ".f.XXXX", Pattern(2000, 9));
    uint64_t moved = 0;
    auto renamed = m.ns->Rename(kRootIno, ".f.XXXX", kRootIno, "f", 0, &moved);
    ASSERT_TRUE(renamed.ok()) << renamed.status().ToString();
    EXPECT_EQ(moved, ino);
    m.data->Renamed(moved);
    EXPECT_EQ(plan_->calls(), before) << "a pending file is renamed in memory";
    EXPECT_TRUE(m.ns->Lookup(kRootIno, ".f.XXXX").status().Is(Code::kNotFound));
    EXPECT_EQ(m.ns->Lookup(kRootIno, "f")->ino, ino);
    // kill -9 before the commit
  }
  Mount after = NewMount("a");
  ASSERT_TRUE(after.data->ReplayJournal().ok());
  EXPECT_EQ(Blob("f"), Pattern(2000, 9)) << "the journal followed the rename";
  EXPECT_TRUE(raw_blobs_->GetProperties(kContainer, ".f.XXXX").status().Is(Code::kNotFound));
  EXPECT_EQ(plan_->calls("Copy"), 0);
}

TEST_F(CommitPipelineTest, ARenamedPendingFileIsCommittedOnceUnderItsNewName) {
  Mount m = NewMount("a");
  ASSERT_TRUE(m.ns->ListRoot().ok());
  Redirect(m, kRootIno, ".g.tmp", Pattern(500, 10));
  ASSERT_TRUE(m.ns->Rename(kRootIno, ".g.tmp", kRootIno, "g", 0).ok());
  Advance(600);
  EXPECT_EQ(m.data->CommitDue(), 1u);
  EXPECT_EQ(plan_->calls("Put"), 1);
  EXPECT_EQ(plan_->calls("Copy"), 0);
  EXPECT_EQ(Blob("g"), Pattern(500, 10));
  EXPECT_TRUE(raw_blobs_->GetProperties(kContainer, ".g.tmp").status().Is(Code::kNotFound));
  auto fresh = NewMount("b");
  EXPECT_TRUE(fresh.ns->Lookup(kRootIno, ".g.tmp").status().Is(Code::kNotFound));
  EXPECT_EQ(fresh.ns->Lookup(kRootIno, "g")->size, 500u);
}

// Three entry changes in one directory meet in one transaction; the table
// refuses one of them: its caller gets the refusal, the others land.
TEST_F(FileDataTest, AGroupedTransactionRefusedForOneOperationFailsOnlyThatOne) {
  Mount m = NewMount("a");
  std::vector<uint64_t> inos;
  for (const char* name : {"a", "b", "c"}) {
    Commit(m, name, "x");
    inos.push_back(m.ns->Lookup(kRootIno, name)->ino);
  }
  // While the first change is on the wire, the other two queue; "c" is
  // removed behind this mount's back, so its conditional replace is refused.
  std::atomic<bool> first{true};
  plan_->SetInjector([&](const std::string& op, int) {
    if (op == "ExecuteBatch" && first.exchange(false)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    return Status::Ok();
  });
  ASSERT_TRUE(raw_table_
                  ->Delete(kTable, PartitionKeyForDirectory("/"), RowKeyForName("c"),
                           Condition::IfMatch("*"))
                  .ok());
  const int before = plan_->calls("ExecuteBatch");
  std::vector<Result<Attr>> results(3, Status(Code::kInternal, "not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      SetAttrRequest r;
      r.mode = 0600 + i;
      results[i] = m.ns->SetAttr(inos[i], r);
    });
  }
  for (auto& t : threads) t.join();
  plan_->SetInjector(nullptr);
  EXPECT_TRUE(results[0].ok()) << results[0].status().ToString();
  EXPECT_TRUE(results[1].ok()) << results[1].status().ToString();
  EXPECT_TRUE(results[2].status().Is(Code::kNotFound)) << results[2].status().ToString();
  auto b = raw_table_->Get(kTable, PartitionKeyForDirectory("/"), RowKeyForName("b"));
  ASSERT_TRUE(b.ok());
  auto attr = AttrFromEntity(*b);
  ASSERT_TRUE(attr.ok());
  EXPECT_EQ(attr->mode & 07777, 0601u);
  // a alone; b and c together (refused for c); b again alone; plus the
  // point reads of c's confirmation are not batches.
  EXPECT_LE(plan_->calls("ExecuteBatch") - before, 4);
}

// A commit whose upload is done gives its upload slot to the next one while
// its entry change waits for the directory's transaction: with 2 slots (8
// pipeline threads) every file is uploaded by the time the first transaction,
// held on the wire, returns, and the next transaction takes all their entries.
// (Uploads may all finish before the first transaction starts on a slow
// machine; what must not happen is that they stop behind it.)
TEST_F(CommitPipelineTest, UploadsGoOnWhileATransactionIsOnTheWire) {
  Mount m = PipelineMount(2, 0);
  auto dir = m.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
  ASSERT_TRUE(dir.ok());
  constexpr int kFiles = 8;
  std::atomic<int> puts{0};
  std::atomic<bool> first{true};
  std::atomic<int> puts_by_end_of_first{-1};
  plan_->SetInjector([&](const std::string& op, int) {
    if (op == "Put") puts++;
    if (op == "ExecuteBatch" && first.exchange(false)) {
      // Held until every file is uploaded (with uploads waiting for it: 2 s).
      for (int i = 0; i < 200 && puts < kFiles; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      puts_by_end_of_first = puts.load();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // their entries queue
    }
    return Status::Ok();
  });
  const int batches = RedirectAndDrain(m, dir->ino, kFiles);
  // Without the slots, only the other thread's upload went on (at most 3).
  EXPECT_EQ(puts_by_end_of_first.load(), kFiles)
      << "uploads stopped while a transaction was on the wire";
  EXPECT_LE(batches, 3) << "the entries queued behind the first transaction share the next";
}

// The attributes of entry `name` in directory `dir` as the table holds them.
Attr StoredAttr(TableStore& table, const std::string& dir, const std::string& name) {
  auto e = table.Get(kTable, PartitionKeyForDirectory(dir), RowKeyForName(name));
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  if (!e.ok()) return Attr{};
  auto attr = AttrFromEntity(*e);
  EXPECT_TRUE(attr.ok());
  return attr.ok() ? *attr : Attr{};
}

// Every deferred change is committed: none journaled, none queued.
void ExpectNothingDeferred(Mount& m) {
  EXPECT_TRUE(m.meta->ListDeferredAttrs().empty());
  EXPECT_EQ(m.data->Pipeline().queued, 0u);
}

SetAttrRequest Times(int64_t atime_ns, int64_t mtime_ns) {
  SetAttrRequest r;
  r.atime_ns = atime_ns;
  r.mtime_ns = mtime_ns;
  return r;
}

SetAttrRequest Chmod(uint32_t mode) {
  SetAttrRequest r;
  r.mode = mode;
  return r;
}

// rsync's mkdir, utimens and chmod of a directory: the changes are journaled
// and shown at once (lookup, getattr, readdir), nothing is sent, and when
// due they land together as one operation of one transaction.
TEST_F(CommitPipelineTest, DirectoryAttributeChangesWaitForThePipelineAndLandTogether) {
  Mount m = NewMount("a");
  auto dir = m.ns->Mkdir(kRootIno, "d", 0700, 0, 0);
  ASSERT_TRUE(dir.ok());
  const int before = plan_->calls();
  ASSERT_TRUE(m.data->SetAttr(dir->ino, Times(1500000000000000000, 1600000000000000000)).ok());
  auto shown = m.data->SetAttr(dir->ino, Chmod(0755));
  ASSERT_TRUE(shown.ok()) << shown.status().ToString();
  EXPECT_EQ(shown->mode & 07777, 0755u);
  EXPECT_EQ(shown->mtime_ns, 1600000000000000000);
  EXPECT_EQ(plan_->calls(), before) << "nothing sent before the commit is due";
  EXPECT_EQ(m.meta->ListDeferredAttrs().size(), 1u) << "journaled, once";
  EXPECT_EQ(m.data->Pipeline().queued, 1u);
  auto looked = m.ns->Lookup(kRootIno, "d");
  ASSERT_TRUE(looked.ok());
  EXPECT_EQ(looked->mode & 07777, 0755u);
  EXPECT_EQ(looked->mtime_ns, 1600000000000000000);
  EXPECT_EQ(looked->atime_ns, 1500000000000000000);
  auto listed = m.ns->ReadDir(kRootIno);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].attr.mode & 07777, 0755u);
  EXPECT_EQ(StoredAttr(*raw_table_, "/", "d").mode & 07777, 0700u);

  Advance(600);
  const int due = plan_->calls();
  const int batches = plan_->calls("ExecuteBatch");
  EXPECT_EQ(m.data->CommitDue(), 1u);
  EXPECT_EQ(plan_->calls(), due + 1) << "one transaction, no read";
  EXPECT_EQ(plan_->calls("ExecuteBatch"), batches + 1);
  Attr stored = StoredAttr(*raw_table_, "/", "d");
  EXPECT_EQ(stored.mode & 07777, 0755u);
  EXPECT_EQ(stored.mtime_ns, 1600000000000000000);
  EXPECT_EQ(stored.atime_ns, 1500000000000000000);
  ExpectNothingDeferred(m);
}

// fsyncdir and syncfs (SyncAll) commit a deferred change at once.
TEST_F(CommitPipelineTest, SyncAllCommitsADeferredDirectoryChange) {
  Mount m = NewMount("a");
  auto dir = m.ns->Mkdir(kRootIno, "d", 0700, 0, 0);
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(m.data->SetAttr(dir->ino, Chmod(0750)).ok());
  EXPECT_EQ(StoredAttr(*raw_table_, "/", "d").mode & 07777, 0700u);
  ASSERT_TRUE(m.data->SyncAll().ok());
  EXPECT_EQ(StoredAttr(*raw_table_, "/", "d").mode & 07777, 0750u);
  EXPECT_EQ(m.data->Pipeline().queued, 0u);
  EXPECT_TRUE(m.meta->ListDeferredAttrs().empty());
}

// kill -9 after a directory's chmod and utimens returned: the next mount
// commits them from the journal.
TEST_F(CommitPipelineTest, ADeferredDirectoryChangeSurvivesACrash) {
  meta_file_ = "meta.db";
  {
    Mount m = NewMount("a");
    auto dir = m.ns->Mkdir(kRootIno, "d", 0700, 0, 0);
    ASSERT_TRUE(dir.ok());
    ASSERT_TRUE(m.data->SetAttr(dir->ino, Chmod(0751)).ok());
    ASSERT_TRUE(m.data->SetAttr(dir->ino, Times(1, 1700000000000000000)).ok());
    EXPECT_EQ(StoredAttr(*raw_table_, "/", "d").mode & 07777, 0700u);
    // kill -9: nothing more runs.
  }
  Mount after = NewMount("a");
  ASSERT_TRUE(after.data->ReplayJournal().ok());
  Attr stored = StoredAttr(*raw_table_, "/", "d");
  EXPECT_EQ(stored.mode & 07777, 0751u);
  EXPECT_EQ(stored.mtime_ns, 1700000000000000000);
  ExpectNothingDeferred(after);
}

// Another mount changed the directory's entry after this one read it: the
// commit's replace is refused (412), and it reads the entry again and
// applies only this mount's change over the other's.
TEST_F(CommitPipelineTest, ADeferredDirectoryChangeLandsOverAnotherMountsNewerEntry) {
  Mount a = NewMount("a");
  auto dir = a.ns->Mkdir(kRootIno, "d", 0700, 0, 0);
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(a.data->SetAttr(dir->ino, Chmod(0711)).ok());
  async_threads_ = -1;
  Mount c = NewMount("c");  // commit=close: its chown goes to the table now
  auto seen = c.ns->Lookup(kRootIno, "d");
  ASSERT_TRUE(seen.ok());
  SetAttrRequest chown;
  chown.uid = 42;
  ASSERT_TRUE(c.data->SetAttr(seen->ino, chown).ok());
  Advance(600);
  EXPECT_EQ(a.data->CommitDue(), 1u);
  Attr stored = StoredAttr(*raw_table_, "/", "d");
  EXPECT_EQ(stored.mode & 07777, 0711u);
  EXPECT_EQ(stored.uid, 42u) << "the other mount's change is kept";
  EXPECT_TRUE(a.meta->ListDeferredAttrs().empty());
}

// rmdir here takes the deferred change with it; a directory removed by
// another mount is not brought back by it.
TEST_F(CommitPipelineTest, ADeferredChangeOfARemovedDirectoryIsDropped) {
  Mount m = NewMount("a");
  auto d = m.ns->Mkdir(kRootIno, "d", 0700, 0, 0);
  auto e = m.ns->Mkdir(kRootIno, "e", 0700, 0, 0);
  ASSERT_TRUE(d.ok() && e.ok());
  ASSERT_TRUE(m.data->SetAttr(d->ino, Chmod(0755)).ok());
  ASSERT_TRUE(m.data->SetAttr(e->ino, Chmod(0755)).ok());
  ASSERT_TRUE(m.ns->Rmdir(kRootIno, "d").ok());
  // Another mount's rmdir of e: its "." row, then its entry.
  ASSERT_TRUE(
      raw_table_->Delete(kTable, PartitionKeyForDirectory("/e"), ".", Condition::IfMatch("*"))
          .ok());
  ASSERT_TRUE(raw_table_
                  ->Delete(kTable, PartitionKeyForDirectory("/"), RowKeyForName("e"),
                           Condition::IfMatch("*"))
                  .ok());
  Advance(600);
  m.data->CommitDue();
  EXPECT_FALSE(InTable("/", "d"));
  EXPECT_FALSE(InTable("/", "e")) << "not brought back";
  ExpectNothingDeferred(m);
}

// Another mount renamed the directory before the change was committed
// (seeds 59, 347, 623 of the simulation): the change follows the directory,
// found by the inode its "." row names, instead of being dropped.
TEST_F(CommitPipelineTest, ADeferredChangeFollowsADirectoryAnotherMountRenamed) {
  Mount a = NewMount("a");
  auto d = a.ns->Mkdir(kRootIno, "d", 0700, 0, 0);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(a.ns->Mkdir(kRootIno, "p", 0755, 0, 0).ok());
  ASSERT_TRUE(a.data->SetAttr(d->ino, Chmod(0750)).ok());
  async_threads_ = -1;
  Mount c = NewMount("c");
  auto p = c.ns->Lookup(kRootIno, "p");
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(c.ns->Rename(kRootIno, "d", p->ino, "moved", 0).ok());
  Advance(600);
  EXPECT_EQ(a.data->CommitDue(), 1u);
  Attr stored = StoredAttr(*raw_table_, "/p", "moved");
  EXPECT_EQ(stored.ino, d->ino);
  EXPECT_EQ(stored.mode & 07777, 0750u) << "the change went where the directory is";
  EXPECT_FALSE(InTable("/", "d")) << "and brought nothing back under the old name";
  ExpectNothingDeferred(a);
}

// This mount's rename of the parent failed half way (its "." row gone, the
// entry still in the old partition; seed 1211): the commit finishes the
// rename first and lands the change where the directory ends up.
TEST_F(CommitPipelineTest, ADeferredChangeUnderAHalfDoneRenameLandsAfterIt) {
  Mount m = NewMount("a");
  auto top = m.ns->Mkdir(kRootIno, "top", 0755, 0, 0);
  ASSERT_TRUE(top.ok());
  auto sub = m.ns->Mkdir(top->ino, "sub", 0700, 0, 0);
  ASSERT_TRUE(sub.ok());
  ASSERT_TRUE(m.data->SetAttr(sub->ino, Chmod(0751)).ok());
  // The rename's moves of rows fail once it closed the old partition.
  const auto closed = [&] {
    return !raw_table_->Get(kTable, PartitionKeyForDirectory("/top"), ".").ok();
  };
  plan_->SetInjector([&](const std::string& op, int) {
    return op == "ExecuteBatch" && closed() ? Status(Code::kInternal, "injected 500")
                                            : Status::Ok();
  });
  EXPECT_FALSE(m.ns->Rename(kRootIno, "top", kRootIno, "renamed", 0).ok());
  plan_->SetInjector(nullptr);
  ASSERT_TRUE(closed());
  ASSERT_TRUE(InTable("/top", "sub")) << "the entry is still in the closed partition";
  Advance(600);
  m.data->CommitDue();
  Attr stored = StoredAttr(*raw_table_, "/renamed", "sub");
  EXPECT_EQ(stored.ino, sub->ino);
  EXPECT_EQ(stored.mode & 07777, 0751u);
  EXPECT_TRUE(m.meta->ListDeferredAttrs().empty());
}

// Sibling directories' changes due together share transactions of their
// parent (rsync sets each directory's times after its files): one per
// sibling without grouping.
TEST_F(CommitPipelineTest, SiblingDirectoriesDeferredChangesShareATransaction) {
  Mount m = PipelineMount(4, 200);
  std::vector<uint64_t> dirs;
  for (int i = 0; i < 6; ++i) {
    auto d = m.ns->Mkdir(kRootIno, "d" + std::to_string(i), 0700, 0, 0);
    ASSERT_TRUE(d.ok());
    dirs.push_back(d->ino);
  }
  const int before = plan_->calls("ExecuteBatch");
  // The first transaction is held on the wire: the others, due with it,
  // queue behind it meanwhile and share the next one.
  std::atomic<bool> first{true};
  plan_->SetInjector([&](const std::string& op, int) {
    if (op == "ExecuteBatch" && first.exchange(false))
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return Status::Ok();
  });
  for (uint64_t ino : dirs) ASSERT_TRUE(m.data->SetAttr(ino, Chmod(0755)).ok());
  EXPECT_TRUE(Eventually([&] { return m.data->Pipeline().queued == 0; }));
  plan_->SetInjector(nullptr);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(StoredAttr(*raw_table_, "/", "d" + std::to_string(i)).mode & 07777, 0755u);
  EXPECT_LE(plan_->calls("ExecuteBatch") - before, 2);
}

}  // namespace
}  // namespace stampfs
