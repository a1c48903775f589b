#include <gtest/gtest.h>

#include <cerrno>

#include "fs/fuse/errno_map.h"
#include "storage/status.h"

namespace stampfs {
namespace {

TEST(Status, ToStringCarriesCodeHttpStatusAndServiceCode) {
  Status s(Code::kNotFound, "blob a/b", 404, "BlobNotFound");
  EXPECT_EQ(s.ToString(), "NotFound (404 BlobNotFound): blob a/b");
  EXPECT_EQ(Status::Ok().ToString(), "OK");
}

TEST(Status, WithContextKeepsCodeAndHttpData) {
  Status s = Status(Code::kPreconditionFailed, "etag changed", 412, "ConditionNotMet")
                 .WithContext("put a/b");
  EXPECT_EQ(s.code(), Code::kPreconditionFailed);
  EXPECT_EQ(s.http_status(), 412);
  EXPECT_EQ(s.service_code(), "ConditionNotMet");
  EXPECT_EQ(s.message(), "put a/b: etag changed");
}

Result<int> Half(int x) {
  if (x % 2) return Status(Code::kInvalidArgument, "odd");
  return x / 2;
}

Status UseHalf(int x, int* out) {
  auto r = Half(x);
  STAMPFS_RETURN_IF_ERROR(r);
  *out = *r;
  return Status::Ok();
}

TEST(Status, ReturnIfErrorPropagatesResultFailures) {
  int out = 0;
  EXPECT_TRUE(UseHalf(8, &out).ok());
  EXPECT_EQ(out, 4);
  Status st = UseHalf(3, &out);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
}

TEST(ErrnoMap, MapsEachCodeToItsErrno) {
  EXPECT_EQ(ErrnoFor(Status(Code::kNotFound, "")), ENOENT);
  EXPECT_EQ(ErrnoFor(Status(Code::kAlreadyExists, "")), EEXIST);
  EXPECT_EQ(ErrnoFor(Status(Code::kAuth, "")), EACCES);
  EXPECT_EQ(ErrnoFor(Status(Code::kTimeout, "")), EIO);
  EXPECT_EQ(ErrnoFor(Status(Code::kTransport, "")), EIO);
  EXPECT_EQ(ErrnoFor(Status(Code::kReadOnly, "")), EROFS);
  EXPECT_EQ(ErrnoFor(Status(Code::kTooLarge, "")), EFBIG);
  EXPECT_EQ(ErrnoFor(Status::Ok()), 0);
}

// Every refusal of docs/semantics.md "Errors returned on purpose" has the
// errno that table names.
TEST(ErrnoMap, EachRefusalHasTheErrnoTheSemanticsName) {
  EXPECT_EQ(ErrnoFor(Status(Code::kStale, "")), ESTALE);
  EXPECT_EQ(ErrnoFor(Status(Code::kNotEmpty, "")), ENOTEMPTY);
  EXPECT_EQ(ErrnoFor(Status(Code::kNotADirectory, "")), ENOTDIR);
  EXPECT_EQ(ErrnoFor(Status(Code::kIsADirectory, "")), EISDIR);
  EXPECT_EQ(ErrnoFor(Status(Code::kNameTooLong, "")), ENAMETOOLONG);
  EXPECT_EQ(ErrnoFor(Status(Code::kIllegalSequence, "")), EILSEQ);
  EXPECT_EQ(ErrnoFor(Status(Code::kNoSpace, "")), ENOSPC);
  EXPECT_EQ(ErrnoFor(Status(Code::kNotPermitted, "")), EPERM);
  EXPECT_EQ(ErrnoFor(Status(Code::kInvalidArgument, "")), EINVAL);
  EXPECT_EQ(ErrnoFor(Status(Code::kNoAttribute, "")), ENODATA);
  EXPECT_EQ(ErrnoFor(Status(Code::kRange, "")), ERANGE);
  EXPECT_EQ(ErrnoFor(Status(Code::kNotSupported, "")), EOPNOTSUPP);
  EXPECT_EQ(ErrnoFor(Status(Code::kCancelled, "")), EINTR);
  EXPECT_EQ(ErrnoFor(Status(Code::kConflict, "")), EBUSY);
  EXPECT_EQ(ErrnoFor(Status(Code::kPreconditionFailed, "")), EIO);
}

}  // namespace
}  // namespace stampfs
