// AzureTableClient request building and response handling through a scripted
// transport: headers, URLs, conditions, paging, and when a batch is resent.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "storage/azure_clients.h"

namespace stampfs {
namespace {

constexpr char kTableEndpoint[] = "http://127.0.0.1:10002/devstoreaccount1";

class ScriptedTableTransport : public HttpTransport {
 public:
  using Handler = std::function<Result<HttpResponse>(const HttpRequest&)>;
  explicit ScriptedTableTransport(Handler handler) : handler_(std::move(handler)) {}

  Result<HttpResponse> Send(const HttpRequest& request, std::chrono::milliseconds) override {
    requests.push_back(request);
    std::string body(request.body.size, '\0');
    if (request.body.size > 0) request.body.reader(0, body.data(), body.size());
    bodies.push_back(body);
    return handler_(request);
  }

  std::vector<HttpRequest> requests;
  std::vector<std::string> bodies;

 private:
  Handler handler_;
};

HttpResponse Reply(int status, HttpHeaders headers = {}, std::string body = {}) {
  HttpResponse r;
  r.status = status;
  r.headers = std::move(headers);
  r.body = std::move(body);
  return r;
}

struct Client {
  std::shared_ptr<ScriptedTableTransport> transport;
  std::unique_ptr<TableStore> store;
};

Client MakeClient(ScriptedTableTransport::Handler handler) {
  StorageAccount account;
  account.account_name = "devstoreaccount1";
  account.account_key =
      "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
  account.table_endpoint = kTableEndpoint;
  Client client;
  client.transport = std::make_shared<ScriptedTableTransport>(std::move(handler));
  ClientOptions options;
  options.transport = client.transport;
  options.retry.max_attempts = 3;
  options.retry.initial_backoff = std::chrono::milliseconds(1);
  options.retry.max_backoff = std::chrono::milliseconds(2);
  options.now = [] { return std::string("Mon, 01 Jan 2024 00:00:00 GMT"); };
  client.store = MakeAzureTableClient(account, options);
  return client;
}

Entity Sample() {
  Entity e;
  e.partition_key = "o'neil";
  e.row_key = "x y";
  e.properties["Big"] = int64_t{9007199254740993};
  return e;
}

constexpr char kEtag[] = "W/\"datetime'2026-12-02T13%3A08%3A29.9293636Z'\"";

TEST(AzureTableClient, InsertSendsTypedJsonWithTheTableHeaders) {
  auto client = MakeClient([](const HttpRequest&) { return Reply(204, {{"etag", kEtag}}); });
  auto etag = client.store->Insert("mytable", Sample());
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();
  EXPECT_EQ(*etag, kEtag);
  ASSERT_EQ(client.transport->requests.size(), 1u);
  const HttpRequest& r = client.transport->requests[0];
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.url, std::string(kTableEndpoint) + "/mytable");
  EXPECT_EQ(r.Header("x-ms-version"), "2019-02-02");
  EXPECT_EQ(r.Header("Accept"), "application/json;odata=minimalmetadata");
  EXPECT_EQ(r.Header("DataServiceVersion"), "3.0;NetFx");
  EXPECT_EQ(r.Header("MaxDataServiceVersion"), "3.0;NetFx");
  EXPECT_EQ(r.Header("Content-Type"), "application/json");
  EXPECT_EQ(r.Header("Prefer"), "return-no-content");
  EXPECT_EQ(r.Header("Authorization").rfind("SharedKey devstoreaccount1:", 0), 0u);
  EXPECT_EQ(r.Header("If-Match"), "");
  const auto doc = nlohmann::json::parse(client.transport->bodies[0]);
  EXPECT_EQ(doc["PartitionKey"], "o'neil");
  EXPECT_EQ(doc["Big"], "9007199254740993");
  EXPECT_EQ(doc["Big@odata.type"], "Edm.Int64");
}

TEST(AzureTableClient, UpdatesPickVerbAndCondition) {
  auto client = MakeClient([](const HttpRequest&) { return Reply(204, {{"etag", kEtag}}); });
  const std::string url =
      std::string(kTableEndpoint) + "/t12(PartitionKey='o''neil',RowKey='x%20y')";
  ASSERT_TRUE(
      client.store->Update("t12", Sample(), UpdateMode::kReplace, Condition::IfMatch("W/\"1\""))
          .ok());
  ASSERT_TRUE(client.store->Update("t12", Sample(), UpdateMode::kMerge, Condition::None()).ok());
  ASSERT_TRUE(
      client.store->Update("t12", Sample(), UpdateMode::kMerge, Condition::IfNoneMatchAny()).ok());
  const auto& reqs = client.transport->requests;
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].method, "PUT");
  EXPECT_EQ(reqs[0].url, url);
  EXPECT_EQ(reqs[0].Header("If-Match"), "W/\"1\"");
  EXPECT_EQ(reqs[1].method, "MERGE");
  EXPECT_EQ(reqs[1].url, url);
  EXPECT_EQ(reqs[1].Header("If-Match"), "");  // insert-or-merge
  EXPECT_EQ(reqs[2].method, "POST");          // create-only is an insert
}

TEST(AzureTableClient, DeleteNeedsIfMatch) {
  auto client = MakeClient([](const HttpRequest&) { return Reply(204); });
  EXPECT_EQ(client.store->Delete("t12", "p", "r", Condition::None()).code(),
            Code::kInvalidArgument);
  EXPECT_TRUE(client.transport->requests.empty());
  ASSERT_TRUE(client.store->Delete("t12", "p", "r", Condition::IfMatch("*")).ok());
  ASSERT_EQ(client.transport->requests.size(), 1u);
  EXPECT_EQ(client.transport->requests[0].method, "DELETE");
  EXPECT_EQ(client.transport->requests[0].Header("If-Match"), "*");
}

TEST(AzureTableClient, GetReadsEntityAndEtagAndMapsErrors) {
  auto client = MakeClient([](const HttpRequest& r) {
    if (r.url.find("RowKey='r'") != std::string::npos) {
      return Reply(200, {{"etag", kEtag}},
                   R"({"odata.etag":"W/\"old\"","PartitionKey":"p","RowKey":"r","N":1})");
    }
    return Reply(404, {{"x-ms-error-code", "ResourceNotFound"}},
                 R"({"odata.error":{"code":"ResourceNotFound","message":{"value":"gone"}}})");
  });
  auto got = client.store->Get("t12", "p", "r");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->etag, kEtag);
  EXPECT_EQ(std::get<int32_t>(got->properties.at("N")), 1);
  auto missing = client.store->Get("t12", "p", "other");
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_EQ(missing.status().service_code(), "ResourceNotFound");
}

TEST(AzureTableClient, QueryEncodesOptionsAndFollowsContinuations) {
  int calls = 0;
  auto client = MakeClient([&](const HttpRequest&) {
    ++calls;
    if (calls == 1) {
      // Header names as Azure spells them; the client must not depend on case.
      return Reply(200,
                   {{"x-ms-continuation-NextPartitionKey", "1!8!cDE-"},
                    {"x-ms-continuation-NextRowKey", "1!4!YQ=="}},
                   R"({"value":[{"PartitionKey":"a b","RowKey":"1"}]})");
    }
    return Reply(200, {}, R"({"value":[{"PartitionKey":"a b","RowKey":"2"}]})");
  });
  QueryOptions options;
  options.filter = FilterPartition("a b'");
  options.select = {"Size"};
  auto rows = client.store->Query("t12", options);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[1].row_key, "2");
  const auto& reqs = client.transport->requests;
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].method, "GET");
  EXPECT_EQ(reqs[0].url, std::string(kTableEndpoint) +
                             "/t12()?$top=1000&$filter=PartitionKey%20eq%20%27a%20b%27%27%27"
                             "&$select=PartitionKey%2CRowKey%2CSize");
  EXPECT_EQ(reqs[1].url,
            reqs[0].url + "&NextPartitionKey=1%218%21cDE-&NextRowKey=1%214%21YQ%3D%3D");
}

TEST(AzureTableClient, CreateTableConflictIsAlreadyExists) {
  auto client = MakeClient([](const HttpRequest& r) {
    EXPECT_EQ(r.url, std::string(kTableEndpoint) + "/Tables");
    return Reply(409, {{"x-ms-error-code", "TableAlreadyExists"}});
  });
  EXPECT_EQ(client.store->CreateTable("t12").code(), Code::kAlreadyExists);
  EXPECT_EQ(client.transport->bodies[0], R"({"TableName":"t12"})");
}

TEST(AzureTableClient, InvalidTableNamesAreRefusedBeforeSending) {
  auto client = MakeClient([](const HttpRequest&) { return Reply(204); });
  for (const std::string bad : {"", "ab", "1abc", "a-b", "a/b", "t(PartitionKey='x')"}) {
    EXPECT_EQ(client.store->CreateTable(bad).code(), Code::kInvalidArgument) << bad;
    EXPECT_EQ(client.store->Get(bad, "p", "r").status().code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(client.transport->requests.empty());
}

std::string BatchSuccess(int parts) {
  std::string b =
      "--batchresponse_1\r\nContent-Type: multipart/mixed; boundary=changesetresponse_2\r\n\r\n";
  for (int i = 0; i < parts; ++i) {
    b += "--changesetresponse_2\r\nContent-Type: application/http\r\n"
         "Content-Transfer-Encoding: binary\r\n\r\nHTTP/1.1 204 No Content\r\nETag: W/\"e" +
         std::to_string(i) + "\"\r\n\r\n";
  }
  return b + "--changesetresponse_2--\r\n--batchresponse_1--\r\n";
}

std::vector<TableOperation> TwoInserts() {
  Entity a = Sample();
  Entity b = Sample();
  b.row_key = "z";
  return {TableOperation::Insert(a), TableOperation::Insert(b)};
}

TEST(AzureTableClient, BatchIsOnePostToDollarBatch) {
  auto client = MakeClient([](const HttpRequest&) { return Reply(202, {}, BatchSuccess(2)); });
  auto result = client.store->ExecuteBatch("t12", TwoInserts());
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->etags, (std::vector<std::string>{"W/\"e0\"", "W/\"e1\""}));
  const HttpRequest& r = client.transport->requests.at(0);
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.url, std::string(kTableEndpoint) + "/$batch");
  const std::string type = r.Header("Content-Type");
  ASSERT_EQ(type.rfind("multipart/mixed; boundary=batch_", 0), 0u) << type;
  EXPECT_EQ(client.transport->bodies[0].rfind("--" + type.substr(26) + "\r\n", 0), 0u);
  EXPECT_EQ(r.Header("Accept"), "application/json;odata=minimalmetadata");
}

TEST(AzureTableClient, BatchIsResentOnlyWhenItCertainlyDidNotRun) {
  int calls = 0;
  auto throttled_once = MakeClient([&](const HttpRequest&) -> Result<HttpResponse> {
    if (++calls == 1) return Reply(503, {{"x-ms-error-code", "ServerBusy"}});
    return Reply(202, {}, BatchSuccess(2));
  });
  EXPECT_TRUE(throttled_once.store->ExecuteBatch("t12", TwoInserts()).ok());
  EXPECT_EQ(throttled_once.transport->requests.size(), 2u);

  auto timed_out = MakeClient([](const HttpRequest&) -> Result<HttpResponse> {
    return Status(Code::kTimeout, "no complete response");
  });
  BatchError error;
  auto result = timed_out.store->ExecuteBatch("t12", TwoInserts(), &error);
  EXPECT_EQ(result.status().code(), Code::kTimeout);
  EXPECT_EQ(error.failed_index, -1);
  EXPECT_EQ(timed_out.transport->requests.size(), 1u);

  auto internal = MakeClient([](const HttpRequest&) { return Reply(500); });
  EXPECT_FALSE(internal.store->ExecuteBatch("t12", TwoInserts()).ok());
  EXPECT_EQ(internal.transport->requests.size(), 1u);
}

TEST(AzureTableClient, InvalidBatchesAreNotSent) {
  auto client = MakeClient([](const HttpRequest&) { return Reply(202, {}, BatchSuccess(2)); });
  auto ops = TwoInserts();
  ops[1].entity.partition_key = "other";
  BatchError error;
  auto result = client.store->ExecuteBatch("t12", ops, &error);
  EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(error.failed_index, 1);
  EXPECT_TRUE(client.transport->requests.empty());
}

}  // namespace
}  // namespace stampfs
