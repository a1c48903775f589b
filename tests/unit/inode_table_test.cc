// InodeTable: lookup counts, pins, and the invariant that every ancestor of
// a known node is known (issue 27: a pinned file's path after FORGETs).
#include "fs/namespace/inode_table.h"

#include <gtest/gtest.h>

#include "fs/namespace/attr.h"

namespace stampfs {
namespace {

TEST(InodeTableTest, AForgottenNodeGoesWhenNothingHoldsIt) {
  InodeTable t;
  t.Remember(2, kRootIno, "d", true);
  EXPECT_EQ(t.PathOf(2), "/d");
  t.Forget(2, 1);
  EXPECT_FALSE(t.Contains(2));
  EXPECT_EQ(t.PathOf(2), std::nullopt);
}

TEST(InodeTableTest, APinnedFileKeepsItsDirectoriesAfterTheKernelForgetsThem) {
  InodeTable t;
  t.Remember(2, kRootIno, "a", true);
  t.Remember(3, 2, "b", true);
  t.Remember(4, 3, "f", false);
  t.Pin(4);
  t.Forget(4, 1);
  t.Forget(3, 1);
  t.Forget(2, 1);
  EXPECT_EQ(t.PathOf(4), "/a/b/f");
  EXPECT_TRUE(t.Contains(2));
  t.Unpin(4);
  EXPECT_FALSE(t.Contains(4));
  EXPECT_FALSE(t.Contains(3)) << "the directories go with their last known child";
  EXPECT_FALSE(t.Contains(2));
  EXPECT_EQ(t.size(), 1u) << "the root alone";
}

TEST(InodeTableTest, AMovedNodeHoldsItsNewParentAndReleasesTheOld) {
  InodeTable t;
  t.Remember(2, kRootIno, "a", true);
  t.Remember(3, kRootIno, "b", true);
  t.Remember(4, 2, "f", false);
  t.Pin(4);
  t.Move(4, 3, "g");
  t.Forget(2, 1);
  EXPECT_FALSE(t.Contains(2)) << "nothing below it any more";
  t.Forget(3, 1);
  EXPECT_EQ(t.PathOf(4), "/b/g");
  t.Remember(4, 2, "f", false);  // the kernel learns it elsewhere (another mount renamed it)
  EXPECT_FALSE(t.Contains(2)) << "an unknown parent is not invented";
  t.Forget(4, 2);
  t.Unpin(4);
  EXPECT_FALSE(t.Contains(3)) << "released when f moved away";
  EXPECT_EQ(t.size(), 1u);
}

TEST(InodeTableTest, AParentLearnedAfterItsChildIsHeldOnTheChildsNextLookup) {
  InodeTable t;
  t.Remember(4, 3, "f", false);  // a path resolved before its directory was known
  t.Remember(3, kRootIno, "d", true);
  t.Remember(4, 3, "f", false);
  t.Forget(3, 1);
  EXPECT_EQ(t.PathOf(4), "/d/f");
  t.Forget(4, 2);
  EXPECT_EQ(t.size(), 1u);
}

}  // namespace
}  // namespace stampfs
