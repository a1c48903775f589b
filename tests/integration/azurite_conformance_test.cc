// The conformance suites against the Azure clients, pointed at
// $AZURE_STORAGE_CONNECTION_STRING or, by default, Azurite
// (UseDevelopmentStorage=true). The same suites run against the fakes in
// tests/unit/fake_conformance_test.cc.
#include <cstdlib>
#include <string>

#include "conformance/blob_store_conformance.h"
#include "conformance/queue_store_conformance.h"
#include "conformance/table_store_conformance.h"
#include "integration/test_account.h"
#include "storage/azure_clients.h"
#include "storage/connection_string.h"
#include "storage/queue_store.h"

namespace stampfs {
namespace {

bool IsEmulator(const StorageAccount& account) {
  return account.blob_endpoint.find("127.0.0.1") != std::string::npos ||
         account.blob_endpoint.find("localhost") != std::string::npos;
}

std::unique_ptr<BlobStore> MakeBlobClient() {
  auto account = Account();
  if (!account.ok()) {
    ADD_FAILURE() << "connection string: " << account.status().ToString();
    return nullptr;
  }
  return MakeAzureBlobClient(*account);
}

std::unique_ptr<TableStore> MakeTableClient() {
  auto account = Account();
  if (!account.ok()) {
    ADD_FAILURE() << "connection string: " << account.status().ToString();
    return nullptr;
  }
  return MakeAzureTableClient(*account);
}

std::unique_ptr<QueueStore> MakeQueueClient() {
  auto account = Account();
  if (!account.ok()) {
    ADD_FAILURE() << "connection string: " << account.status().ToString();
    return nullptr;
  }
  return MakeAzureQueueClient(*account, {});
}

bool UsesEmulator() {
  auto account = Account();
  return account.ok() && IsEmulator(*account);
}

const char* BackendName() { return UsesEmulator() ? "azurite" : "azure"; }

// Azurite 3.35 deviations the blob suite tolerates: If-Match "*" creates a
// missing blob (AZURE-PROTOCOL.md §7.2) and Put Blob keeps staged blocks.
INSTANTIATE_TEST_SUITE_P(Azure, BlobStoreConformance,
                         ::testing::Values(BlobStoreFactory{BackendName(), MakeBlobClient,
                                                            UsesEmulator(), UsesEmulator()}),
                         BlobStoreFactoryName);

INSTANTIATE_TEST_SUITE_P(Azure, TableStoreConformance,
                         ::testing::Values(TableStoreFactory{BackendName(), MakeTableClient}),
                         TableStoreFactoryName);

INSTANTIATE_TEST_SUITE_P(Azure, QueueStoreConformance,
                         ::testing::Values(QueueStoreFactory{BackendName(), MakeQueueClient}),
                         QueueStoreFactoryName);

}  // namespace
}  // namespace stampfs
