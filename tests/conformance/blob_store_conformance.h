// One behavioural suite for every BlobStore: run against the fake (unit) and
// against Azurite through the Azure client (integration), so the fake cannot
// drift from the service. Instantiate with
//   INSTANTIATE_TEST_SUITE_P(Name, BlobStoreConformance, ::testing::Values(factory...),
//                            BlobStoreFactoryName);
// Each test works in its own freshly created container and deletes it after.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "storage/blob_store.h"

namespace stampfs {

struct BlobStoreFactory {
  std::string name;  // test-name suffix: letters, digits, '_'
  std::function<std::unique_ptr<BlobStore>()> make;
  // Azurite <= 3.35 lets If-Match "*" create a missing blob where Azure answers
  // 412 (AZURE-PROTOCOL.md §7.2); when set, that one assertion accepts both.
  bool if_match_any_may_create = false;
  // Azurite 3.35 keeps uncommitted blocks across a Put Blob; Azure discards
  // them (AZURE-PROTOCOL.md §3.3). When set, that one assertion is skipped.
  bool put_may_keep_staged_blocks = false;
};

std::string BlobStoreFactoryName(const ::testing::TestParamInfo<BlobStoreFactory>& info);
inline void PrintTo(const BlobStoreFactory& factory, std::ostream* os) { *os << factory.name; }

class BlobStoreConformance : public ::testing::TestWithParam<BlobStoreFactory> {
 protected:
  void SetUp() override;
  void TearDown() override;

  // gtest assertions that print the Status on failure.
  template <typename T>
  static ::testing::AssertionResult Ok(const T& status_or_result) {
    const Status& s = StatusOf(status_or_result);
    if (s.ok()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << s.ToString();
  }
  template <typename T>
  static ::testing::AssertionResult Fails(const T& status_or_result, Code code) {
    const Status& s = StatusOf(status_or_result);
    if (s.code() == code) return ::testing::AssertionSuccess() << s.ToString();
    return ::testing::AssertionFailure()
           << "expected " << CodeName(code) << ", got " << s.ToString();
  }

  // Put with metadata/condition; returns the ETag ("" and a failure on error).
  std::string PutOrFail(const std::string& blob, const std::string& data,
                        const BlobMetadata& metadata = {});
  // The blob's bytes (a range of them), or "<error: ...>".
  std::string Content(const std::string& blob, uint64_t offset = 0, uint64_t length = 0);
  // Stages `data` under block `index` (BlockIdFor).
  void Stage(const std::string& blob, uint64_t index, const std::string& data);

  std::unique_ptr<BlobStore> store_;
  std::string container_;
};

}  // namespace stampfs
