// One behavioural suite for every QueueStore: the fake (unit) and Azurite's
// Queue service through the Azure client (integration), so the fake keeps
// the service's semantics. Each test works in a queue of its own.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "storage/queue_store.h"

namespace stampfs {

struct QueueStoreFactory {
  std::string name;  // test-name suffix: letters, digits, '_'
  std::function<std::unique_ptr<QueueStore>()> make;
};

std::string QueueStoreFactoryName(const ::testing::TestParamInfo<QueueStoreFactory>& info);
inline void PrintTo(const QueueStoreFactory& factory, std::ostream* os) { *os << factory.name; }

class QueueStoreConformance : public ::testing::TestWithParam<QueueStoreFactory> {
 protected:
  void SetUp() override;

  std::unique_ptr<QueueStore> store_;
  std::string queue_;
};

}  // namespace stampfs
