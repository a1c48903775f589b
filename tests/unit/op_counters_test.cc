// The counting wrappers of fs/fuse/op_counters.cc: what they record as the target
// of an operation, which error logs name.
#include "fs/fuse/op_counters.h"

#include <gtest/gtest.h>

#include <string>

namespace stampfs {
namespace {

RequestTarget g_seen;

void SeeLookup(fuse_req_t, fuse_ino_t, const char*) { g_seen = CurrentRequestTarget(); }
void SeeWrite(fuse_req_t, fuse_ino_t, const char*, size_t, off_t, fuse_file_info*) {
  g_seen = CurrentRequestTarget();
}
void SeeSetxattr(fuse_req_t, fuse_ino_t, const char*, const char*, size_t, int) {
  g_seen = CurrentRequestTarget();
}
void SeeMkdir(fuse_req_t, fuse_ino_t, const char*, mode_t) { g_seen = CurrentRequestTarget(); }

const fuse_lowlevel_ops* Counted() {
  static fuse_lowlevel_ops inner = [] {
    fuse_lowlevel_ops ops{};
    ops.lookup = SeeLookup;
    ops.write = SeeWrite;
    ops.setxattr = SeeSetxattr;
    ops.mkdir = SeeMkdir;
    return ops;
  }();
  static const fuse_lowlevel_ops* counted = CountedOperations(&inner);
  return counted;
}

// A write's second argument is the data: taken as a name, a failed write
// logged file contents (and read past the buffer, which has no NUL).
TEST(OpCountersTest, WriteDataIsNeverTakenForAName) {
  const char data[4] = {'a', 'b', 'c', 'd'};
  Counted()->write(nullptr, 42, data, sizeof(data), 0, nullptr);
  EXPECT_EQ(g_seen.ino, 42u);
  EXPECT_EQ(g_seen.name, nullptr);
}

TEST(OpCountersTest, EntryOperationsNameTheirEntry) {
  Counted()->lookup(nullptr, 7, "some-name");
  EXPECT_EQ(g_seen.ino, 7u);
  ASSERT_NE(g_seen.name, nullptr);
  EXPECT_EQ(std::string(g_seen.name), "some-name");
  Counted()->mkdir(nullptr, 8, "dir", 0755);
  ASSERT_NE(g_seen.name, nullptr);
  EXPECT_EQ(std::string(g_seen.name), "dir");
}

TEST(OpCountersTest, AnXattrNameIsNotAnEntryName) {
  Counted()->setxattr(nullptr, 9, "user.x", "v", 1, 0);
  EXPECT_EQ(g_seen.ino, 9u);
  EXPECT_EQ(g_seen.name, nullptr);
}

}  // namespace
}  // namespace stampfs
