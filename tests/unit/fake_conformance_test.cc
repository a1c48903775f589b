// The conformance suites against the in-memory fakes (the same suites run
// against Azurite in tests/integration/azurite_conformance_test.cc).
#include "conformance/blob_store_conformance.h"
#include "conformance/queue_store_conformance.h"
#include "conformance/table_store_conformance.h"
#include "storage/fakes.h"
#include "storage/queue_store.h"

namespace stampfs {
namespace {

INSTANTIATE_TEST_SUITE_P(Fake, BlobStoreConformance,
                         ::testing::Values(BlobStoreFactory{"fake",
                                                            [] { return MakeFakeBlobStore(); }}),
                         BlobStoreFactoryName);

INSTANTIATE_TEST_SUITE_P(Fake, TableStoreConformance,
                         ::testing::Values(TableStoreFactory{"fake",
                                                             [] { return MakeFakeTableStore(); }}),
                         TableStoreFactoryName);

INSTANTIATE_TEST_SUITE_P(Fake, QueueStoreConformance,
                         ::testing::Values(QueueStoreFactory{"fake",
                                                             [] { return MakeFakeQueueStore(); }}),
                         QueueStoreFactoryName);

}  // namespace
}  // namespace stampfs
