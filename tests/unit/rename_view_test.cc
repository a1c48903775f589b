// Read-only mounts and unfinished renames (fs/namespace/rename_view.h), on the fakes.
//
// A read-only mount cannot roll a rename forward. Through the view it shows
// the tree as the roll-forward will leave it: after a crash at every storage
// call of a rename (where the stored table shows entries twice or not at
// all), and at every step of another mount's rename that is still running.
#include "fs/namespace/rename_view.h"

#include <iostream>

#include "tests/unit/rename_fixture.h"

namespace stampfs {
namespace {

class RenameViewTest : public RenameFixture {
 protected:
  // The tree as a new read-only mount shows it, through a view that reads
  // ~intents at every call (`through_view`), or as stored.
  Tree ReadOnlySnapshot(bool through_view) {
    RollForwardViewOptions o;
    o.table = kTable;
    o.refresh_ms = 0;
    auto view = MakeRollForwardView(*faulty_table_, o);
    Mount m = NewMount(true, through_view ? view.get() : nullptr);
    return Snapshot(m.ns.get());
  }

  // The names a mount lists in `dir`.
  std::set<std::string> Names(Namespace& ns, const std::string& dir) {
    std::set<std::string> out;
    auto entries = ns.ReadDir(InoOf(ns, dir));
    EXPECT_TRUE(entries.ok()) << dir << ": " << entries.status().ToString();
    if (entries.ok()) {
      for (const DirEntry& e : *entries) out.insert(e.name);
    }
    return out;
  }
};

class RenameViewCrashTest : public RenameViewTest,
                            public ::testing::WithParamInterface<std::tuple<RenameCase, bool>> {};

TEST_P(RenameViewCrashTest, AfterACrashAtEveryCallAReadOnlyMountShowsTheRolledForwardTree) {
  const auto& [c, after_call] = GetParam();
  int calls = 0, unfinished = 0, stored_old = 0, stored_mixed = 0;
  for (int k = 0; k == 0 || k <= calls; ++k) {
    SCOPED_TRACE("crash at call " + std::to_string(k) + " of " + std::to_string(calls));
    Reset();
    Mount m = NewMount();
    MakeTree(*m.ns);
    const Tree before = Snapshot();
    const uint64_t from_dir = InoOf(*m.ns, ParentPath(c.from));
    const uint64_t to_dir = InoOf(*m.ns, ParentPath(c.to));
    if (k > 0) CrashAt(k, after_call);
    const int start = plan_->calls();
    auto r = m.ns->Rename(from_dir, BaseName(c.from), to_dir, BaseName(c.to), 0);
    plan_->Clear();
    if (k == 0) {
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      calls = plan_->calls() - start;
      continue;
    }
    const bool pending = Intents() > 0;
    const Tree shown = ReadOnlySnapshot(true);
    const Tree stored = ReadOnlySnapshot(false);
    const Tree after = Snapshot();  // a read-write mount: its start rolls forward
    EXPECT_EQ(shown, after);
    if (pending) {
      unfinished++;
      EXPECT_EQ(after, Renamed(before, c.from, c.to, c.replaces));
    }
    if (stored != after) (stored == before ? stored_old : stored_mixed)++;
  }
  EXPECT_GT(unfinished, calls / 2);
  // (As stored, a read-only mount shows the tree before the rename, or a mix
  // of both: entries in two places or in none.)
  std::cout << c.name << ": " << calls << " crash points, " << unfinished
            << " leave an unfinished rename; as stored, a read-only mount shows the old tree "
               "after "
            << stored_old << " and a mix after " << stored_mixed
            << " of them, through the view the rolled-forward tree after all\n";
}

INSTANTIATE_TEST_SUITE_P(Renames, RenameViewCrashTest,
                         ::testing::Combine(::testing::ValuesIn(RenameCases()), ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) +
                                  (std::get<1>(info.param) ? "_ResponseLost" : "_Unsent");
                         });

// Another mount's rename still running: before each of its storage calls, a
// new read-only mount reads the whole tree. It sees the tree before the
// rename or after it, never a mix; after it once the intent is written.
class RenameViewLiveTest : public RenameViewTest,
                           public ::testing::WithParamInterface<RenameCase> {};

TEST_P(RenameViewLiveTest, WhileAnotherMountRenamesAReadOnlyMountSeesOneTreeOrTheOther) {
  const RenameCase& c = GetParam();
  Reset();
  Mount m = NewMount();
  MakeTree(*m.ns);
  const Tree before = Snapshot();
  const Tree renamed = Renamed(before, c.from, c.to, c.replaces);
  const uint64_t from_dir = InoOf(*m.ns, ParentPath(c.from));
  const uint64_t to_dir = InoOf(*m.ns, ParentPath(c.to));
  bool reading = false;
  int steps = 0, as_renamed = 0;
  plan_->SetInjector([&](const std::string&, int) {
    if (reading) return Status::Ok();
    reading = true;
    const bool pending = Intents() > 0;
    const Tree shown = ReadOnlySnapshot(true);
    SCOPED_TRACE("before call " + std::to_string(++steps) + " of the rename");
    if (pending) {
      EXPECT_EQ(shown, renamed);
    } else {
      EXPECT_TRUE(shown == before || shown == renamed) << ::testing::PrintToString(shown);
    }
    if (shown == renamed) as_renamed++;
    reading = false;
    return Status::Ok();
  });
  auto r = m.ns->Rename(from_dir, BaseName(c.from), to_dir, BaseName(c.to), 0);
  plan_->Clear();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Snapshot(), renamed);
  EXPECT_GT(as_renamed, 2);
  std::cout << c.name << ": " << steps << " steps, shown renamed from step "
            << steps - as_renamed + 1 << "\n";
}

INSTANTIATE_TEST_SUITE_P(Renames, RenameViewLiveTest, ::testing::ValuesIn(RenameCases()),
                         [](const auto& info) { return std::string(info.param.name); });

// A read-only mount that cached both directories before the intent was
// written (nothing else of the rename happened: the target's directory is
// unchanged) lists the rename as done after the TTL, and still so once a
// read-write mount has rolled it forward.
TEST_F(RenameViewTest, CachedListingsFollowAnIntentAppearingAndGoing) {
  Reset();
  {
    Mount m = NewMount();
    uint64_t a = Dir(*m.ns, kRootIno, "a");
    Dir(*m.ns, kRootIno, "b");
    File(*m.ns, a, "/a/f", "data");
  }
  int64_t now = 1000000;
  RollForwardViewOptions vo;
  vo.table = kTable;
  vo.refresh_ms = 1000;
  vo.now_ms = [&] { return now; };
  auto view = MakeRollForwardView(*faulty_table_, vo);
  auto cache = MetaCache::Open(":memory:");
  ASSERT_TRUE(cache.ok());
  NamespaceOptions o = Options(true);
  o.ttl_ms = 1000;
  o.now_ms = [&] { return now; };
  Namespace ro(*view, *faulty_blobs_, cache->get(), o);
  ASSERT_TRUE(ro.Init().ok());
  EXPECT_EQ(Names(ro, "/a"), (std::set<std::string>{"f"}));
  EXPECT_EQ(Names(ro, "/b"), (std::set<std::string>{}));

  WriteIntent("/a/f", "/b/f", NowNs() - 3600 * 1000000000LL);  // a crashed mount's, an hour ago

  now += 2000;
  EXPECT_EQ(Names(ro, "/a"), (std::set<std::string>{}));
  EXPECT_EQ(Names(ro, "/b"), (std::set<std::string>{"f"}));
  EXPECT_EQ(Snapshot(&ro), (Tree{{"/a", "d"}, {"/b", "d"}, {"/b/f", "f data"}}));

  NamespaceOptions rw = Options();
  rw.intent_grace_ms = 0;
  Namespace late(*table_, *blobs_, nullptr, rw);
  ASSERT_TRUE(late.Init().ok());
  ASSERT_EQ(Intents(), 0u);
  now += 2000;
  EXPECT_EQ(Names(ro, "/a"), (std::set<std::string>{}));
  EXPECT_EQ(Names(ro, "/b"), (std::set<std::string>{"f"}));
  EXPECT_EQ(Snapshot(&ro), (Tree{{"/a", "d"}, {"/b", "d"}, {"/b/f", "f data"}}));
}

// An intent the roll-forward would drop (its target was taken meanwhile by
// something the rename may not replace) is shown as stored.
TEST_F(RenameViewTest, AnIntentWhoseTargetWasTakenIsShownAsStored) {
  Reset();
  {
    Mount m = NewMount();
    uint64_t a = Dir(*m.ns, kRootIno, "a");
    uint64_t b = Dir(*m.ns, kRootIno, "b");
    File(*m.ns, a, "/a/f", "mine");
    File(*m.ns, b, "/b/f", "theirs");
  }
  WriteIntent("/a/f", "/b/f", NowNs(), /*no_replace=*/true);
  const Tree stored{{"/a", "d"}, {"/a/f", "f mine"}, {"/b", "d"}, {"/b/f", "f theirs"}};
  EXPECT_EQ(ReadOnlySnapshot(true), stored);
  EXPECT_EQ(ReadOnlySnapshot(false), stored);
}

}  // namespace
}  // namespace stampfs
