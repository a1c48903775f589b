// AzureTableClient checks that only make sense against a real service
// ($AZURE_STORAGE_CONNECTION_STRING, else Azurite): typed JSON round trips,
// escaped keys in URLs and batches, client-side limits, credentials.
// Behaviour shared with the fake lives in tests/conformance/table_store_conformance.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "integration/test_account.h"
#include "storage/auth.h"
#include "storage/azure_clients.h"
#include "storage/connection_string.h"
#include "storage/table_keys.h"

namespace stampfs {
namespace {

// "h3<test name><random hex>": letters and digits, starting with a letter, <= 63.
std::string UniqueTableName() {
  std::string name = "h3";
  for (char c : std::string(::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    if (name.size() >= 40) break;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) name += c;
  }
  std::random_device random;
  char suffix[20];
  std::snprintf(suffix, sizeof(suffix), "%08x%08x", random(), random());
  return name + suffix;
}

class TableClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto account = Account();
    ASSERT_TRUE(account.ok()) << account.status().ToString();
    account_ = *account;
    store_ = MakeAzureTableClient(account_);
    table_ = UniqueTableName();
    Status created = store_->CreateTable(table_);
    ASSERT_TRUE(created.ok()) << created.ToString();
  }

  void TearDown() override {
    if (store_ && !table_.empty()) store_->DeleteTable(table_).PermitUnchecked();
  }

  StorageAccount account_;
  std::unique_ptr<TableStore> store_;
  std::string table_;
};

Entity Typed(const std::string& pk, const std::string& rk) {
  Entity e;
  e.partition_key = pk;
  e.row_key = rk;
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes.push_back(static_cast<char>(b));
  e.properties["Big"] = int64_t{9007199254740993};  // 2^53 + 1
  e.properties["Max"] = std::numeric_limits<int64_t>::max();
  e.properties["Min"] = std::numeric_limits<int64_t>::min();
  e.properties["Small64"] = int64_t{3};
  e.properties["I"] = int32_t{-2147483647};
  e.properties["B"] = true;
  e.properties["F"] = false;
  e.properties["D"] = 0.1;
  e.properties["Whole"] = 5.0;
  e.properties["Huge"] = 1e300;
  e.properties["Bin"] = Binary{all_bytes};
  e.properties["S"] = std::string("héllo 日本 \xF0\x9F\x98\x80 \"q\" 'a' \\ /");
  e.properties["Empty"] = std::string();
  return e;
}

TEST_F(TableClientTest, EveryTypeRoundTripsThroughInsertGetAndQuery) {
  const Entity e = Typed("p", "r");
  auto etag = store_->Insert(table_, e);
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();
  EXPECT_EQ(etag->rfind("W/\"", 0), 0u) << *etag;

  auto got = store_->Get(table_, "p", "r");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->etag, *etag);
  EXPECT_EQ(got->partition_key, "p");
  EXPECT_EQ(got->row_key, "r");
  EXPECT_EQ(got->properties, e.properties);

  auto all = store_->QueryPartition(table_, "p");
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].properties, e.properties);
  EXPECT_EQ((*all)[0].etag, *etag);
}

TEST_F(TableClientTest, SelectReturnsKeysAndTheChosenProperties) {
  ASSERT_TRUE(store_->Insert(table_, Typed("p", "r")).ok());
  QueryOptions options;
  options.filter = FilterPartition("p");
  options.select = {"Big", "Bin"};
  auto rows = store_->Query(table_, options);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].row_key, "r");
  EXPECT_EQ((*rows)[0].properties.size(), 2u);
  EXPECT_EQ((*rows)[0].GetInt64("Big"), 9007199254740993);
}

std::vector<std::string> AwkwardNames() {
  std::vector<std::string> names = {"with space",
                                    "100%",
                                    "%2F",
                                    "o'neil",
                                    "''",
                                    "a+b=c&d",
                                    "tab\there",
                                    "back\\slash",
                                    "hash#q?",
                                    "héllo 日本",
                                    "\xF0\x9F\x98\x80",
                                    "~tilde",
                                    "(paren)",
                                    "\xFF\xFE bad utf8",
                                    std::string(255, 'n'),
                                    std::string(255, '%'),
                                    std::string(255, '\'')};
  std::string c1;
  while (c1.size() + 2 <= 255) c1 += "\xC2\x85";
  names.push_back(c1);
  return names;
}

TEST_F(TableClientTest, EscapedKeysWorkInPointOperations) {
  const std::string pk = KeyFor("/dir with 'quote' %/and\\more");
  for (const std::string& name : AwkwardNames()) {
    const std::string rk = KeyFor(name);
    SCOPED_TRACE(rk);
    Entity e;
    e.partition_key = pk;
    e.row_key = rk;
    e.properties["Name"] = Binary{name};
    auto etag = store_->Insert(table_, e);
    ASSERT_TRUE(etag.ok()) << etag.status().ToString();
    auto got = store_->Get(table_, pk, rk);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->row_key, rk);
    EXPECT_EQ(got->GetBinary("Name")->bytes, name);

    Entity patch;
    patch.partition_key = pk;
    patch.row_key = rk;
    patch.properties["Extra"] = int64_t{7};
    auto merged = store_->Update(table_, patch, UpdateMode::kMerge, Condition::IfMatch(*etag));
    ASSERT_TRUE(merged.ok()) << merged.status().ToString();
    got = store_->Get(table_, pk, rk);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->GetInt64("Extra"), 7);
    EXPECT_TRUE(got->Has("Name"));

    ASSERT_TRUE(store_->Delete(table_, pk, rk, Condition::IfMatch(*merged)).ok());
    EXPECT_EQ(store_->Get(table_, pk, rk).status().code(), Code::kNotFound);
  }
}

TEST_F(TableClientTest, HashedKeysWork) {
  const std::string long_path = "/" + std::string(300, 'd') + "/" + std::string(300, '%');
  const std::string pk = KeyFor(long_path);
  const std::string rk = KeyFor(std::string(255, '\x01'));
  ASSERT_TRUE(IsHashedKey(pk));
  ASSERT_TRUE(IsHashedKey(rk));
  Entity e;
  e.partition_key = pk;
  e.row_key = rk;
  e.properties["Path"] = long_path;
  ASSERT_TRUE(store_->Insert(table_, e).ok());
  auto got = store_->Get(table_, pk, rk);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got->GetString("Path"), long_path);
  auto listed = store_->QueryPartition(table_, pk);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(listed->size(), 1u);
}

TEST_F(TableClientTest, EscapedKeysWorkInBatches) {
  const std::string pk = KeyFor("/batch dir 'q' %");
  const auto names = AwkwardNames();
  std::vector<TableOperation> inserts;
  for (const auto& name : names) {
    Entity e;
    e.partition_key = pk;
    e.row_key = KeyFor(name);
    e.properties["N"] = int32_t{1};
    inserts.push_back(TableOperation::Insert(e));
  }
  BatchError error;
  auto inserted = store_->ExecuteBatch(table_, inserts, &error);
  ASSERT_TRUE(inserted.ok()) << inserted.status().ToString() << " at " << error.failed_index;
  ASSERT_EQ(inserted->etags.size(), names.size());

  std::vector<TableOperation> merges;
  for (size_t i = 0; i < names.size(); ++i) {
    Entity e = inserts[i].entity;
    e.properties["N"] = int32_t{2};
    merges.push_back(TableOperation::Merge(e, Condition::IfMatch(inserted->etags[i])));
  }
  auto merged = store_->ExecuteBatch(table_, merges, &error);
  ASSERT_TRUE(merged.ok()) << merged.status().ToString() << " at " << error.failed_index;

  auto listed = store_->QueryPartition(table_, pk);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), names.size());
  for (const auto& e : *listed) EXPECT_EQ(std::get<int32_t>(e.properties.at("N")), 2);

  std::vector<TableOperation> deletes;
  for (size_t i = 0; i < names.size(); ++i) {
    deletes.push_back(
        TableOperation::Delete(pk, KeyFor(names[i]), Condition::IfMatch(merged->etags[i])));
  }
  auto deleted = store_->ExecuteBatch(table_, deletes, &error);
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString() << " at " << error.failed_index;
  listed = store_->QueryPartition(table_, pk);
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());
}

// Azurite read the PartitionKey of a $batch part up to the last "'," of its
// URL, so MERGE, PUT and DELETE of these RowKeys answered 404 (an upsert
// landed in another partition); names starting with ',' could be created but
// never changed or removed (issue 12, defect 6).
TEST_F(TableClientTest, RowKeysStartingWithACommaWorkInBatchesAndAlone) {
  for (const std::string dir : {"/", "/,d", "/a',b"}) {
    const std::string pk = KeyFor(dir);
    for (const std::string rk : {",x", ",", ",,y", "a',b", "',"}) {
      SCOPED_TRACE(pk + " " + rk);
      Entity dot;
      dot.partition_key = pk;
      dot.row_key = ".";
      dot.properties["T"] = int32_t{0};
      Entity e = dot;
      e.row_key = rk;
      BatchError error;
      auto inserted = store_->ExecuteBatch(
          table_, {TableOperation::Insert(e), TableOperation::Insert(dot)}, &error);
      ASSERT_TRUE(inserted.ok()) << inserted.status().ToString();

      e.properties["T"] = int32_t{1};
      dot.properties["T"] = int32_t{1};
      auto merged = store_->ExecuteBatch(
          table_,
          {TableOperation::Merge(e, Condition::IfMatch(inserted->etags[0])),
           TableOperation::Merge(dot, Condition::IfMatch("*"))},
          &error);
      ASSERT_TRUE(merged.ok()) << merged.status().ToString() << " at " << error.failed_index;
      e.properties["T"] = int32_t{2};
      auto replaced = store_->ExecuteBatch(
          table_, {TableOperation::Replace(e, Condition::IfMatch(merged->etags[0]))}, &error);
      ASSERT_TRUE(replaced.ok()) << replaced.status().ToString();
      e.properties["T"] = int32_t{3};
      auto upserted =
          store_->ExecuteBatch(table_, {TableOperation::Replace(e, Condition::None())}, &error);
      ASSERT_TRUE(upserted.ok()) << upserted.status().ToString();
      auto got = store_->Get(table_, pk, rk);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(std::get<int32_t>(got->properties.at("T")), 3);
      auto listed = store_->QueryPartition(table_, pk);
      ASSERT_TRUE(listed.ok());
      EXPECT_EQ(listed->size(), 2u) << "the upsert replaced the row, in its partition";

      // Alone (point requests, not in a batch).
      e.properties["T"] = int32_t{4};
      auto alone = store_->Update(table_, e, UpdateMode::kMerge, Condition::IfMatch(got->etag));
      ASSERT_TRUE(alone.ok()) << alone.status().ToString();
      alone = store_->Update(table_, e, UpdateMode::kReplace, Condition::IfMatch(*alone));
      ASSERT_TRUE(alone.ok()) << alone.status().ToString();
      ASSERT_TRUE(store_->Delete(table_, pk, rk, Condition::IfMatch(*alone)).ok());
      ASSERT_TRUE(store_->Insert(table_, e).ok());

      auto deleted = store_->ExecuteBatch(
          table_,
          {TableOperation::Delete(pk, rk, Condition::IfMatch("*")),
           TableOperation::Delete(pk, ".", Condition::IfMatch("*"))},
          &error);
      ASSERT_TRUE(deleted.ok()) << deleted.status().ToString() << " at " << error.failed_index;
      listed = store_->QueryPartition(table_, pk);
      ASSERT_TRUE(listed.ok());
      EXPECT_TRUE(listed->empty());
    }
  }
  auto all = store_->QueryPartition(table_, "%2F',RowKey=");
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->empty()) << "nothing landed in a misread partition";
}

std::vector<TableOperation> Inserts(size_t n) {
  std::vector<TableOperation> ops;
  for (size_t i = 0; i < n; ++i) {
    Entity e;
    e.partition_key = "p";
    char rk[16];
    std::snprintf(rk, sizeof(rk), "%05zu", i);
    e.row_key = rk;
    e.properties["I"] = static_cast<int64_t>(i);
    ops.push_back(TableOperation::Insert(std::move(e)));
  }
  return ops;
}

TEST_F(TableClientTest, BatchOfOneHundredSucceedsAndOneHundredOneIsRefused) {
  BatchError error;
  auto result = store_->ExecuteBatch(table_, Inserts(100), &error);
  ASSERT_TRUE(result.ok()) << result.status().ToString() << " at " << error.failed_index;
  EXPECT_EQ(result->etags.size(), 100u);
  for (const auto& etag : result->etags) EXPECT_FALSE(etag.empty());
  auto listed = store_->QueryPartition(table_, "p");
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 100u);

  auto refused = store_->ExecuteBatch(table_, Inserts(101), &error);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kTooLarge);
  EXPECT_EQ(refused.status().http_status(), 0);  // never sent
  EXPECT_EQ(error.failed_index, -1);
}

TEST_F(TableClientTest, FailedBatchNamesTheOperationAndAppliesNothing) {
  ASSERT_TRUE(store_->ExecuteBatch(table_, {Inserts(3)[2]}).ok());
  BatchError error;
  auto result = store_->ExecuteBatch(table_, Inserts(5), &error);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), Code::kAlreadyExists) << result.status().ToString();
  EXPECT_EQ(error.failed_index, 2);
  auto listed = store_->QueryPartition(table_, "p");
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 1u);
}

TEST_F(TableClientTest, ExecuteInBatchesSplitsLargeWork) {
  size_t applied = 0;
  Status st = ExecuteInBatches(*store_, table_, Inserts(250), &applied);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(applied, 250u);
  auto listed = store_->QueryPartition(table_, "p");
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 250u);
}

TEST_F(TableClientTest, DoubleSpecialsRoundTrip) {
  Entity e;
  e.partition_key = "p";
  e.row_key = "d";
  e.properties["Nan"] = std::numeric_limits<double>::quiet_NaN();
  e.properties["Inf"] = std::numeric_limits<double>::infinity();
  e.properties["NegInf"] = -std::numeric_limits<double>::infinity();
  e.properties["Tiny"] = 4.9e-324;
  auto etag = store_->Insert(table_, e);
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();
  auto got = store_->Get(table_, "p", "d");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(std::isnan(std::get<double>(got->properties.at("Nan"))));
  EXPECT_EQ(std::get<double>(got->properties.at("Inf")), std::numeric_limits<double>::infinity());
  EXPECT_EQ(std::get<double>(got->properties.at("NegInf")),
            -std::numeric_limits<double>::infinity());
  EXPECT_EQ(std::get<double>(got->properties.at("Tiny")), 4.9e-324);
}

TEST_F(TableClientTest, NearLimitEntitiesAndBatchesAreAccepted) {
  std::vector<TableOperation> ops;
  for (int i = 0; i < 40; ++i) {
    Entity e;
    e.partition_key = "big";
    e.row_key = "r" + std::to_string(100 + i);
    // 8 strings of 32768 units: about 256 KiB of JSON each, 15 to a batch.
    for (int p = 0; p < 8; ++p) e.properties["S" + std::to_string(p)] = std::string(32768, 'a' + p);
    ops.push_back(TableOperation::Insert(std::move(e)));
  }
  size_t applied = 0;
  Status st = ExecuteInBatches(*store_, table_, ops, &applied);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(applied, 40u);

  Entity large;  // just under 1 MiB by Azure's formula
  large.partition_key = "big";
  large.row_key = "large";
  for (int i = 0; i < 15; ++i)
    large.properties["S" + std::to_string(i + 10)] = std::string(32768, 'z');
  large.properties["Rest"] = Binary{std::string(60000, '\x01')};
  ASSERT_TRUE(ValidateEntity(large).ok());
  ASSERT_GT(EntitySizeBytes(large), 1000000u);
  auto etag = store_->Update(table_, large, UpdateMode::kReplace, Condition::None());
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();
  auto got = store_->Get(table_, "big", "large");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->properties, large.properties);
  auto listed = store_->QueryPartition(table_, "big");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(listed->size(), 41u);
}

TEST_F(TableClientTest, OversizedEntityIsRefusedClientSide) {
  Entity e;
  e.partition_key = "p";
  e.row_key = "big";
  for (int i = 0; i < 16; ++i) e.properties["S" + std::to_string(i + 10)] = std::string(32768, 'x');
  auto inserted = store_->Insert(table_, e);
  ASSERT_FALSE(inserted.ok());
  EXPECT_EQ(inserted.status().code(), Code::kTooLarge);
  EXPECT_EQ(inserted.status().http_status(), 0);
  EXPECT_NE(inserted.status().message().find("1048576"), std::string::npos)
      << inserted.status().message();
  auto replaced = store_->Update(table_, e, UpdateMode::kReplace, Condition::None());
  EXPECT_EQ(replaced.status().code(), Code::kTooLarge);
  BatchError error;
  auto batch = store_->ExecuteBatch(table_, {TableOperation::Insert(e)}, &error);
  EXPECT_EQ(batch.status().code(), Code::kTooLarge);
  EXPECT_EQ(error.failed_index, 0);
  EXPECT_EQ(store_->Get(table_, "p", "big").status().code(), Code::kNotFound);
}

TEST_F(TableClientTest, DeleteNeedsAnExplicitCondition) {
  EXPECT_EQ(store_->Delete(table_, "p", "r", Condition::None()).code(), Code::kInvalidArgument);
}

TEST_F(TableClientTest, CreatingAnExistingTableSaysSo) {
  EXPECT_EQ(store_->CreateTable(table_).code(), Code::kAlreadyExists);
}

TEST_F(TableClientTest, WrongKeyIsAnAuthFailure) {
  if (!account_.HasKey()) GTEST_SKIP() << "needs a Shared Key account";
  StorageAccount wrong = account_;
  wrong.account_key = Base64Encode(std::string(64, '\x42'));
  auto bad = MakeAzureTableClient(wrong);
  EXPECT_EQ(bad->CreateTable(UniqueTableName()).code(), Code::kAuth);
  EXPECT_EQ(bad->Get(table_, "p", "r").status().code(), Code::kAuth);
  Status st = bad->ExecuteBatch(table_, Inserts(2)).status();
  EXPECT_EQ(st.code(), Code::kAuth) << st.ToString();
  EXPECT_EQ(st.message().find(wrong.account_key), std::string::npos);
}

}  // namespace
}  // namespace stampfs
