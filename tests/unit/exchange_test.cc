// RENAME_EXCHANGE of files with data (fs/namespace/namespace_exchange.cc), on the
// fakes: the swap, the roll-forward that puts each blob back under its
// entry's path, and a crash at every storage call of both.
#include <sys/stat.h>

#include <iostream>

#include "fs/fuse/errno_map.h"
#include "fs/namespace/hard_links.h"
#include "fs/admin/import.h"
#include "fs/namespace/rename_view.h"
#include "tests/unit/exchange_fixture.h"

namespace stampfs {
namespace {

class ExchangeTest : public ExchangeFixture {
 protected:
  // /d/a ("data of a"), /d/b ("bee"), /d/s -> "ts", /d/sub/, /d/new (no data yet).
  void MakeDir(Namespace& ns) {
    uint64_t d = Dir(ns, kRootIno, "d");
    File(ns, d, "/d/a", "data of a");
    File(ns, d, "/d/b", "bee");
    ASSERT_TRUE(ns.Symlink(d, "s", "ts", 0, 0).ok());
    Dir(ns, d, "sub");
    ASSERT_TRUE(ns.Create(d, "new", 0644, 0, 0).ok());
  }
};

TEST_F(ExchangeTest, TwoFilesWithDataSwapNamesAndBlobs) {
  Mount m = NewMount();
  MakeDir(*m.ns);
  const uint64_t ia = InoOf(*m.ns, "/d/a"), ib = InoOf(*m.ns, "/d/b");
  auto r = Exchange(*m.ns, "/d/a", "/d/b");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(InoOf(*m.ns, "/d/a"), ib);
  EXPECT_EQ(InoOf(*m.ns, "/d/b"), ia);
  Tree t = Snapshot();
  EXPECT_EQ(t["/d/a"], "f bee");
  EXPECT_EQ(t["/d/b"], "f data of a");
  // What other Azure tools see: each blob under the path whose data it is.
  EXPECT_EQ(BlobData("/d/a"), "bee");
  EXPECT_EQ(BlobData("/d/b"), "data of a");
  EXPECT_EQ(BlobNames(), (std::set<std::string>{"d/a", "d/b"}));
  EXPECT_EQ(Intents(), 0u);
  for (const char* p : {"/d/a", "/d/b"}) {
    auto e = table_->Get(kTable, PartitionKeyForDirectory("/d"), RowKeyForName(BaseName(p)));
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(*e->GetString("blob"), BlobNameFor(p));
    EXPECT_EQ(e->GetString(kRenamingProperty), nullptr) << p << ": the claim is dropped";
  }
  FsckReport report = Fsck(false);
  EXPECT_TRUE(report.findings.empty()) << Findings(report);
  // And back.
  ASSERT_TRUE(Exchange(*m.ns, "/d/b", "/d/a").ok());
  EXPECT_EQ(Raw("/d/a"), "f data of a");
  EXPECT_EQ(BlobData("/d/b"), "bee");
}

TEST_F(ExchangeTest, AFileWithDataAndEntriesWithout) {
  for (const char* other : {"/d/s", "/d/new"}) {
    SCOPED_TRACE(other);
    Reset();
    Mount m = NewMount();
    MakeDir(*m.ns);
    const std::string before = Raw(other);
    ASSERT_TRUE(Exchange(*m.ns, "/d/a", other).ok());
    EXPECT_EQ(Raw(other), "f data of a");
    EXPECT_EQ(Raw("/d/a"), before);
    EXPECT_EQ(BlobData(other), "data of a");
    EXPECT_EQ(BlobNames(), (std::set<std::string>{"d/b", BlobNameFor(other)}));
    EXPECT_EQ(Intents(), 0u);
    FsckReport report = Fsck(false);
    EXPECT_TRUE(report.findings.empty()) << Findings(report);
  }
}

TEST_F(ExchangeTest, AnUncommittedFileSwappedWithDataCommitsUnderItsNewName) {
  Mount m = NewMount();
  MakeDir(*m.ns);
  const uint64_t inew = InoOf(*m.ns, "/d/new");
  ASSERT_TRUE(Exchange(*m.ns, "/d/new", "/d/a").ok());
  ExpectFirstCommitAtNewName(*m.ns, inew, "/d/a", "/d/new", "data of a");
}

TEST_F(ExchangeTest, Refusals) {
  Mount m = NewMount();
  MakeDir(*m.ns);
  uint64_t e = Dir(*m.ns, kRootIno, "e");
  File(*m.ns, e, "/e/c", "sea");
  ASSERT_TRUE(m.ns->Link(InoOf(*m.ns, "/d/b"), e, "hard").ok());
  auto ex = [&](const char* x, const char* y) { return ErrnoFor(Exchange(*m.ns, x, y).status()); };
  EXPECT_EQ(ex("/d/a", "/d/sub"), EINVAL) << "a directory";
  EXPECT_EQ(ex("/e/c", "/e/hard"), EINVAL) << "a hard-linked name";
  EXPECT_EQ(ex("/d/a", "/e/hard"), EINVAL) << "a hard-linked name in another directory";
  EXPECT_EQ(ex("/e/c", "/d/sub"), EINVAL) << "a directory in another directory";
  EXPECT_EQ(Raw("/d/a"), "f data of a");
  EXPECT_EQ(Raw("/e/c"), "f sea");
  EXPECT_EQ(Intents(), 0u);
}

TEST_F(ExchangeTest, AnEntryAnotherMountIsRenamingIsNotExchanged) {
  Mount m = NewMount();
  MakeDir(*m.ns);
  RenameIntent intent = WriteIntent("/d/a", "/d/z", NowNs());
  auto e = table_->Get(kTable, PartitionKeyForDirectory("/d"), RowKeyForName("a"));
  ASSERT_TRUE(e.ok());
  e->properties[kRenamingProperty] = intent.id;
  ASSERT_TRUE(table_->Update(kTable, *e, UpdateMode::kReplace, Condition::None()).ok());
  EXPECT_EQ(ErrnoFor(Exchange(*m.ns, "/d/a", "/d/b").status()), ENOENT);
  EXPECT_EQ(Raw("/d/a"), "f data of a");
}

// Stopped between the swap and the end of the roll-forward: a read-only
// mount (through its roll-forward view) and an import with refresh (while
// the exchanging mount may still be at it) take the stored state as it is:
// every entry names the blob holding its data. fsck --repair finishes it.
TEST_F(ExchangeTest, HalfwayItIsReadRightByReadOnlyMountsAndLeftAloneByImport) {
  int halfway = 0;
  for (int k = 5; k < 24; ++k) {
    SCOPED_TRACE("stopped at call " + std::to_string(k));
    Reset();
    Mount m = NewMount();
    MakeDir(*m.ns);
    CrashAt(k, true);
    auto r = Exchange(*m.ns, "/d/a", "/d/b");
    plan_->Clear();
    plan_->SetInjector(nullptr);
    if (Intents() == 0) continue;
    if (Raw("/d/a") != "f bee") continue;  // not swapped yet
    halfway++;
    // As if a live mount on another host were still at it: an import (whose
    // start rolls forward what no live mount may be running) leaves it.
    auto rows = table_->QueryPartition(kTable, kIntentsPartition);
    ASSERT_TRUE(rows.ok() && rows->size() == 1);
    Entity row = rows->front();
    row.properties["host"] = std::string("another-host");
    row.properties["mount"] = std::string("elsewhere");
    row.properties["created"] = NowNs();
    ASSERT_TRUE(table_->Update(kTable, row, UpdateMode::kReplace, Condition::None()).ok());
    RollForwardViewOptions vo;
    vo.table = kTable;
    vo.refresh_ms = 0;
    auto view = MakeRollForwardView(*faulty_table_, vo);
    Mount ro = NewMount(true, view.get());
    Tree t = Snapshot(ro.ns.get());
    EXPECT_EQ(t["/d/a"], "f bee");
    EXPECT_EQ(t["/d/b"], "f data of a");
    ImportOptions io;
    io.container = kContainer;
    io.table = kTable;
    io.refresh = true;
    auto imported = Importer(*table_, *blobs_, io).Run();
    ASSERT_TRUE(imported.ok()) << imported.status().ToString();
    EXPECT_EQ(imported->updated, 0u);
    EXPECT_EQ(imported->files_created, 0u) << "the temporary blob is no file";
    EXPECT_EQ(imported->dirs_created, 0u);
    EXPECT_EQ(Raw("/d/a"), "f bee");
    EXPECT_EQ(Raw("/d/b"), "f data of a");
    EXPECT_EQ(Intents(), 1u);
    FsckReport repaired = Fsck(true);  // finishes it
    EXPECT_TRUE(repaired.clean()) << Findings(repaired);
    Tree after = View();
    EXPECT_EQ(after["/d/a"], "f bee");
    EXPECT_EQ(after["/d/b"], "f data of a");
    EXPECT_EQ(Intents(), 0u);
    EXPECT_EQ(BlobData("/d/a"), "bee");
    EXPECT_EQ(BlobNames(), (std::set<std::string>{"d/a", "d/b"}));
  }
  EXPECT_GE(halfway, 5);
}

// A crash at every storage call of the exchange, the call applied or not:
// at the crash both names read the right data (or the old one), and the
// next mount or fsck --repair leaves both exchanged, each blob under its
// path, no other blob, no intent, fsck clean.
class ExchangeCrashTest : public ExchangeTest,
                          public ::testing::WithParamInterface<std::tuple<const char*, bool, bool>> {
};

TEST_P(ExchangeCrashTest, EveryCrashPointEndsExchangedOrUntouched) {
  const auto& [other, after_call, by_fsck] = GetParam();
  const std::string y = std::string("/d/") + other;
  int calls = 0;
  Tree before, exchanged;
  auto trial = [&](int k, bool* finished) {
    Reset();
    Mount m = NewMount();
    MakeDir(*m.ns);
    before = View();
    if (k > 0) CrashAt(k, after_call);
    const int start = plan_->calls();
    auto r = Exchange(*m.ns, "/d/a", y);
    *finished = r.ok() && plan_->calls() - start <= calls;
    if (k == 0) {
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      calls = plan_->calls() - start;
    }
    plan_->Clear();
    plan_->SetInjector(nullptr);
  };
  bool finished = false;
  trial(0, &finished);
  exchanged = before;
  std::swap(exchanged["/d/a"], exchanged[y]);
  ASSERT_EQ(View(), exchanged);
  ASSERT_EQ(BlobNames(), DataBlobs(exchanged));
  ASSERT_GT(calls, 4);
  int untouched = 0, done = 0;
  for (int k = 1; k <= calls; ++k) {
    SCOPED_TRACE("crash at call " + std::to_string(k) + " of " + std::to_string(calls));
    trial(k, &finished);
    // At the crash, before any roll-forward: each name reads one of the two
    // files whole, and the two names never read the same file.
    const std::string ra = Raw("/d/a"), ry = Raw(y);
    const bool old = ra == before["/d/a"] && ry == before[y];
    const bool swapped = ra == before[y] && ry == before["/d/a"];
    EXPECT_TRUE(old || swapped) << "/d/a: " << ra << ", " << y << ": " << ry;
    if (by_fsck) {
      FsckReport repaired = Fsck(true);
      EXPECT_TRUE(repaired.clean()) << Findings(repaired);
    }
    const Tree after = View();  // a new mount: its Init rolls forward
    EXPECT_EQ(Intents(), 0u);
    if (after == before) {
      untouched++;
      EXPECT_EQ(BlobNames(), DataBlobs(before));
    } else {
      done++;
      EXPECT_EQ(after, exchanged);
      EXPECT_EQ(BlobNames(), DataBlobs(exchanged));
      if (DataBlobs(before).count(BlobNameFor(y))) {
        EXPECT_EQ(BlobData("/d/a"), before[y].substr(2));
      }
      EXPECT_EQ(BlobData(y), "data of a");
    }
    FsckReport report = Fsck(false);
    EXPECT_TRUE(report.findings.empty()) << Findings(report);
  }
  EXPECT_GE(untouched, 1);
  EXPECT_GE(done, calls / 2);
  std::cout << "exchange with " << other << ": " << calls << " crash points: " << untouched
            << " untouched, " << done << " exchanged\n";
}

INSTANTIATE_TEST_SUITE_P(Exchanges, ExchangeCrashTest,
                         ::testing::Combine(::testing::Values("b", "s", "new"), ::testing::Bool(),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_ResponseLost" : "_Unsent") +
                                  (std::get<2>(info.param) ? "_Fsck" : "_NextMount");
                         });

}  // namespace
}  // namespace stampfs
