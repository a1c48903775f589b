// The blob metadata "mtime" forms (fs/namespace/blob_times.h).
#include "fs/namespace/blob_times.h"

#include <gtest/gtest.h>

namespace stampfs {
namespace {

constexpr int64_t kT = 1764760581123456789;  // 2025-12-03T11:16:21.123456789Z

TEST(BlobTimesTest, WritesRfc3339WithNanosecondsAsRcloneDoes) {
  EXPECT_EQ(FormatBlobMtime(kT), "2025-12-03T11:16:21.123456789Z");
  EXPECT_EQ(FormatBlobMtime(0), "1970-01-01T00:00:00.000000000Z");
  EXPECT_EQ(FormatBlobMtime(-1), "1969-12-31T23:59:59.999999999Z");
}

TEST(BlobTimesTest, ReadsEveryFormItWritesAndOtherToolsWrite) {
  EXPECT_EQ(ParseBlobMtime(FormatBlobMtime(kT)), kT);
  EXPECT_EQ(ParseBlobMtime(FormatBlobMtime(-1)), -1);
  EXPECT_EQ(ParseBlobMtime("1764760581123456789"), kT) << "stampfs's older decimal ns";
  EXPECT_EQ(ParseBlobMtime("2025-12-03T11:16:21Z"), kT - 123456789);
  EXPECT_EQ(ParseBlobMtime("2025-12-03T11:16:21.5Z"), kT - 123456789 + 500000000);
  EXPECT_EQ(ParseBlobMtime("2025-12-03T12:16:21.123456789+01:00"), kT) << "an offset";
  EXPECT_EQ(ParseBlobMtime("2025-12-03T11:16:21.1234567891234Z"), kT) << "past ns: dropped";
  EXPECT_EQ(ParseBlobMtime("1764760581"), kT - 123456789) << "Unix seconds";
  EXPECT_EQ(ParseBlobMtime("1764760581.123456789"), kT) << "Unix seconds with a fraction";
}

TEST(BlobTimesTest, AnythingElseIsNoTime) {
  for (const char* bad : {"", "yesterday", "2025-12-03", "2025-13-03T11:16:21Z",
                          "2025-12-03T11:16:21", "2025-12-03T11:16:21.Z", "12345678901234567890",
                          "1.2.3", "-5"}) {
    EXPECT_FALSE(ParseBlobMtime(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace stampfs
