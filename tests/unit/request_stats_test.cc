// Request counting (storage/stats.h, RetryingHttpClient): every request the
// Azure clients send is classified by kind and counted once per attempt.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "storage/azure_clients.h"
#include "storage/connection_string.h"
#include "storage/stats.h"

namespace stampfs {
namespace {

// Answers every request with `status` and records what was sent.
class RecordingTransport : public HttpTransport {
 public:
  Result<HttpResponse> Send(const HttpRequest& request, std::chrono::milliseconds) override {
    sent.push_back(request);
    HttpResponse r;
    r.status = status;
    r.headers["etag"] = "\"0x1\"";
    r.body = body;
    return r;
  }
  std::vector<HttpRequest> sent;
  int status = 200;
  std::string body;
};

uint64_t Stat(const std::string& name) {
  for (const auto& [n, v] : StatsSnapshot()) {
    if (n == name) return v;
  }
  ADD_FAILURE() << "no counter " << name;
  return 0;
}

struct Clients {
  std::shared_ptr<RecordingTransport> transport = std::make_shared<RecordingTransport>();
  std::unique_ptr<BlobStore> blobs;
  std::unique_ptr<TableStore> table;
  Clients() {
    auto account = ParseConnectionString(kDevelopmentConnectionString);
    ClientOptions options;
    options.transport = transport;
    options.retry.max_attempts = 3;
    options.retry.initial_backoff = std::chrono::milliseconds(0);
    options.retry.max_backoff = std::chrono::milliseconds(0);
    blobs = MakeAzureBlobClient(*account, options);
    table = MakeAzureTableClient(*account, options);
  }
  std::string LastKind() const { return RequestKind(transport->sent.back()); }
};

TEST(RequestStats, BlobRequestsAreClassifiedByOperation) {
  Clients c;
  c.blobs->PutBlock("c", "a/b", BlockIdFor(0), HttpBody::FromString("x")).PermitUnchecked();
  EXPECT_EQ(c.LastKind(), "blob.put_block");
  c.blobs->PutBlockList("c", "a/b", {}, {}, Condition::None()).status().PermitUnchecked();
  EXPECT_EQ(c.LastKind(), "blob.commit");
  c.blobs->PutString("c", "a/b", "x", {}, Condition::None()).status().PermitUnchecked();
  EXPECT_EQ(c.LastKind(), "blob.put");
  c.blobs->ReadToString("c", "a/b").status().PermitUnchecked();
  EXPECT_EQ(c.LastKind(), "blob.get");
  c.blobs->GetProperties("c", "a/b").status().PermitUnchecked();
  EXPECT_EQ(c.LastKind(), "blob.head");
  c.blobs->ListBlobsPage("c", {}, "").status().PermitUnchecked();
  EXPECT_EQ(c.LastKind(), "blob.list");
  c.blobs->GetBlockList("c", "a/b", BlockListType::kCommitted).status().PermitUnchecked();
  EXPECT_EQ(c.LastKind(), "blob.block_list");
  c.blobs->Delete("c", "a/b", Condition::None()).PermitUnchecked();
  EXPECT_EQ(c.LastKind(), "blob.delete");
  c.blobs->SetMetadata("c", "a/b", {}, Condition::None()).status().PermitUnchecked();
  EXPECT_EQ(c.LastKind(), "blob.set_metadata");
  c.blobs->GetContainerProperties("c").PermitUnchecked();
  EXPECT_EQ(c.LastKind(), "blob.container");
  c.transport->sent.clear();
  c.blobs->Copy("c", "a/b", "a/c", Condition::None(), "").status().PermitUnchecked();
  ASSERT_FALSE(c.transport->sent.empty());
  EXPECT_EQ(RequestKind(c.transport->sent.front()), std::string("blob.copy"));
  bool copied = false;
  for (const auto& r : c.transport->sent)
    copied = copied || RequestKind(r) == std::string("blob.copy");
  EXPECT_TRUE(copied);
}

TEST(RequestStats, TableRequestsAreClassifiedByOperation) {
  Clients c;
  Entity e;
  e.partition_key = "dir";
  e.row_key = "name";
  c.table->Get("fsx", "dir", "name").status().PermitUnchecked();
  EXPECT_EQ(c.LastKind(), "table.get");
  c.table->Insert("fsx", e).status().PermitUnchecked();
  EXPECT_EQ(c.LastKind(), "table.insert");
  c.table->Update("fsx", e, UpdateMode::kMerge, Condition::IfMatch("*")).status().PermitUnchecked();
  EXPECT_EQ(c.LastKind(), "table.merge");
  c.table->Update("fsx", e, UpdateMode::kReplace, Condition::IfMatch("*"))
      .status()
      .PermitUnchecked();
  EXPECT_EQ(c.LastKind(), "table.update");
  c.table->Delete("fsx", "dir", "name", Condition::IfMatch("*")).PermitUnchecked();
  EXPECT_EQ(c.LastKind(), "table.delete");
  c.table->QueryPage("fsx", {}, "", "").status().PermitUnchecked();
  EXPECT_EQ(c.LastKind(), "table.query");
  c.table->ExecuteBatch("fsx", {TableOperation::Insert(e)}).status().PermitUnchecked();
  EXPECT_EQ(c.LastKind(), "table.batch");
  c.table->CreateTable("fsx").PermitUnchecked();
  EXPECT_EQ(c.LastKind(), "table.table");
}

TEST(RequestStats, EveryAttemptIsCountedWithItsBytes) {
  Clients c;
  const uint64_t total = Stat("requests.total");
  const uint64_t blocks = Stat("requests.blob.put_block");
  const uint64_t retries = Stat("requests.retries");
  const uint64_t up = Stat("bytes.up");
  const uint64_t down = Stat("bytes.down");
  c.transport->status = 503;  // retried: 3 attempts
  c.transport->body = "busy";
  c.blobs->PutBlock("c", "a", BlockIdFor(0), HttpBody::FromString("12345")).PermitUnchecked();
  EXPECT_EQ(Stat("requests.total") - total, 3u);
  EXPECT_EQ(Stat("requests.blob.put_block") - blocks, 3u);
  EXPECT_EQ(Stat("requests.retries") - retries, 2u);
  EXPECT_EQ(Stat("bytes.up") - up, 15u);
  EXPECT_EQ(Stat("bytes.down") - down, 12u);
}

TEST(RequestStats, JsonIsOneFlatObjectWithTheBenchmarkKeys) {
  auto json = nlohmann::json::parse(StatsJson());
  ASSERT_TRUE(json.is_object());
  for (const char* key :
       {"requests.total", "requests.blob.get", "requests.blob.put_block", "requests.blob.commit",
        "requests.table.batch", "requests.table.query", "bytes.up", "bytes.down"}) {
    ASSERT_TRUE(json.contains(key)) << key;
    EXPECT_TRUE(json[key].is_number_unsigned()) << key;
  }
}

TEST(RequestStats, GaugesAreReadAtEachSnapshot) {
  uint64_t value = 7;
  RegisterGauge("test.gauge", [&] { return value; });
  EXPECT_EQ(Stat("test.gauge"), 7u);
  value = 9;
  EXPECT_EQ(Stat("test.gauge"), 9u);
  ClearGauges();
}

}  // namespace
}  // namespace stampfs
