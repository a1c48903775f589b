// The data path's mount options: cache_size, block_size, conflict.
#include <gtest/gtest.h>

#include "fs/data/file_data.h"
#include "fs/daemon/mount_options.h"

namespace stampfs {
namespace {

Result<MountOptions> Parse(const std::string& opts) {
  return ParseMountArgs({"-o", opts, "container", "/mnt"});
}

TEST(DataOptionsTest, SizesTakeBinarySuffixes) {
  EXPECT_EQ(*ParseByteSize("x", "4096"), 4096u);
  EXPECT_EQ(*ParseByteSize("x", "64K"), 64u << 10);
  EXPECT_EQ(*ParseByteSize("x", "256m"), 256u << 20);
  EXPECT_EQ(*ParseByteSize("x", "2G"), 2ull << 30);
  EXPECT_EQ(*ParseByteSize("x", "1T"), 1ull << 40);
  for (const char* bad : {"", "-1", "1.5G", "12X", "G", "4GB", "99999999999999999999"}) {
    EXPECT_FALSE(ParseByteSize("x", bad).ok()) << bad;
  }
}

TEST(DataOptionsTest, DefaultsAndValues) {
  auto d = Parse("ro");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->cache_size, 1ull << 30);
  EXPECT_EQ(d->block_size, 4ull << 20);
  EXPECT_EQ(d->conflict, "copy");
  auto o = Parse("cache_size=512M,block_size=1M,conflict=fail");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->cache_size, 512ull << 20);
  EXPECT_EQ(o->block_size, 1ull << 20);
  EXPECT_EQ(*ParseConflictPolicy(o->conflict), ConflictPolicy::kFail);
  EXPECT_EQ(*ParseConflictPolicy("copy"), ConflictPolicy::kCopy);
  EXPECT_EQ(*ParseConflictPolicy("overwrite"), ConflictPolicy::kOverwrite);
}

TEST(DataOptionsTest, BadValuesNameTheOption) {
  for (const char* bad : {"cache_size=1M", "block_size=3M", "block_size=32K", "block_size=128M",
                          "conflict=merge", "cache_size=lots"}) {
    auto o = Parse(bad);
    ASSERT_FALSE(o.ok()) << bad;
    EXPECT_NE(o.status().message().find(std::string(bad).substr(0, 8)), std::string::npos)
        << o.status().message();
  }
}

}  // namespace
}  // namespace stampfs
