// RENAME_EXCHANGE of entries of two directories (fs/namespace/namespace_xexchange.cc),
// on the fakes: every kind of pair, a crash at every storage call (the next
// mount or fsck --repair finishes it), other mounts meanwhile, and the
// roll-forward deciding each step from what the table holds.
#include <fcntl.h>
#include <sys/stat.h>

#include <iostream>

#include "fs/fuse/errno_map.h"
#include "tests/unit/exchange_fixture.h"

namespace stampfs {
namespace {

class XExchangeTest : public ExchangeFixture {
 protected:
  // /d/a ("data of a"), /d/s -> "ts", /d/new (no data yet), /d/other ("other");
  // /e/b ("bee"), /e/t -> "tt", /e/fifo, /e/sub/.
  void MakeDirs(Namespace& ns) {
    uint64_t d = Dir(ns, kRootIno, "d");
    uint64_t e = Dir(ns, kRootIno, "e");
    File(ns, d, "/d/a", "data of a");
    ASSERT_TRUE(ns.Symlink(d, "s", "ts", 0, 0).ok());
    ASSERT_TRUE(ns.Create(d, "new", 0644, 0, 0).ok());
    File(ns, d, "/d/other", "other");
    File(ns, e, "/e/b", "bee");
    ASSERT_TRUE(ns.Symlink(e, "t", "tt", 0, 0).ok());
    ASSERT_TRUE(ns.Mknod(e, "fifo", S_IFIFO | 0644, 0, 0, 0).ok());
    Dir(ns, e, "sub");
  }

  std::optional<Entity> Row(const std::string& p) {
    auto e = table_->Get(kTable, PartitionKeyForDirectory(ParentPath(p)), RowKeyForName(BaseName(p)));
    if (!e.ok()) return std::nullopt;
    return *e;
  }

  bool Claimed(const std::string& p) {
    auto e = Row(p);
    return e && e->GetString(kRenamingProperty) && !e->GetString(kRenamingProperty)->empty();
  }

  // The intent left by a crashed exchange, made to look like a live mount's
  // on another host (no mount takes it over before the grace period).
  void IntentOfALiveMount() {
    auto rows = table_->QueryPartition(kTable, kIntentsPartition);
    ASSERT_TRUE(rows.ok() && rows->size() == 1);
    Entity row = rows->front();
    row.properties["host"] = std::string("another-host");
    row.properties["mount"] = std::string("elsewhere");
    row.properties["created"] = NowNs();
    ASSERT_TRUE(table_->Update(kTable, row, UpdateMode::kReplace, Condition::None()).ok());
  }

  // Runs the exchange of /d/a and /e/b and stops it at the first storage
  // call after which `stopped()` holds (false: never).
  bool StopWhen(const std::function<bool()>& stopped) {
    for (int k = 1; k < 40; ++k) {
      Reset();
      Mount m = NewMount();
      MakeDirs(*m.ns);
      CrashAt(k, true);
      auto r = Exchange(*m.ns, "/d/a", "/e/b");
      plan_->Clear();
      plan_->SetInjector(nullptr);
      if (r.ok()) return false;
      if (stopped()) return true;
    }
    return false;
  }

  bool Claims() { return Claimed("/d/a") && Claimed("/e/b") && Raw("/d/a") == "f data of a"; }
  bool BothB() { return Raw("/d/a") == "f bee" && Raw("/e/b") == "f bee"; }

  void ExpectExchanged() {
    Tree t = View();
    EXPECT_EQ(t["/d/a"], "f bee");
    EXPECT_EQ(t["/e/b"], "f data of a");
    EXPECT_EQ(Intents(), 0u);
    EXPECT_EQ(BlobData("/d/a"), "bee");
    EXPECT_EQ(BlobData("/e/b"), "data of a");
    EXPECT_EQ(BlobNames(), DataBlobs(t));
    EXPECT_FALSE(Claimed("/d/a"));
    EXPECT_FALSE(Claimed("/e/b"));
    FsckReport report = Fsck(false);
    EXPECT_TRUE(report.findings.empty()) << Findings(report);
  }
};

TEST_F(XExchangeTest, EveryKindOfPairSwaps) {
  const std::vector<std::pair<const char*, const char*>> pairs = {
      {"/d/a", "/e/b"}, {"/d/a", "/e/t"}, {"/d/a", "/e/fifo"}, {"/d/new", "/e/b"},
      {"/d/s", "/e/fifo"}, {"/d/new", "/e/t"}};
  for (const auto& [x, y] : pairs) {
    SCOPED_TRACE(std::string(x) + " <-> " + y);
    Reset();
    Mount m = NewMount();
    MakeDirs(*m.ns);
    const uint64_t ix = InoOf(*m.ns, x), iy = InoOf(*m.ns, y);
    const Tree before = View();
    auto r = Exchange(*m.ns, x, y);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(InoOf(*m.ns, x), iy);
    EXPECT_EQ(InoOf(*m.ns, y), ix);
    Tree want = before;
    std::swap(want[x], want[y]);
    EXPECT_EQ(View(m.ns.get()), want) << "on the exchanging mount";
    EXPECT_EQ(View(), want) << "on a new mount";
    EXPECT_EQ(BlobNames(), DataBlobs(want));
    EXPECT_EQ(Intents(), 0u);
    EXPECT_FALSE(Claimed(x));
    EXPECT_FALSE(Claimed(y));
    FsckReport report = Fsck(false);
    EXPECT_TRUE(report.findings.empty()) << Findings(report);
    ASSERT_TRUE(Exchange(*m.ns, y, x).ok()) << "and back";
    EXPECT_EQ(View(), before);
  }
}

TEST_F(XExchangeTest, AnUncommittedFileCommitsUnderItsNewName) {
  Mount m = NewMount();
  MakeDirs(*m.ns);
  const uint64_t inew = InoOf(*m.ns, "/d/new");
  ASSERT_TRUE(Exchange(*m.ns, "/d/new", "/e/b").ok());
  ExpectFirstCommitAtNewName(*m.ns, inew, "/e/b", "/d/new", "bee");
}

// The intent keeps the entry at /d/a whole, under an op that versions
// knowing only same-directory exchanges refuse (their roll-forward would
// copy over /d/a's blob).
TEST_F(XExchangeTest, TheIntentHoldsTheFirstEntryUnderItsOwnOp) {
  ASSERT_TRUE(StopWhen([&] { return Claims(); }));
  auto rows = table_->QueryPartition(kTable, kIntentsPartition);
  ASSERT_TRUE(rows.ok() && rows->size() == 1);
  EXPECT_EQ(*rows->front().GetString("op"), "exchange-across");
  auto intent = IntentFromEntity(rows->front());
  ASSERT_TRUE(intent.ok()) << intent.status().ToString();
  EXPECT_TRUE(intent->Across());
  Entity a = *Row("/d/a");
  a.properties.erase(kRenamingProperty);
  EXPECT_EQ(intent->stash, a.properties);
  Entity same_op = rows->front();
  same_op.properties["op"] = std::string("exchange");
  EXPECT_FALSE(IntentFromEntity(same_op).ok()) << "an across intent is never read as another";
}

// Claimed, not swapped yet: another mount's unlink, rename-over or link of
// either name is EBUSY, its rename or exchange of either ENOENT; nothing changes,
// and fsck --repair then finishes the exchange.
TEST_F(XExchangeTest, OtherMountsWaitWhileBothAreClaimed) {
  ASSERT_TRUE(StopWhen([&] { return Claims(); }));
  IntentOfALiveMount();
  Mount other = NewMount();
  auto code = [&](const Status& s) { return ErrnoFor(s); };
  const uint64_t d = InoOf(*other.ns, "/d"), e = InoOf(*other.ns, "/e");
  EXPECT_EQ(code(other.ns->Unlink(d, "a").status()), EBUSY);
  EXPECT_EQ(code(other.ns->Unlink(e, "b").status()), EBUSY);
  EXPECT_EQ(code(other.ns->Rename(d, "other", e, "b", 0).status()), EBUSY) << "rename over it";
  EXPECT_EQ(code(other.ns->Link(InoOf(*other.ns, "/e/b"), d, "hl").status()), EBUSY) << "a link";
  EXPECT_EQ(code(other.ns->Rename(d, "a", d, "z", 0).status()), ENOENT);
  EXPECT_EQ(code(Exchange(*other.ns, "/e/b", "/d/other").status()), ENOENT);
  EXPECT_EQ(Raw("/d/a"), "f data of a");
  EXPECT_EQ(Raw("/e/b"), "f bee");
  EXPECT_EQ(Raw("/d/other"), "f other");
  FsckReport repaired = Fsck(true);
  EXPECT_TRUE(repaired.clean()) << Findings(repaired);
  ExpectExchanged();
}

// A rename over a claimed name decided before the claim (its intent rolled
// forward by another mount) is dropped with EBUSY, nothing moved; the
// exchange then finishes.
TEST_F(XExchangeTest, ARenameRolledForwardOverAClaimedNameIsDropped) {
  ASSERT_TRUE(StopWhen([&] { return Claims(); }));
  IntentOfALiveMount();
  WriteIntent("/d/other", "/e/b", NowNs() - 3600'000'000'000LL);  // past the grace period
  Mount other = NewMount();  // its Init rolls the rename forward
  EXPECT_EQ(Raw("/e/b"), "f bee");
  EXPECT_EQ(Raw("/d/other"), "f other");
  EXPECT_EQ(Intents(), 1u) << "only the exchange's is left";
  FsckReport repaired = Fsck(true);
  EXPECT_TRUE(repaired.clean()) << Findings(repaired);
  ExpectExchanged();
}

// Halfway (the entry at /e/b copied to /d/a, /d/a's entry in the intent
// alone): both names read B's file on every mount, neither can be removed;
// the next mount finishes it.
TEST_F(XExchangeTest, HalfwayBothNamesReadTheSameFileAndTheNextMountFinishes) {
  ASSERT_TRUE(StopWhen([&] { return BothB(); }));
  IntentOfALiveMount();
  Mount other = NewMount();
  Tree t = Snapshot(other.ns.get());
  EXPECT_EQ(t["/d/a"], "f bee");
  EXPECT_EQ(t["/e/b"], "f bee");
  EXPECT_EQ(ErrnoFor(other.ns->Unlink(InoOf(*other.ns, "/d"), "a").status()), EBUSY);
  FsckReport repaired = Fsck(true);
  EXPECT_TRUE(repaired.clean()) << Findings(repaired);
  ExpectExchanged();
}

// The entry at /d/a changed after the intent was written and before its
// claim: the intent's copy of it is stale, so the exchange is dropped with
// nothing moved and the change kept.
TEST_F(XExchangeTest, AnEntryChangedBeforeItsClaimDropsTheExchange) {
  ASSERT_TRUE(StopWhen([&] { return Intents() == 1 && !Claimed("/d/a"); }));
  auto a = Row("/d/a");
  ASSERT_TRUE(a);
  a->properties["mode"] = static_cast<int64_t>(S_IFREG | 0600);
  ASSERT_TRUE(table_->Update(kTable, *a, UpdateMode::kReplace, Condition::None()).ok());
  Tree t = View();  // its Init rolls forward
  EXPECT_EQ(t["/d/a"], "f data of a");
  EXPECT_EQ(t["/e/b"], "f bee");
  EXPECT_EQ(Row("/d/a")->GetInt64("mode"), S_IFREG | 0600);
  EXPECT_EQ(Intents(), 0u);
  EXPECT_FALSE(Claimed("/d/a"));
  EXPECT_FALSE(Claimed("/e/b"));
}

// Changed after its claim (a chmod is still allowed): the intent's copy
// follows before /d/a is overwritten, so the change moves with the file.
TEST_F(XExchangeTest, AnEntryChangedAfterItsClaimMovesChanged) {
  ASSERT_TRUE(StopWhen([&] { return Claims(); }));
  auto a = Row("/d/a");
  a->properties["mode"] = static_cast<int64_t>(S_IFREG | 0600);
  ASSERT_TRUE(table_->Update(kTable, *a, UpdateMode::kReplace, Condition::None()).ok());
  ExpectExchanged();
  EXPECT_EQ(Row("/e/b")->GetInt64("mode"), S_IFREG | 0600);
}

// Halfway, B's old entry removed by a mount that ignored the claim: A still
// gets its new name (nothing is there to overwrite). B's copy at /d/a
// removed instead: the table cannot tell whether A still needs its new
// name, so nothing is written and the intent stays for inspection.
TEST_F(XExchangeTest, HalfwayWithAClaimedEntryRemovedNothingIsGuessed) {
  ASSERT_TRUE(StopWhen([&] { return BothB(); }));
  ASSERT_TRUE(table_->Delete(kTable, PartitionKeyForDirectory("/e"), RowKeyForName("b"),
                             Condition::IfMatch("*")).ok());
  Tree t = View();
  EXPECT_EQ(t["/e/b"], "f data of a");
  EXPECT_EQ(t["/d/a"], "f bee");
  EXPECT_EQ(Intents(), 0u);

  ASSERT_TRUE(StopWhen([&] { return BothB(); }));
  ASSERT_TRUE(table_->Delete(kTable, PartitionKeyForDirectory("/d"), RowKeyForName("a"),
                             Condition::IfMatch("*")).ok());
  t = View();
  EXPECT_EQ(t.count("/d/a"), 0u);
  EXPECT_EQ(t["/e/b"], "f bee");
  EXPECT_EQ(Intents(), 1u);
}

// A crash at every storage call, the call applied or not: at the crash each
// name reads its old or its new file, and the next mount or fsck --repair
// leaves both exchanged (or, before the first swap, both untouched), each
// blob under its path and no other, no intent, no claim, fsck clean.
class XExchangeCrashTest
    : public XExchangeTest,
      public ::testing::WithParamInterface<std::tuple<int, bool, bool>> {};

TEST_P(XExchangeCrashTest, EveryCrashPointEndsExchangedOrUntouched) {
  static const std::pair<const char*, const char*> kPairs[] = {
      {"/d/a", "/e/b"}, {"/d/a", "/e/t"}, {"/d/new", "/e/b"}, {"/d/s", "/e/fifo"}};
  const auto& [pair, after_call, by_fsck] = GetParam();
  const std::string x = kPairs[pair].first, y = kPairs[pair].second;
  int calls = 0;
  Tree before, exchanged;
  std::string raw_x, raw_y;
  auto trial = [&](int k) {
    Reset();
    Mount m = NewMount();
    MakeDirs(*m.ns);
    before = View();
    raw_x = Raw(x);
    raw_y = Raw(y);
    if (k > 0) CrashAt(k, after_call);
    const int start = plan_->calls();
    auto r = Exchange(*m.ns, x, y);
    if (k == 0) {
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      calls = plan_->calls() - start;
    }
    plan_->Clear();
    plan_->SetInjector(nullptr);
  };
  trial(0);
  exchanged = before;
  std::swap(exchanged[x], exchanged[y]);
  ASSERT_EQ(View(), exchanged);
  ASSERT_EQ(BlobNames(), DataBlobs(exchanged));
  ASSERT_GT(calls, 5);
  int untouched = 0, done = 0;
  for (int k = 1; k <= calls; ++k) {
    SCOPED_TRACE("crash at call " + std::to_string(k) + " of " + std::to_string(calls));
    trial(k);
    const std::string rx = Raw(x), ry = Raw(y);
    EXPECT_TRUE(rx == raw_x || rx == raw_y) << x << ": " << rx;
    EXPECT_TRUE(ry == raw_y || ry == raw_x) << y << ": " << ry;
    if (by_fsck) {
      FsckReport repaired = Fsck(true);
      EXPECT_TRUE(repaired.clean()) << Findings(repaired);
    }
    const Tree after = View();  // a new mount: its Init rolls forward
    EXPECT_EQ(Intents(), 0u);
    EXPECT_FALSE(Claimed(x));
    EXPECT_FALSE(Claimed(y));
    if (after == before) {
      untouched++;
      EXPECT_EQ(BlobNames(), DataBlobs(before));
    } else {
      done++;
      EXPECT_EQ(after, exchanged);
      EXPECT_EQ(BlobNames(), DataBlobs(exchanged));
    }
    FsckReport report = Fsck(false);
    EXPECT_TRUE(report.findings.empty()) << Findings(report);
  }
  EXPECT_GE(untouched, 1);
  EXPECT_GE(done, calls / 2);
  std::cout << "exchange " << x << " <-> " << y << ": " << calls << " crash points: " << untouched
            << " untouched, " << done << " exchanged\n";
}

const char* const kPairNames[] = {"DataData", "DataSymlink", "NoDataData", "SymlinkFifo"};

INSTANTIATE_TEST_SUITE_P(Pairs, XExchangeCrashTest,
                         ::testing::Combine(::testing::Range(0, 4), ::testing::Bool(),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(kPairNames[std::get<0>(info.param)]) +
                                  (std::get<1>(info.param) ? "_ResponseLost" : "_Unsent") +
                                  (std::get<2>(info.param) ? "_Fsck" : "_NextMount");
                         });

}  // namespace
}  // namespace stampfs
