// Renames that crash at every step (tests/unit, on the fakes).
//
// A crash is modelled with a FaultPlan: from the Kth storage call of the
// rename on, every call fails (the process stopped talking; nothing after
// that point reaches the service), either before the Kth call is applied or
// after it (its response lost). Then a fresh Namespace on the same stores
// (the next mount: its Init rolls forward), or fsck --repair, must leave the
// tree fully renamed or untouched, never an entry in both places or in
// neither, with no stray blob and a clean fsck.
#include <atomic>
#include <iostream>
#include <thread>

#include "tests/unit/rename_fixture.h"

namespace stampfs {
namespace {

class RenameCrashTest : public RenameFixture {
 protected:
  int calls_ = 0;  // storage calls of an uninterrupted rename
};

// Starting tree: /a/x, /a/d/{f1, sub/f2, sub/deep/, ln -> f1}, /b/y, /b/empty/.
class RenameCrashTestP : public RenameCrashTest,
                         public ::testing::WithParamInterface<std::tuple<RenameCase, bool, bool>> {
};

TEST_P(RenameCrashTestP, EveryCrashPointEndsFullyRenamedOrUntouched) {
  const auto& [c, after_call, by_fsck] = GetParam();
  auto trial = [&](int k, Tree* before, bool* finished) {
    Reset();
    Mount m = NewMount();
    MakeTree(*m.ns);
    *before = Snapshot();
    auto from_parent = m.ns->Lookup(kRootIno, c.from.substr(1, 1));
    auto to_parent = m.ns->Lookup(kRootIno, c.to.substr(1, 1));
    ASSERT_TRUE(from_parent.ok() && to_parent.ok());
    if (k > 0) CrashAt(k, after_call);
    const int start = plan_->calls();
    auto r = m.ns->Rename(from_parent->ino, BaseName(c.from), to_parent->ino, BaseName(c.to), 0);
    *finished = r.ok();
    if (k == 0) {
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      *finished = true;
      // Remember how many calls an uninterrupted rename makes.
      calls_ = plan_->calls() - start;
    }
    plan_->Clear();
  };
  Tree before;
  bool finished = false;
  trial(0, &before, &finished);
  const Tree renamed = Renamed(before, c.from, c.to, c.replaces);
  ASSERT_EQ(Snapshot(), renamed);
  ASSERT_EQ(BlobNames(), BlobsOf(renamed));
  ASSERT_GT(calls_, 4);
  int untouched = 0, rolled = 0, rolled_forward = 0;
  for (int k = 1; k <= calls_; ++k) {
    SCOPED_TRACE("crash at call " + std::to_string(k) + " of " + std::to_string(calls_));
    trial(k, &before, &finished);
    if (by_fsck) {
      FsckReport repaired = Fsck(true);
      EXPECT_TRUE(repaired.clean()) << Findings(repaired);
    }
    // The next mount (its Init rolls forward what fsck did not).
    const Tree after = Snapshot();
    EXPECT_EQ(Intents(), 0u);
    if (after == before) {
      untouched++;
      EXPECT_EQ(BlobNames(), BlobsOf(before));
    } else {
      rolled++;
      if (!finished) rolled_forward++;  // the rename failed: the next mount or fsck finished it
      EXPECT_EQ(after, renamed);
      EXPECT_EQ(BlobNames(), BlobsOf(renamed));
    }
    FsckReport report = Fsck(false);
    EXPECT_TRUE(report.findings.empty()) << Findings(report);
  }
  // Only a crash at the intent's own insert leaves the tree untouched.
  EXPECT_GE(rolled, calls_ - 6);
  EXPECT_GE(untouched, 1);
  EXPECT_GE(rolled_forward, calls_ / 2) << "of " << calls_ << " crash points";
  std::cout << c.name << ": " << calls_ << " crash points: " << untouched << " untouched, "
            << rolled_forward << " rolled forward after the crash, " << rolled - rolled_forward
            << " finished before it\n";
}

// The rename stops at any call (every later call fails; the move may have
// been applied) and another mount removes the new name before anything
// finishes the rename: the roll-forward then finds the entry in neither
// place and must still delete the source's blob version, which no entry
// names (it was left as an orphan blob).
TEST_F(RenameCrashTest, AnUnfinishedRenameWhoseTargetIsRemovedLeavesNoBlob) {
  int removed_targets = 0;
  for (int k = 1; k < 40; ++k) {
    SCOPED_TRACE("crash at call " + std::to_string(k));
    Reset();
    Mount m = NewMount();
    MakeTree(*m.ns);
    Mount other = NewMount();
    auto a = m.ns->Lookup(kRootIno, "a");
    auto other_a = other.ns->Lookup(kRootIno, "a");
    ASSERT_TRUE(a.ok() && other_a.ok());
    CrashAt(k, true);
    const bool renamed = m.ns->Rename(a->ino, "x", a->ino, "z", 0).ok();
    plan_->Clear();
    plan_->SetInjector(nullptr);
    if (renamed) break;  // k is past the rename's last call
    if (auto gone = other.ns->Unlink(other_a->ino, "z"); gone.ok()) {
      removed_targets++;  // its blob is the caller's to delete (fs/fuse/fuse_ops.cc)
      if (!gone->blob_etag.empty()) {
        ASSERT_TRUE(blobs_->Delete(kContainer, gone->blob, Condition::IfMatch(gone->blob_etag)).ok());
      }
    }
    Mount next = NewMount();  // its Init finishes the rename
    EXPECT_EQ(Intents(), 0u);
    FsckReport report = Fsck(false);  // blob-without-entry among its findings
    EXPECT_TRUE(report.findings.empty()) << Findings(report);
  }
  EXPECT_GT(removed_targets, 0);
}

INSTANTIATE_TEST_SUITE_P(Renames, RenameCrashTestP,
                         ::testing::Combine(::testing::ValuesIn(RenameCases()), ::testing::Bool(),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) +
                                  (std::get<1>(info.param) ? "_ResponseLost" : "_Unsent") +
                                  (std::get<2>(info.param) ? "_Fsck" : "_Remount");
                         });

}  // namespace
}  // namespace stampfs

namespace stampfs {
namespace {

// rmdir on one mount while another fills the directory: the other mount's
// change lands between rmdir's emptiness check and its delete of "." (the
// injector runs it there), so rmdir must fail with ENOTEMPTY and the new
// entry stay reachable.
class RmdirRaceTest : public RenameCrashTest {
 protected:
  void SetUp() override { Reset(); }

  Status RmdirWhile(Mount& a, const std::function<void()>& other_mount_change) {
    std::atomic<bool> fired{false};
    plan_->SetInjector([&](const std::string& op, int) {
      if (op == "Delete" && !fired.exchange(true)) other_mount_change();
      return Status::Ok();
    });
    Status s = a.ns->Rmdir(kRootIno, "d");
    plan_->Clear();
    return s;
  }

  // /d and /f exist; mount B's `change` to /d lands inside mount A's rmdir
  // and makes `made`: rmdir fails with ENOTEMPTY and `made` stays reachable.
  void ExpectRmdirRefused(const std::function<Status(Namespace&, uint64_t)>& change,
                          const std::string& made) {
    Mount a = NewMount();
    Mount b = NewMount();
    ASSERT_NE(Dir(*a.ns, kRootIno, "d"), 0u);
    File(*a.ns, kRootIno, "/f", "data");
    auto d = b.ns->Lookup(kRootIno, "d");
    ASSERT_TRUE(d.ok());
    Status s = RmdirWhile(a, [&] { ASSERT_TRUE(change(*b.ns, d->ino).ok()); });
    EXPECT_EQ(s.code(), Code::kNotEmpty) << s.ToString();
    Tree t = Snapshot();
    EXPECT_EQ(t.count("/d"), 1u);
    EXPECT_EQ(t.count(made), 1u);
    FsckReport report = Fsck(false);
    EXPECT_TRUE(report.findings.empty()) << Findings(report);
  }
};

TEST_F(RmdirRaceTest, RmdirFailsWithNotEmptyWhenAnotherMountCreatesAFileMeanwhile) {
  ExpectRmdirRefused(
      [](Namespace& b, uint64_t d) { return StatusOf(b.Create(d, "x", 0644, 0, 0)); }, "/d/x");
}

TEST_F(RmdirRaceTest, RmdirFailsWithNotEmptyWhenAnotherMountMakesADirectoryMeanwhile) {
  ExpectRmdirRefused([](Namespace& b, uint64_t d) { return StatusOf(b.Mkdir(d, "x", 0755, 0, 0)); },
                     "/d/x");
}

TEST_F(RmdirRaceTest, RmdirFailsWithNotEmptyWhenAnotherMountRenamesAFileIntoIt) {
  ExpectRmdirRefused(
      [](Namespace& b, uint64_t d) { return StatusOf(b.Rename(kRootIno, "f", d, "x", 0)); },
      "/d/x");
}

// The other order: rmdir wins, then a rename into the removed directory
// fails with ENOENT and leaves the file where it was (its copied blob undone).
TEST_F(RmdirRaceTest, RenameIntoADirectoryRemovedMeanwhileFailsAndKeepsTheFile) {
  Mount a = NewMount();
  Mount b = NewMount();
  ASSERT_NE(Dir(*a.ns, kRootIno, "d"), 0u);
  File(*a.ns, kRootIno, "/f", "data");
  auto d = b.ns->Lookup(kRootIno, "d");
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(a.ns->Rmdir(kRootIno, "d").ok());
  auto r = b.ns->Rename(kRootIno, "f", d->ino, "f", 0);
  EXPECT_EQ(r.status().code(), Code::kNotFound) << r.status().ToString();
  EXPECT_EQ(Snapshot(), (Tree{{"/f", "f data"}}));
  EXPECT_EQ(BlobNames(), (std::set<std::string>{"f"}));
  EXPECT_EQ(Intents(), 0u);
}

// Threads: one mount renames files into /d and creates files in it while the
// other keeps emptying and removing /d. Every file ends in /src, in /d, or
// was unlinked by the remover; none is left in a removed directory.
TEST_F(RmdirRaceTest, ConcurrentRenamesIntoAndRmdirNeverOrphanAFile) {
  Mount a = NewMount();
  Mount b = NewMount();
  uint64_t src = Dir(*a.ns, kRootIno, "src");
  int removed = 0;
  for (int trial = 0; trial < 15; ++trial) {
    ASSERT_NE(Dir(*a.ns, kRootIno, "d"), 0u);
    for (int i = 0; i < 4; ++i) File(*a.ns, src, "/src/f" + std::to_string(i), "x");
    auto d = b.ns->Lookup(kRootIno, "d");
    auto bsrc = b.ns->Lookup(kRootIno, "src");
    ASSERT_TRUE(d.ok() && bsrc.ok());
    std::thread filler([&] {
      for (int i = 0; i < 4; ++i) {
        b.ns->Rename(bsrc->ino, "f" + std::to_string(i), d->ino, "f" + std::to_string(i), 0)
            .status()
            .PermitUnchecked();
        b.ns->Create(d->ino, "n" + std::to_string(i), 0644, 0, 0).status().PermitUnchecked();
      }
    });
    Status s;
    for (int i = 0; i < 20; ++i) {
      s = a.ns->Rmdir(kRootIno, "d");
      if (s.ok()) break;
      ASSERT_EQ(s.code(), Code::kNotEmpty) << s.ToString();
      auto ad = a.ns->Lookup(kRootIno, "d");
      ASSERT_TRUE(ad.ok());
      auto listing = table_->QueryPartition(kTable, PartitionKeyForDirectory("/d"));
      ASSERT_TRUE(listing.ok());
      for (const Entity& e : *listing) {
        if (e.row_key == ".") continue;
        a.ns->Unlink(ad->ino, *NameOfEntry(e)).status().PermitUnchecked();
      }
    }
    filler.join();
    if (s.ok()) {
      removed++;
      EXPECT_EQ(table_->QueryPartition(kTable, PartitionKeyForDirectory("/d"))->size(), 0u)
          << "trial " << trial << ": an entry left in a removed directory";
    } else {
      auto ad = a.ns->Lookup(kRootIno, "d");
      ASSERT_TRUE(ad.ok());
      auto rows = table_->QueryPartition(kTable, PartitionKeyForDirectory("/d"));
      ASSERT_TRUE(rows.ok());
      for (const Entity& e : *rows) {
        if (e.row_key != ".") a.ns->Unlink(ad->ino, *NameOfEntry(e)).status().PermitUnchecked();
      }
      ASSERT_TRUE(a.ns->Rmdir(kRootIno, "d").ok());
    }
    // What is left in /src is what was never moved; clear it for the next trial.
    auto left = table_->QueryPartition(kTable, PartitionKeyForDirectory("/src"));
    ASSERT_TRUE(left.ok());
    for (const Entity& e : *left) {
      if (e.row_key == ".") continue;
      auto gone = a.ns->Unlink(src, *NameOfEntry(e));
      EXPECT_TRUE(gone.ok()) << gone.status().ToString();
    }
    EXPECT_EQ(Intents(), 0u);
  }
  EXPECT_GT(removed, 0);
  FsckReport report = Fsck(false);
  // Unlink leaves blob deletion to the data path: only blobs may be unreferenced.
  for (const auto& f : report.findings) {
    EXPECT_EQ(f.kind, FsckKind::kBlobWithoutEntry) << Findings(report);
  }
}

}  // namespace
}  // namespace stampfs

namespace stampfs {
namespace {

// Two mounts rename one entry to different names at the same moment: the
// second mount's whole rename runs inside the first one's, at its first call
// of `op` after its intent is written (Get: before it reads the source;
// ExecuteBatch: between that read and its claim; Copy: after its claim).
// One wins; the other gets ENOENT and moves nothing. Never an entry in both
// places.
class ConcurrentRenameTest : public RenameCrashTest,
                             public ::testing::WithParamInterface<std::tuple<bool, const char*>> {
 protected:
  void SetUp() override { Reset(); }
};

TEST_P(ConcurrentRenameTest, OfTwoMountsRenamingOneEntryOneWinsAndNothingIsDuplicated) {
  const auto [dir, when] = GetParam();
  Mount a = NewMount();
  Mount b = NewMount();
  uint64_t x = Dir(*a.ns, kRootIno, "x");
  Dir(*a.ns, kRootIno, "y");
  Dir(*a.ns, kRootIno, "z");
  if (dir) {
    uint64_t s = Dir(*a.ns, x, "s");
    File(*a.ns, s, "/x/s/f", "data");
  } else {
    File(*a.ns, x, "/x/s", "data");
  }
  auto bx = b.ns->Lookup(kRootIno, "x");
  auto bz = b.ns->Lookup(kRootIno, "z");
  ASSERT_TRUE(bx.ok() && bz.ok());
  auto ay = a.ns->Lookup(kRootIno, "y");
  ASSERT_TRUE(ay.ok());
  Status b_result;
  std::atomic<bool> fired{false};
  plan_->SetInjector([&](const std::string& op, int) {
    // A's first call after its intent insert: B's whole rename runs here.
    if (op == when && Intents() == 1 && !fired.exchange(true)) {
      b_result = StatusOf(b.ns->Rename(bx->ino, "s", bz->ino, "s", 0));
    }
    return Status::Ok();
  });
  Status a_result = StatusOf(a.ns->Rename(x, "s", ay->ino, "s", 0));
  plan_->Clear();
  ASSERT_TRUE(fired);
  EXPECT_NE(a_result.ok(), b_result.ok()) << a_result.ToString() << " / " << b_result.ToString();
  EXPECT_TRUE(a_result.ok() || a_result.Is(Code::kNotFound)) << a_result.ToString();
  EXPECT_TRUE(b_result.ok() || b_result.Is(Code::kNotFound)) << b_result.ToString();
  Tree t = Snapshot();
  const std::string winner = a_result.ok() ? "/y/s" : "/z/s";
  EXPECT_EQ(t.count("/x/s") + t.count("/y/s") + t.count("/z/s"), 1u);
  EXPECT_EQ(t.count(winner), 1u);
  EXPECT_EQ(t[dir ? winner + "/f" : winner], "f data");
  EXPECT_EQ(Intents(), 0u);
  FsckReport report = Fsck(false);
  EXPECT_TRUE(report.findings.empty()) << Findings(report);
}

INSTANTIATE_TEST_SUITE_P(FileAndDirectory, ConcurrentRenameTest,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Values("Get", "ExecuteBatch", "Copy")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "Directory" : "File") +
                                  "_InsideTheFirsts" + std::get<1>(info.param);
                         });

}  // namespace
}  // namespace stampfs

namespace stampfs {
namespace {

class IntentOwnershipTest : public RenameCrashTest {
 protected:
  void SetUp() override { Reset(); }
};

// An intent written by a mount on another host is that mount's while the
// grace period runs: a new mount leaves it; after the grace, it is finished.
TEST_F(IntentOwnershipTest, AnotherHostsFreshIntentIsLeftToItUntilTheGraceEnds) {
  {
    Mount m = NewMount();
    uint64_t a = Dir(*m.ns, kRootIno, "a");
    Dir(*m.ns, kRootIno, "b");
    File(*m.ns, a, "/a/f", "data");
  }
  WriteIntent("/a/f", "/b/f", NowNs());

  EXPECT_EQ(Snapshot().count("/a/f"), 1u) << "a live mount's intent was taken over";
  EXPECT_EQ(Intents(), 1u);

  NamespaceOptions o;
  o.container = kContainer;
  o.table = kTable;
  o.intent_grace_ms = 0;
  Namespace late(*table_, *blobs_, nullptr, o);
  ASSERT_TRUE(late.Init().ok());
  EXPECT_EQ(Intents(), 0u);
  Tree t = Snapshot();
  EXPECT_EQ(t.count("/a/f"), 0u);
  EXPECT_EQ(t["/b/f"], "f data");
  EXPECT_EQ(BlobNames(), (std::set<std::string>{"b/f"}));
}

}  // namespace
}  // namespace stampfs
