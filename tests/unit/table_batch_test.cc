#include "storage/table_batch.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "storage/table_store.h"

namespace stampfs {
namespace {

constexpr char kEndpoint[] = "http://127.0.0.1:10002/devstoreaccount1";

Entity MakeEntity(const std::string& pk, const std::string& rk) {
  Entity e;
  e.partition_key = pk;
  e.row_key = rk;
  e.properties["V"] = int32_t{1};
  return e;
}

std::vector<TableOperation> Ops(size_t n, const std::string& pk = "P") {
  std::vector<TableOperation> ops;
  for (size_t i = 0; i < n; ++i)
    ops.push_back(TableOperation::Insert(MakeEntity(pk, std::to_string(i))));
  return ops;
}

TEST(TableBatch, EntityResourceDoublesQuotesAndEncodes) {
  EXPECT_EQ(EntityResource("t", "o'neil", "x y"), "t(PartitionKey='o''neil',RowKey='x%20y')");
  EXPECT_EQ(EntityResource("t", "%2F", "a+b"), "t(PartitionKey='%252F',RowKey='a%2Bb')");
  EXPECT_EQ(EntityResource("t", "", "é"), "t(PartitionKey='',RowKey='%C3%A9')");
}

TEST(TableBatch, ValidateChecksCountPartitionKeysAndEntities) {
  int index = 7;
  EXPECT_TRUE(ValidateBatch(Ops(100), &index).ok());
  EXPECT_EQ(index, -1);
  EXPECT_EQ(ValidateBatch({}, &index).code(), Code::kInvalidArgument);
  EXPECT_EQ(ValidateBatch(Ops(101), &index).code(), Code::kTooLarge);
  EXPECT_EQ(index, -1);

  auto mixed = Ops(3);
  mixed[2].entity.partition_key = "Q";
  EXPECT_EQ(ValidateBatch(mixed, &index).code(), Code::kInvalidArgument);
  EXPECT_EQ(index, 2);

  auto dup = Ops(3);
  dup.push_back(TableOperation::Merge(MakeEntity("P", "1"), Condition::IfMatch("*")));
  EXPECT_EQ(ValidateBatch(dup, &index).code(), Code::kInvalidArgument);
  EXPECT_EQ(index, 3);

  auto unconditional_delete = Ops(2);
  unconditional_delete.push_back(TableOperation::Delete("P", "x", Condition::None()));
  EXPECT_EQ(ValidateBatch(unconditional_delete, &index).code(), Code::kInvalidArgument);
  EXPECT_EQ(index, 2);

  auto bad_key = Ops(2);
  bad_key[1].entity.row_key = "a/b";
  Status st = ValidateBatch(bad_key, &index);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_EQ(index, 1);
  EXPECT_NE(st.message().find("RowKey"), std::string::npos) << st.message();
}

// Azurite reads a part's PartitionKey up to the last "'," of the decoded
// line: a RowKey starting with ',' (or holding "',") needs a line break
// before it there. Azure gets the standard key predicate.
TEST(TableBatch, RowKeysAzuriteWouldMisreadBreakTheLineOnlyForTheEmulator) {
  for (const std::string rk : {",x", "a',b"}) {
    std::vector<TableOperation> ops;
    ops.push_back(TableOperation::Delete("%2F", rk, Condition::IfMatch("*")));
    auto emulator = BuildBatchBody(kEndpoint, "t", ops, "B", "C");
    auto azure = BuildBatchBody("https://acct.table.core.windows.net", "t", ops, "B", "C");
    ASSERT_TRUE(emulator.ok() && azure.ok());
    const std::string predicate = EntityResource("t", "%2F", rk);
    EXPECT_NE(azure->body.find("/" + predicate + " HTTP/1.1"), std::string::npos) << rk;
    EXPECT_NE(emulator->body.find("/t(PartitionKey='%252F',%0ARowKey='"), std::string::npos) << rk;
    EXPECT_GE(EstimateOperationBytes(ops[0]) + kBatchEnvelopeBytes, emulator->body.size());
  }
  std::vector<TableOperation> plain;
  plain.push_back(TableOperation::Delete("%2F", "x,y", Condition::IfMatch("*")));
  auto body = BuildBatchBody(kEndpoint, "t", plain, "B", "C");
  ASSERT_TRUE(body.ok());
  EXPECT_NE(body->body.find("RowKey='x%2Cy')"), std::string::npos) << "other keys unchanged";
  EXPECT_EQ(body->body.find("%0A"), std::string::npos);
}

TEST(TableBatch, BodyFollowsTheProtocolLayout) {
  std::vector<TableOperation> ops;
  ops.push_back(TableOperation::Insert(MakeEntity("P", "1")));
  ops.push_back(TableOperation::Merge(MakeEntity("P", "it's"), Condition::IfMatch("*")));
  ops.push_back(TableOperation::Delete("P", "2", Condition::IfMatch("W/\"e\"")));
  ops.push_back(TableOperation::Replace(MakeEntity("P", "3"), Condition::None()));
  auto body = BuildBatchBody(kEndpoint, "mytable", ops, "B", "C");
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(body->content_type, "multipart/mixed; boundary=batch_B");
  const std::string expected =
      "--batch_B\r\n"
      "Content-Type: multipart/mixed; boundary=changeset_C\r\n"
      "\r\n"
      "--changeset_C\r\n"
      "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
      "POST http://127.0.0.1:10002/devstoreaccount1/mytable HTTP/1.1\r\n"
      "Content-ID: 1\r\nContent-Type: application/json\r\n"
      "Accept: application/json;odata=minimalmetadata\r\nPrefer: return-no-content\r\n"
      "DataServiceVersion: 3.0;\r\n\r\n"
      "{\"PartitionKey\":\"P\",\"RowKey\":\"1\",\"V\":1}\r\n"
      "--changeset_C\r\n"
      "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
      "MERGE http://127.0.0.1:10002/devstoreaccount1/mytable(PartitionKey='P',RowKey='it''s') "
      "HTTP/1.1\r\n"
      "Content-ID: 2\r\nContent-Type: application/json\r\n"
      "Accept: application/json;odata=minimalmetadata\r\n"
      "DataServiceVersion: 3.0;\r\nIf-Match: *\r\n\r\n"
      "{\"PartitionKey\":\"P\",\"RowKey\":\"it's\",\"V\":1}\r\n"
      "--changeset_C\r\n"
      "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
      "DELETE http://127.0.0.1:10002/devstoreaccount1/mytable(PartitionKey='P',RowKey='2') "
      "HTTP/1.1\r\n"
      "Content-ID: 3\r\n"
      "Accept: application/json;odata=minimalmetadata\r\n"
      "DataServiceVersion: 3.0;\r\nIf-Match: W/\"e\"\r\n\r\n"
      "--changeset_C\r\n"
      "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
      "PUT http://127.0.0.1:10002/devstoreaccount1/mytable(PartitionKey='P',RowKey='3') "
      "HTTP/1.1\r\n"
      "Content-ID: 4\r\nContent-Type: application/json\r\n"
      "Accept: application/json;odata=minimalmetadata\r\n"
      "DataServiceVersion: 3.0;\r\n\r\n"
      "{\"PartitionKey\":\"P\",\"RowKey\":\"3\",\"V\":1}\r\n"
      "--changeset_C--\r\n"
      "--batch_B--\r\n";
  EXPECT_EQ(body->body, expected);
  // Every line ends in CRLF.
  for (size_t i = body->body.find('\n'); i != std::string::npos; i = body->body.find('\n', i + 1)) {
    ASSERT_GT(i, 0u);
    EXPECT_EQ(body->body[i - 1], '\r') << "bare LF at " << i;
  }
}

TEST(TableBatch, EstimateIsAnUpperBound) {
  auto ops = Ops(50);
  Entity big = MakeEntity("P", std::string(400, 'k'));
  big.properties["S"] = std::string(30000, '"');  // escaped as \" in JSON
  ops.push_back(TableOperation::Replace(big, Condition::IfMatch("W/\"datetime'x'\"")));
  auto body =
      BuildBatchBody(kEndpoint, "t12345678901234567890", ops, NewBoundaryId(), NewBoundaryId());
  ASSERT_TRUE(body.ok());
  size_t estimate = kBatchEnvelopeBytes;
  for (const auto& op : ops) estimate += EstimateOperationBytes(op);
  EXPECT_GE(estimate, body->body.size());
  EXPECT_LE(estimate, body->body.size() * 2);
}

TEST(TableBatch, BoundaryIdsAreUuidsAndDiffer) {
  const std::string a = NewBoundaryId();
  EXPECT_EQ(a.size(), 36u);
  EXPECT_EQ(a[8], '-');
  EXPECT_EQ(a[14], '4');
  EXPECT_NE(a, NewBoundaryId());
}

HttpResponse Response(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.headers["content-type"] = "multipart/mixed; boundary=batchresponse_X";
  r.body = std::move(body);
  return r;
}

std::string SuccessBody(const char* eol) {
  std::string b;
  const auto line = [&](const std::string& s) { b += s + eol; };
  line("--batchresponse_X");
  line("Content-Type: multipart/mixed; boundary=changesetresponse_Y");
  line("");
  for (int i = 1; i <= 3; ++i) {
    line("--changesetresponse_Y");
    line("Content-Type: application/http");
    line("Content-Transfer-Encoding: binary");
    line("");
    line("HTTP/1.1 204 No Content");
    line("X-Content-Type-Options: nosniff");
    line("DataServiceVersion: 3.0;");
    if (i != 2) line("ETag: W/\"datetime'2026-12-02T13%3A09%3A01.98" + std::to_string(i) + "Z'\"");
    line("");
  }
  line("--changesetresponse_Y--");
  line("--batchresponse_X--");
  return b;
}

TEST(TableBatch, ParsesSuccessWithEtagsInOrder) {
  for (const char* eol : {"\r\n", "\n"}) {
    BatchError error;
    auto result = ParseBatchResponse(Response(202, SuccessBody(eol)), 3, &error);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    ASSERT_EQ(result->etags.size(), 3u);
    EXPECT_EQ(result->etags[0], "W/\"datetime'2026-12-02T13%3A09%3A01.981Z'\"");
    EXPECT_EQ(result->etags[1], "");  // a delete
    EXPECT_EQ(result->etags[2], "W/\"datetime'2026-12-02T13%3A09%3A01.983Z'\"");
  }
}

TEST(TableBatch, PartCountMismatchIsCorruption) {
  BatchError error;
  auto result = ParseBatchResponse(Response(202, SuccessBody("\r\n")), 4, &error);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), Code::kCorruption);
  EXPECT_EQ(error.failed_index, -1);
}

std::string FailureBody(const char* eol, const std::string& content_id, const std::string& value) {
  std::string b;
  const auto line = [&](const std::string& s) { b += s + eol; };
  line("--batchresponse_X");
  line("Content-Type: multipart/mixed; boundary=changesetresponse_Z");
  line("");
  line("--changesetresponse_Z");
  line("Content-Type: application/http");
  line("Content-Transfer-Encoding: binary");
  line("");
  line("HTTP/1.1 409 Conflict");
  if (!content_id.empty()) line("Content-ID: " + content_id);
  line("DataServiceVersion: 3.0;");
  line("Content-Type: application/json;odata=minimalmetadata;charset=utf-8");
  line("");
  line(R"({"odata.error":{"code":"EntityAlreadyExists","message":{"lang":"en-US","value":")" +
       value + R"(\nRequestId:abc\nTime:2026-12-02T13:09:01.9884224Z"}}})");
  line("--changesetresponse_Z--");
  line("--batchresponse_X--");
  return b;
}

TEST(TableBatch, ParsesFailingPartWithItsIndex) {
  for (const char* eol : {"\r\n", "\n"}) {
    BatchError error;
    auto result = ParseBatchResponse(
        Response(202, FailureBody(eol, "2", "1:The specified entity already exists.")), 3, &error);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), Code::kAlreadyExists) << result.status().ToString();
    EXPECT_EQ(result.status().http_status(), 409);
    EXPECT_EQ(result.status().service_code(), "EntityAlreadyExists");
    EXPECT_EQ(error.failed_index, 1);
    EXPECT_EQ(error.status.code(), Code::kAlreadyExists);
  }
}

TEST(TableBatch, FailedIndexFallsBackToContentId) {
  BatchError error;
  auto result = ParseBatchResponse(
      Response(202, FailureBody("\r\n", "3", "The specified entity already exists.")), 5, &error);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(error.failed_index, 2);
  result = ParseBatchResponse(Response(202, FailureBody("\r\n", "", "no index")), 5, &error);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(error.failed_index, -1);
}

TEST(TableBatch, OuterErrorHasNoIndex) {
  HttpResponse r;
  r.status = 413;
  r.headers["x-ms-error-code"] = "RequestBodyTooLarge";
  r.body = R"({"odata.error":{"code":"RequestBodyTooLarge","message":{"value":"too big"}}})";
  BatchError error;
  auto result = ParseBatchResponse(r, 2, &error);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().http_status(), 413);
  EXPECT_EQ(error.failed_index, -1);
}

TEST(TableBatch, GarbageIsCorruption) {
  for (const std::string& body :
       {std::string(""), std::string("garbage"), std::string("--batchresponse_X\r\n"),
        std::string("--batchresponse_X\r\nContent-Type: application/http\r\n\r\nnot http\r\n"
                    "--batchresponse_X--\r\n"),
        SuccessBody("\r\n").substr(0, 200)}) {
    BatchError error;
    auto result = ParseBatchResponse(Response(202, body), 3, &error);
    ASSERT_FALSE(result.ok()) << body;
    EXPECT_EQ(result.status().code(), Code::kCorruption) << body;
    EXPECT_EQ(error.failed_index, -1);
  }
}

// A TableStore double for the splitter: records each transaction's row keys,
// times out transactions larger than `timeout_above`, and fails the call
// numbered `fail_call` (1-based) with a precondition failure.
class RecordingStore : public TableStore {
 public:
  size_t timeout_above = 1000;
  int fail_call = 0;
  std::vector<std::vector<std::string>> calls;

  std::vector<size_t> Sizes() const {
    std::vector<size_t> sizes;
    for (const auto& c : calls) sizes.push_back(c.size());
    return sizes;
  }

  Result<BatchResult> ExecuteBatch(const std::string&, const std::vector<TableOperation>& ops,
                                   BatchError* error) override {
    calls.emplace_back();
    for (const auto& op : ops) calls.back().push_back(op.entity.row_key);
    Status st;
    if (ops.size() > timeout_above) st = Status(Code::kTimeout, "deadline passed");
    if (static_cast<int>(calls.size()) == fail_call) {
      st = Status(Code::kPreconditionFailed, "etag", 412, "UpdateConditionNotSatisfied");
    }
    if (st.ok()) return BatchResult{std::vector<std::string>(ops.size())};
    if (error) *error = BatchError{st, st.Is(Code::kTimeout) ? -1 : 0};
    return st;
  }

  Status CreateTable(const std::string&) override { return Unsupported(); }
  Status DeleteTable(const std::string&) override { return Unsupported(); }
  Result<Entity> Get(const std::string&, const std::string&, const std::string&) override {
    return Unsupported();
  }
  Result<std::string> Insert(const std::string&, const Entity&) override { return Unsupported(); }
  Result<std::string> Update(const std::string&, const Entity&, UpdateMode,
                             const Condition&) override {
    return Unsupported();
  }
  Status Delete(const std::string&, const std::string&, const std::string&,
                const Condition&) override {
    return Unsupported();
  }
  Result<stampfs::QueryPage> QueryPage(const std::string&, const QueryOptions&, const std::string&,
                                       const std::string&) override {
    return Unsupported();
  }

 private:
  static Status Unsupported() { return Status(Code::kNotSupported, "test double"); }
};

std::vector<std::string> Flatten(const std::vector<std::vector<std::string>>& calls) {
  std::vector<std::string> all;
  for (const auto& c : calls) all.insert(all.end(), c.begin(), c.end());
  return all;
}

std::vector<std::string> RowKeys(const std::vector<TableOperation>& ops) {
  std::vector<std::string> keys;
  for (const auto& op : ops) keys.push_back(op.entity.row_key);
  return keys;
}

TEST(ExecuteInBatches, SplitsByOperationCountInOrder) {
  RecordingStore store;
  const auto ops = Ops(250);
  size_t applied = 0;
  EXPECT_TRUE(ExecuteInBatches(store, "t", ops, &applied).ok());
  EXPECT_EQ(applied, 250u);
  EXPECT_EQ(store.Sizes(), (std::vector<size_t>{100, 100, 50}));
  EXPECT_EQ(Flatten(store.calls), RowKeys(ops));
}

TEST(ExecuteInBatches, SplitsByBodySize) {
  RecordingStore store;
  std::vector<TableOperation> ops;
  for (int i = 0; i < 40; ++i) {
    Entity e = MakeEntity("P", std::to_string(i));
    for (int p = 0; p < 8; ++p) e.properties["S" + std::to_string(p)] = std::string(32768, 'x');
    ASSERT_TRUE(ValidateEntity(e).ok());
    ops.push_back(TableOperation::Insert(std::move(e)));
  }
  size_t applied = 0;
  EXPECT_TRUE(ExecuteInBatches(store, "t", ops, &applied).ok());
  EXPECT_EQ(applied, 40u);
  EXPECT_GE(store.calls.size(), 3u);
  EXPECT_EQ(Flatten(store.calls), RowKeys(ops));
  size_t next = 0;
  for (const auto& call : store.calls) {
    std::vector<TableOperation> chunk(ops.begin() + next, ops.begin() + next + call.size());
    next += call.size();
    auto body = BuildBatchBody("https://account.table.core.windows.net", "t", chunk,
                               NewBoundaryId(), NewBoundaryId());
    ASSERT_TRUE(body.ok());
    EXPECT_LE(body->body.size(), kMaxBatchBytes);
    // Not needlessly small: one more operation would not have fitted.
    if (next < ops.size()) {
      EXPECT_GT(body->body.size() + 262144, kMaxBatchBytes - 65536);
    }
  }
}

TEST(ExecuteInBatches, TimedOutTransactionsAreSplitInHalves) {
  RecordingStore store;
  store.timeout_above = 30;
  const auto ops = Ops(100);
  size_t applied = 0;
  EXPECT_TRUE(ExecuteInBatches(store, "t", ops, &applied).ok());
  EXPECT_EQ(applied, 100u);
  EXPECT_EQ(store.Sizes(), (std::vector<size_t>{100, 50, 25, 25, 50, 25, 25}));
  std::vector<std::vector<std::string>> succeeded;
  for (const auto& c : store.calls) {
    if (c.size() <= 30) succeeded.push_back(c);
  }
  EXPECT_EQ(Flatten(succeeded), RowKeys(ops));
}

TEST(ExecuteInBatches, SingleOperationTimeoutIsReturned) {
  RecordingStore store;
  store.timeout_above = 0;
  size_t applied = 9;
  Status st = ExecuteInBatches(store, "t", Ops(4), &applied);
  EXPECT_EQ(st.code(), Code::kTimeout);
  EXPECT_EQ(applied, 0u);
  EXPECT_EQ(store.Sizes(), (std::vector<size_t>{4, 2, 1}));
}

TEST(ExecuteInBatches, OtherFailuresStopWithoutSplitting) {
  RecordingStore store;
  store.fail_call = 2;
  size_t applied = 0;
  Status st = ExecuteInBatches(store, "t", Ops(250), &applied);
  EXPECT_EQ(st.code(), Code::kPreconditionFailed);
  EXPECT_EQ(applied, 100u);
  EXPECT_EQ(store.Sizes(), (std::vector<size_t>{100, 100}));
}

TEST(ExecuteInBatches, NothingToDo) {
  RecordingStore store;
  size_t applied = 5;
  EXPECT_TRUE(ExecuteInBatches(store, "t", {}, &applied).ok());
  EXPECT_EQ(applied, 0u);
  EXPECT_TRUE(store.calls.empty());
}

}  // namespace
}  // namespace stampfs
