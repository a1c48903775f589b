// One behavioural suite for every TableStore: run against the fake (unit) and
// against Azurite through the Azure client (integration), so the fake cannot
// drift from the service. Instantiate with
//   INSTANTIATE_TEST_SUITE_P(Name, TableStoreConformance, ::testing::Values(factory...),
//                            TableStoreFactoryName);
// Each test works in its own freshly created table and deletes it after.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "storage/table_store.h"

namespace stampfs {

struct TableStoreFactory {
  std::string name;  // test-name suffix: letters, digits, '_'
  std::function<std::unique_ptr<TableStore>()> make;
};

std::string TableStoreFactoryName(const ::testing::TestParamInfo<TableStoreFactory>& info);
inline void PrintTo(const TableStoreFactory& factory, std::ostream* os) { *os << factory.name; }

class TableStoreConformance : public ::testing::TestWithParam<TableStoreFactory> {
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

  // Inserts and returns the ETag ("" and a failure on error).
  std::string InsertOrFail(const Entity& entity);
  // The stored entity; a failure (and an empty entity) when it cannot be read.
  Entity GetOrFail(const std::string& pk, const std::string& rk);
  bool Exists(const std::string& pk, const std::string& rk);

  std::unique_ptr<TableStore> store_;
  std::string table_;
};

}  // namespace stampfs
