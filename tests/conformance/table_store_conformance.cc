#include "conformance/table_store_conformance.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <set>
#include <vector>

namespace stampfs {
namespace {

std::string RandomHex(size_t digits) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string out;
  while (out.size() < digits) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
    out += buf;
  }
  return out.substr(0, digits);
}

Entity Make(const std::string& pk, const std::string& rk,
            std::map<std::string, PropertyValue> properties = {}) {
  Entity e;
  e.partition_key = pk;
  e.row_key = rk;
  e.properties = std::move(properties);
  return e;
}

std::string RowName(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "r%05d", i);
  return buf;
}

std::vector<std::string> RowKeys(const std::vector<Entity>& entities) {
  std::vector<std::string> keys;
  for (const Entity& e : entities) keys.push_back(e.row_key);
  return keys;
}

// A weak datetime ETag, as the service sends it: W/"datetime'...'".
bool LooksLikeEntityEtag(const std::string& etag) {
  return etag.rfind("W/\"datetime'", 0) == 0 && etag.size() > 16 && etag.back() == '"';
}

}  // namespace

std::string TableStoreFactoryName(const ::testing::TestParamInfo<TableStoreFactory>& info) {
  return info.param.name;
}

void TableStoreConformance::SetUp() {
  store_ = GetParam().make();
  ASSERT_NE(store_, nullptr);
  table_ = "conf" + RandomHex(16);
  ASSERT_TRUE(Ok(store_->CreateTable(table_)));
}

void TableStoreConformance::TearDown() {
  if (store_ && !table_.empty()) store_->DeleteTable(table_).PermitUnchecked();
}

std::string TableStoreConformance::InsertOrFail(const Entity& entity) {
  auto etag = store_->Insert(table_, entity);
  EXPECT_TRUE(Ok(etag)) << "insert " << entity.partition_key << "/" << entity.row_key;
  return etag.ok() ? *etag : std::string();
}

Entity TableStoreConformance::GetOrFail(const std::string& pk, const std::string& rk) {
  auto entity = store_->Get(table_, pk, rk);
  EXPECT_TRUE(Ok(entity)) << "get " << pk << "/" << rk;
  return entity.ok() ? *entity : Entity{};
}

bool TableStoreConformance::Exists(const std::string& pk, const std::string& rk) {
  auto entity = store_->Get(table_, pk, rk);
  EXPECT_TRUE(entity.ok() || entity.status().Is(Code::kNotFound)) << entity.status().ToString();
  return entity.ok();
}

// ---- tables and single entities

TEST_P(TableStoreConformance, CreatingAnExistingTableIsAlreadyExists) {
  EXPECT_TRUE(Fails(store_->CreateTable(table_), Code::kAlreadyExists));
}

TEST_P(TableStoreConformance, OperationsOnAMissingTableAreNotFound) {
  const std::string missing = "confmissing" + RandomHex(12);
  auto get = store_->Get(missing, "p", "r");
  EXPECT_TRUE(Fails(get, Code::kNotFound));
  EXPECT_EQ(get.status().service_code(), "TableNotFound");
  EXPECT_TRUE(Fails(store_->Insert(missing, Make("p", "r")), Code::kNotFound));
  EXPECT_TRUE(Fails(store_->QueryPartition(missing, "p"), Code::kNotFound));
  BatchError error;
  EXPECT_TRUE(Fails(store_->ExecuteBatch(missing, {TableOperation::Insert(Make("p", "r"))}, &error),
                    Code::kNotFound));
  EXPECT_EQ(error.failed_index, 0) << "the service names the first operation";
  EXPECT_TRUE(Fails(store_->DeleteTable(missing), Code::kNotFound));
}

TEST_P(TableStoreConformance, InsertThenGetRoundTripsEveryType) {
  const Entity entity = Make("part o'neil", "row ✓",
                             {{"S", std::string("naïve 'quoted' text")},
                              {"Big", int64_t{9007199254740993}},
                              {"Neg", int32_t{-7}},
                              {"Flag", true},
                              {"Half", 1.5},
                              {"Whole", 5.0},
                              {"Bin", Binary{std::string("\0\x01\xff", 3)}},
                              {"Empty", std::string()}});
  const std::string etag = InsertOrFail(entity);
  EXPECT_TRUE(LooksLikeEntityEtag(etag)) << etag;
  const Entity got = GetOrFail(entity.partition_key, entity.row_key);
  EXPECT_EQ(got.partition_key, entity.partition_key);
  EXPECT_EQ(got.row_key, entity.row_key);
  EXPECT_EQ(got.etag, etag);
  EXPECT_TRUE(got.properties == entity.properties);
  EXPECT_EQ(got.GetInt64("Big"), 9007199254740993);
  ASSERT_NE(got.GetBinary("Bin"), nullptr);
  EXPECT_EQ(got.GetBinary("Bin")->bytes, std::string("\0\x01\xff", 3));
  EXPECT_TRUE(std::holds_alternative<double>(got.properties.at("Whole")))
      << "an integral double stays a double";
}

TEST_P(TableStoreConformance, InsertingAnExistingEntityIsAlreadyExistsAndKeepsIt) {
  const std::string etag = InsertOrFail(Make("p", "r", {{"V", int32_t{1}}}));
  auto again = store_->Insert(table_, Make("p", "r", {{"V", int32_t{2}}}));
  EXPECT_TRUE(Fails(again, Code::kAlreadyExists));
  EXPECT_EQ(again.status().service_code(), "EntityAlreadyExists");
  const Entity got = GetOrFail("p", "r");
  EXPECT_EQ(got.etag, etag);
  EXPECT_TRUE(got.properties.at("V") == PropertyValue(int32_t{1}));
}

TEST_P(TableStoreConformance, GettingAMissingEntityIsNotFound) {
  EXPECT_TRUE(Fails(store_->Get(table_, "p", "nobody"), Code::kNotFound));
}

TEST_P(TableStoreConformance, StaleEtagOnReplaceOrMergeIsPreconditionFailedAndChangesNothing) {
  const std::string old_etag = InsertOrFail(Make("p", "r", {{"V", int32_t{1}}}));
  auto current = store_->Update(table_, Make("p", "r", {{"V", int32_t{2}}, {"W", true}}),
                                UpdateMode::kReplace, Condition::IfMatch(old_etag));
  ASSERT_TRUE(Ok(current));
  for (UpdateMode mode : {UpdateMode::kReplace, UpdateMode::kMerge}) {
    auto stale = store_->Update(table_, Make("p", "r", {{"V", int32_t{3}}}), mode,
                                Condition::IfMatch(old_etag));
    EXPECT_TRUE(Fails(stale, Code::kPreconditionFailed));
    EXPECT_EQ(stale.status().service_code(), "UpdateConditionNotSatisfied");
  }
  const Entity got = GetOrFail("p", "r");
  EXPECT_EQ(got.etag, *current);
  EXPECT_TRUE(got.properties == (Make("p", "r", {{"V", int32_t{2}}, {"W", true}}).properties));
}

TEST_P(TableStoreConformance, ReplaceDropsOmittedPropertiesAndMergeKeepsThem) {
  const std::string etag =
      InsertOrFail(Make("p", "r", {{"A", std::string("a")}, {"B", int64_t{2}}}));
  auto merged = store_->Update(table_, Make("p", "r", {{"B", int64_t{3}}, {"C", true}}),
                               UpdateMode::kMerge, Condition::IfMatch(etag));
  ASSERT_TRUE(Ok(merged));
  EXPECT_NE(*merged, etag);
  EXPECT_TRUE(GetOrFail("p", "r").properties ==
              (Make("", "", {{"A", std::string("a")}, {"B", int64_t{3}}, {"C", true}}).properties));
  auto replaced = store_->Update(table_, Make("p", "r", {{"C", false}}), UpdateMode::kReplace,
                                 Condition::IfMatch("*"));
  ASSERT_TRUE(Ok(replaced));
  const Entity got = GetOrFail("p", "r");
  EXPECT_TRUE(got.properties == (Make("", "", {{"C", false}}).properties));
  EXPECT_EQ(got.etag, *replaced);
}

TEST_P(TableStoreConformance, ConditionalUpdateOfAMissingEntityIsNotFound) {
  for (UpdateMode mode : {UpdateMode::kReplace, UpdateMode::kMerge}) {
    for (const char* etag : {"*", "W/\"datetime'2024-01-02T03%3A04%3A05.1234567Z'\""}) {
      EXPECT_TRUE(Fails(store_->Update(table_, Make("p", "ghost"), mode, Condition::IfMatch(etag)),
                        Code::kNotFound))
          << etag;
    }
  }
  EXPECT_FALSE(Exists("p", "ghost"));
}

TEST_P(TableStoreConformance, UnconditionalUpdateInsertsOrReplacesOrMerges) {
  auto created = store_->Update(table_, Make("p", "u", {{"A", int32_t{1}}}), UpdateMode::kReplace,
                                Condition::None());
  ASSERT_TRUE(Ok(created));
  EXPECT_EQ(GetOrFail("p", "u").etag, *created);
  ASSERT_TRUE(Ok(store_->Update(table_, Make("p", "u", {{"B", int32_t{2}}}), UpdateMode::kMerge,
                                Condition::None())));
  EXPECT_TRUE(GetOrFail("p", "u").properties ==
              (Make("", "", {{"A", int32_t{1}}, {"B", int32_t{2}}}).properties));
  ASSERT_TRUE(Ok(store_->Update(table_, Make("p", "u", {{"C", int32_t{3}}}), UpdateMode::kReplace,
                                Condition::None())));
  EXPECT_TRUE(GetOrFail("p", "u").properties == (Make("", "", {{"C", int32_t{3}}}).properties));
  ASSERT_TRUE(Ok(store_->Update(table_, Make("p", "m", {{"D", int32_t{4}}}), UpdateMode::kMerge,
                                Condition::None())));
  EXPECT_TRUE(Exists("p", "m")) << "insert-or-merge creates";
}

TEST_P(TableStoreConformance, EveryWriteGivesANewEtag) {
  std::set<std::string> etags;
  etags.insert(InsertOrFail(Make("p", "e", {{"V", int32_t{1}}})));
  for (int i = 0; i < 3; ++i) {
    auto etag = store_->Update(table_, Make("p", "e", {{"V", int32_t{1}}}), UpdateMode::kMerge,
                               Condition::IfMatch("*"));
    ASSERT_TRUE(Ok(etag));
    EXPECT_TRUE(LooksLikeEntityEtag(*etag)) << *etag;
    etags.insert(*etag);
  }
  EXPECT_EQ(etags.size(), 4u);
}

TEST_P(TableStoreConformance, DeleteHonoursItsEtagAndReportsMissingEntities) {
  const std::string old_etag = InsertOrFail(Make("p", "d", {{"V", int32_t{1}}}));
  auto etag = store_->Update(table_, Make("p", "d", {{"V", int32_t{2}}}), UpdateMode::kReplace,
                             Condition::IfMatch(old_etag));
  ASSERT_TRUE(Ok(etag));
  EXPECT_TRUE(Fails(store_->Delete(table_, "p", "d", Condition::IfMatch(old_etag)),
                    Code::kPreconditionFailed));
  EXPECT_TRUE(Exists("p", "d"));
  EXPECT_TRUE(Fails(store_->Delete(table_, "p", "d", Condition::None()), Code::kInvalidArgument))
      << "a delete must say which version it removes";
  EXPECT_TRUE(Exists("p", "d"));
  EXPECT_TRUE(Ok(store_->Delete(table_, "p", "d", Condition::IfMatch(*etag))));
  EXPECT_FALSE(Exists("p", "d"));
  auto again = store_->Delete(table_, "p", "d", Condition::IfMatch("*"));
  EXPECT_TRUE(Fails(again, Code::kNotFound));
  EXPECT_EQ(again.service_code(), "ResourceNotFound");
}

// ---- queries

TEST_P(TableStoreConformance, QueryOfAPartitionOf5500EntitiesReturnsAllInRowKeyOrder) {
  constexpr int kRows = 5500;
  std::vector<TableOperation> ops;
  for (int i = 0; i < kRows; ++i) {
    ops.push_back(TableOperation::Insert(Make("big", RowName(i), {{"N", int64_t{i}}})));
  }
  std::shuffle(ops.begin(), ops.end(), std::mt19937(42));
  size_t applied = 0;
  ASSERT_TRUE(Ok(ExecuteInBatches(*store_, table_, ops, &applied)));
  EXPECT_EQ(applied, static_cast<size_t>(kRows));
  for (const char* pk : {"bif", "big0", "bih"}) InsertOrFail(Make(pk, "r00000"));

  auto rows = store_->QueryPartition(table_, "big");
  ASSERT_TRUE(Ok(rows));
  ASSERT_EQ(rows->size(), static_cast<size_t>(kRows));
  for (int i = 0; i < kRows; ++i) {
    ASSERT_EQ((*rows)[i].row_key, RowName(i));
    ASSERT_EQ((*rows)[i].partition_key, "big");
    ASSERT_EQ((*rows)[i].GetInt64("N", -1), i);
    ASSERT_FALSE((*rows)[i].etag.empty());
  }
}

TEST_P(TableStoreConformance, QueryPagesFollowContinuations) {
  for (int i = 0; i < 7; ++i) InsertOrFail(Make("pg", RowName(i)));
  QueryOptions options;
  options.filter = FilterPartition("pg");
  options.top = 3;
  std::vector<std::string> seen;
  std::string next_pk, next_rk;
  int pages = 0;
  do {
    auto page = store_->QueryPage(table_, options, next_pk, next_rk);
    ASSERT_TRUE(Ok(page));
    EXPECT_LE(page->entities.size(), 3u);
    for (const Entity& e : page->entities) seen.push_back(e.row_key);
    next_pk = page->next_partition_key;
    next_rk = page->next_row_key;
    ASSERT_LT(++pages, 20) << "continuations do not advance";
  } while (!next_pk.empty() || !next_rk.empty());
  EXPECT_GE(pages, 3);
  std::vector<std::string> expected;
  for (int i = 0; i < 7; ++i) expected.push_back(RowName(i));
  EXPECT_EQ(seen, expected);
}

TEST_P(TableStoreConformance, QueryFiltersByQuotedPartitionAndRowKeyRange) {
  for (const char* rk : {"a", "b", "bz", "c", "d"}) InsertOrFail(Make("o'neil", rk));
  InsertOrFail(Make("o''neil", "b"));
  InsertOrFail(Make("o", "b"));
  auto partition = store_->QueryPartition(table_, "o'neil");
  ASSERT_TRUE(Ok(partition));
  EXPECT_EQ(RowKeys(*partition), (std::vector<std::string>{"a", "b", "bz", "c", "d"}));

  QueryOptions range;
  range.filter = FilterPartition("o'neil") + " and RowKey ge 'b' and RowKey lt 'c'";
  auto ranged = store_->Query(table_, range);
  ASSERT_TRUE(Ok(ranged));
  EXPECT_EQ(RowKeys(*ranged), (std::vector<std::string>{"b", "bz"}));

  auto everything = store_->Query(table_, QueryOptions{});
  ASSERT_TRUE(Ok(everything));
  std::vector<std::string> order;
  for (const Entity& e : *everything) order.push_back(e.partition_key + "|" + e.row_key);
  EXPECT_EQ(order, (std::vector<std::string>{"o|b", "o''neil|b", "o'neil|a", "o'neil|b",
                                             "o'neil|bz", "o'neil|c", "o'neil|d"}))
      << "ordered by PartitionKey, then RowKey";
}

TEST_P(TableStoreConformance, QueryFiltersOnTypedPropertiesWithAndOrNot) {
  InsertOrFail(Make("f", "a", {{"N", int32_t{1}}, {"Big", int64_t{5000000000}}, {"On", true}}));
  InsertOrFail(Make("f", "b", {{"N", int32_t{2}}, {"S", std::string("x'y")}}));
  InsertOrFail(Make("f", "c", {{"N", int32_t{3}}, {"On", false}, {"D", 2.5}}));
  const auto rows = [&](const std::string& filter) {
    QueryOptions options;
    options.filter = FilterPartition("f") + " and (" + filter + ")";
    auto result = store_->Query(table_, options);
    EXPECT_TRUE(Ok(result)) << filter;
    return result.ok() ? RowKeys(*result) : std::vector<std::string>{"<error>"};
  };
  using Keys = std::vector<std::string>;
  EXPECT_EQ(rows("N ge 2"), (Keys{"b", "c"}));
  EXPECT_EQ(rows("Big gt 4000000000L"), (Keys{"a"}));
  EXPECT_EQ(rows("On eq true"), (Keys{"a"}));
  EXPECT_EQ(rows("On ne true"), (Keys{"c"})) << "a missing property matches nothing";
  EXPECT_EQ(rows("S eq 'x''y'"), (Keys{"b"}));
  EXPECT_EQ(rows("D lt 3.0"), (Keys{"c"}));
  EXPECT_EQ(rows("RowKey eq 'a' or N eq 3"), (Keys{"a", "c"}));
  EXPECT_EQ(rows("not (RowKey eq 'a')"), (Keys{"b", "c"}));
  EXPECT_EQ(rows("N le 2 and not (On eq true)"), (Keys{"b"})) << "not of a miss is a match";
}

TEST_P(TableStoreConformance, QuerySelectReturnsOnlyTheChosenProperties) {
  InsertOrFail(Make("s", "1", {{"A", int32_t{1}}, {"B", std::string("b")}, {"C", true}}));
  QueryOptions options;
  options.filter = FilterPartition("s");
  options.select = {"B"};
  auto rows = store_->Query(table_, options);
  ASSERT_TRUE(Ok(rows));
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].row_key, "1");
  EXPECT_TRUE((*rows)[0].properties == (Make("", "", {{"B", std::string("b")}}).properties));
  EXPECT_FALSE((*rows)[0].etag.empty());
}

// ---- entity group transactions

TEST_P(TableStoreConformance, BatchWithOneFailingOperationAppliesNothingAndNamesIt) {
  const std::string etag = InsertOrFail(Make("b", "r2", {{"V", int32_t{1}}}));
  const std::vector<TableOperation> ops = {
      TableOperation::Insert(Make("b", "r1")),
      TableOperation::Insert(Make("b", "r2", {{"V", int32_t{2}}})),
      TableOperation::Insert(Make("b", "r3")),
  };
  BatchError error;
  auto result = store_->ExecuteBatch(table_, ops, &error);
  EXPECT_TRUE(Fails(result, Code::kAlreadyExists));
  EXPECT_TRUE(Fails(error.status, Code::kAlreadyExists));
  EXPECT_EQ(error.failed_index, 1);
  EXPECT_FALSE(Exists("b", "r1")) << "nothing of a failed batch is applied";
  EXPECT_FALSE(Exists("b", "r3"));
  EXPECT_EQ(GetOrFail("b", "r2").etag, etag);
}

TEST_P(TableStoreConformance, BatchWithAStaleEtagIsPreconditionFailedAndAppliesNothing) {
  const std::string old_etag = InsertOrFail(Make("b", "m", {{"V", int32_t{1}}}));
  ASSERT_TRUE(Ok(store_->Update(table_, Make("b", "m", {{"V", int32_t{2}}}), UpdateMode::kMerge,
                                Condition::IfMatch(old_etag))));
  BatchError error;
  auto result = store_->ExecuteBatch(
      table_,
      {TableOperation::Insert(Make("b", "new")),
       TableOperation::Merge(Make("b", "m", {{"V", int32_t{3}}}), Condition::IfMatch(old_etag))},
      &error);
  EXPECT_TRUE(Fails(result, Code::kPreconditionFailed));
  EXPECT_EQ(error.failed_index, 1);
  EXPECT_FALSE(Exists("b", "new"));
  EXPECT_TRUE(GetOrFail("b", "m").properties.at("V") == PropertyValue(int32_t{2}));
}

TEST_P(TableStoreConformance, BatchMixingInsertMergeReplaceDeleteAppliesAllAndReturnsEtags) {
  const std::string merge_etag = InsertOrFail(Make("b", "merge", {{"A", int32_t{1}}}));
  InsertOrFail(Make("b", "replace", {{"A", int32_t{1}}}));
  const std::string delete_etag = InsertOrFail(Make("b", "delete"));
  const std::vector<TableOperation> ops = {
      TableOperation::Insert(Make("b", "insert", {{"A", int32_t{1}}})),
      TableOperation::Merge(Make("b", "merge", {{"B", int32_t{2}}}),
                            Condition::IfMatch(merge_etag)),
      TableOperation::Replace(Make("b", "replace", {{"B", int32_t{2}}}), Condition::IfMatch("*")),
      TableOperation::Delete("b", "delete", Condition::IfMatch(delete_etag)),
      TableOperation::Replace(Make("b", "upsert", {{"C", int32_t{3}}}), Condition::None()),
  };
  BatchError error;
  auto result = store_->ExecuteBatch(table_, ops, &error);
  ASSERT_TRUE(Ok(result)) << "failed_index " << error.failed_index;
  ASSERT_EQ(result->etags.size(), ops.size());
  EXPECT_TRUE(result->etags[3].empty()) << "a delete has no ETag";
  for (size_t i : {0u, 1u, 2u, 4u}) {
    EXPECT_EQ(GetOrFail("b", ops[i].entity.row_key).etag, result->etags[i]) << i;
  }
  EXPECT_TRUE(GetOrFail("b", "merge").properties ==
              (Make("", "", {{"A", int32_t{1}}, {"B", int32_t{2}}}).properties));
  EXPECT_TRUE(GetOrFail("b", "replace").properties ==
              (Make("", "", {{"B", int32_t{2}}}).properties));
  EXPECT_FALSE(Exists("b", "delete"));
  EXPECT_TRUE(Exists("b", "upsert"));
}

TEST_P(TableStoreConformance, BatchesBreakingTheRulesAreRefusedWhole) {
  std::vector<TableOperation> too_many;
  for (int i = 0; i < 101; ++i) too_many.push_back(TableOperation::Insert(Make("b", RowName(i))));
  EXPECT_FALSE(store_->ExecuteBatch(table_, too_many).ok()) << "101 operations";

  BatchError error;
  auto two = store_->ExecuteBatch(
      table_, {TableOperation::Insert(Make("b", "x")), TableOperation::Insert(Make("other", "y"))},
      &error);
  EXPECT_TRUE(Fails(two, Code::kInvalidArgument)) << "two partitions";
  EXPECT_EQ(error.failed_index, 1);

  auto twice =
      store_->ExecuteBatch(table_, {TableOperation::Insert(Make("b", "x")),
                                    TableOperation::Replace(Make("b", "x"), Condition::None())});
  EXPECT_TRUE(Fails(twice, Code::kInvalidArgument)) << "one row twice";
  EXPECT_TRUE(Fails(store_->ExecuteBatch(table_, {}), Code::kInvalidArgument)) << "empty";

  auto rows = store_->Query(table_, QueryOptions{});
  ASSERT_TRUE(Ok(rows));
  EXPECT_TRUE(rows->empty()) << "no refused batch applied anything";
}

}  // namespace stampfs
