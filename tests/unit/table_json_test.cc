#include "storage/table_json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace stampfs {
namespace {

using nlohmann::json;

Entity Sample() {
  Entity e;
  e.partition_key = "%2Fdir";
  e.row_key = "o'neil é";
  e.properties["S"] = std::string("text \"quoted\"\n\xF0\x9F\x98\x80");
  e.properties["Big"] = int64_t{9007199254740993};  // 2^53 + 1: not a double
  e.properties["Max"] = std::numeric_limits<int64_t>::max();
  e.properties["Min"] = std::numeric_limits<int64_t>::min();
  e.properties["Small64"] = int64_t{5};
  e.properties["I"] = int32_t{-7};
  e.properties["B"] = true;
  e.properties["D"] = 0.1;
  e.properties["Whole"] = 5.0;
  e.properties["Bin"] = Binary{std::string("\x00\x01\xFF\x80", 4)};
  e.properties["Empty"] = Binary{};
  return e;
}

TEST(TableJson, WritesTypedSingleLineJson) {
  auto text = EntityToJson(Sample());
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->find('\n'), std::string::npos);
  const json doc = json::parse(*text);
  EXPECT_EQ(doc["PartitionKey"], "%2Fdir");
  EXPECT_EQ(doc["RowKey"], "o'neil é");
  EXPECT_EQ(doc["Big@odata.type"], "Edm.Int64");
  EXPECT_EQ(doc["Big"], "9007199254740993");
  EXPECT_EQ(doc["Min"], "-9223372036854775808");
  EXPECT_TRUE(doc["I"].is_number_integer());
  EXPECT_FALSE(doc.contains("I@odata.type"));
  EXPECT_EQ(doc["D@odata.type"], "Edm.Double");
  EXPECT_EQ(doc["Whole@odata.type"], "Edm.Double");
  EXPECT_EQ(doc["Bin@odata.type"], "Edm.Binary");
  EXPECT_EQ(doc["Bin"], "AAH/gA==");
  EXPECT_EQ(doc["B"], true);
  EXPECT_FALSE(doc.contains("S@odata.type"));
}

TEST(TableJson, KeysCanBeLeftOut) {
  auto text = EntityToJson(Sample(), /*include_keys=*/false);
  ASSERT_TRUE(text.ok());
  const json doc = json::parse(*text);
  EXPECT_FALSE(doc.contains("PartitionKey"));
  EXPECT_FALSE(doc.contains("RowKey"));
}

TEST(TableJson, EveryTypeRoundTrips) {
  const Entity e = Sample();
  auto back = ParseEntityJson(EntityToJson(e).value());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->partition_key, e.partition_key);
  EXPECT_EQ(back->row_key, e.row_key);
  EXPECT_EQ(back->properties, e.properties);
}

TEST(TableJson, DoubleSpecialsRoundTrip) {
  Entity e;
  e.properties["N"] = std::numeric_limits<double>::quiet_NaN();
  e.properties["P"] = std::numeric_limits<double>::infinity();
  e.properties["M"] = -std::numeric_limits<double>::infinity();
  e.properties["Tiny"] = 4.9e-324;
  auto back = ParseEntityJson(EntityToJson(e).value());
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(std::isnan(std::get<double>(back->properties["N"])));
  EXPECT_EQ(std::get<double>(back->properties["P"]), std::numeric_limits<double>::infinity());
  EXPECT_EQ(std::get<double>(back->properties["M"]), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(std::get<double>(back->properties["Tiny"]), 4.9e-324);
}

// What Azurite returns with minimalmetadata: annotations on Int64 and Binary,
// none on a double with an integral value.
TEST(TableJson, ReadsServiceResponse) {
  const std::string body =
      R"({"odata.metadata":"http://x/$metadata#t/@Element",)"
      R"("odata.etag":"W/\"datetime'2026-12-02T13%3A08%3A29.9293636Z'\"",)"
      R"("PartitionKey":"p","RowKey":"r","Timestamp":"2026-12-02T13:08:29.9293636Z",)"
      R"("Big@odata.type":"Edm.Int64","Big":"9223372036854775807","D":5.0,"E":1e3,"I":7,)"
      R"("Wide":3000000000,"B":false,"Bin@odata.type":"Edm.Binary","Bin":"AQID",)"
      R"("When@odata.type":"Edm.DateTime","When":"2024-01-02T03:04:05Z","S":"x"})";
  auto e = ParseEntityJson(body);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->etag, "W/\"datetime'2026-12-02T13%3A08%3A29.9293636Z'\"");
  EXPECT_EQ(e->partition_key, "p");
  EXPECT_EQ(e->row_key, "r");
  EXPECT_FALSE(e->Has("Timestamp"));
  EXPECT_FALSE(e->Has("odata.metadata"));
  EXPECT_EQ(e->GetInt64("Big"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(std::get<double>(e->properties.at("D")), 5.0);
  EXPECT_EQ(std::get<double>(e->properties.at("E")), 1000.0);
  EXPECT_EQ(std::get<int32_t>(e->properties.at("I")), 7);
  EXPECT_EQ(std::get<int64_t>(e->properties.at("Wide")), 3000000000);
  EXPECT_EQ(std::get<bool>(e->properties.at("B")), false);
  EXPECT_EQ(e->GetBinary("Bin")->bytes, "\x01\x02\x03");
  EXPECT_EQ(*e->GetString("When"), "2024-01-02T03:04:05Z");
  EXPECT_EQ(*e->GetString("S"), "x");
  EXPECT_EQ(e->properties.size(), 9u);
}

TEST(TableJson, ReadsQueryPages) {
  const std::string body =
      R"({"odata.metadata":"m","value":[)"
      R"({"odata.etag":"W/\"1\"","PartitionKey":"p","RowKey":"a","N@odata.type":"Edm.Int64","N":"1"},)"
      R"({"odata.etag":"W/\"2\"","PartitionKey":"p","RowKey":"b","N@odata.type":"Edm.Int64","N":"2"}]})";
  auto list = ParseEntityListJson(body);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[1].row_key, "b");
  EXPECT_EQ((*list)[1].etag, "W/\"2\"");
  EXPECT_EQ((*list)[1].GetInt64("N"), 2);
  auto empty = ParseEntityListJson(R"({"value":[]})");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(TableJson, MalformedInputIsCorruptionNotACrash) {
  for (const std::string body :
       {"", "{", "[1,2]", "null", "\"x\"", R"({"PartitionKey":5})",
        R"({"A@odata.type":"Edm.Int64","A":"12x"})",
        R"({"A@odata.type":"Edm.Int64","A":"99999999999999999999"})",
        R"({"A@odata.type":"Edm.Int64","A":true})", R"({"A@odata.type":"Edm.Binary","A":"!!!"})",
        R"({"A@odata.type":"Edm.Binary","A":12})", R"({"A@odata.type":"Edm.Double","A":"x"})",
        R"({"A@odata.type":"Edm.Int32","A":3000000000})", R"({"A":{"nested":1}})", R"({"A":[1]})",
        R"({"A":18446744073709551615})", "{\"A\":\"\xFF\"}"}) {
    auto e = ParseEntityJson(body);
    EXPECT_FALSE(e.ok()) << body;
    if (!e.ok()) {
      EXPECT_EQ(e.status().code(), Code::kCorruption) << body;
    }
  }
  for (const std::string body :
       {"", "{}", R"({"value":3})", R"({"value":[1]})", "[]", "{\"value\":["}) {
    auto list = ParseEntityListJson(body);
    EXPECT_FALSE(list.ok()) << body;
    if (!list.ok()) {
      EXPECT_EQ(list.status().code(), Code::kCorruption) << body;
    }
  }
}

TEST(TableJson, InvalidUtf8IsRefusedOnWrite) {
  Entity e;
  e.properties["S"] = std::string("\xFF");
  auto text = EntityToJson(e);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), Code::kInvalidArgument);
}

Entity Keys() {
  Entity e;
  e.partition_key = "p";
  e.row_key = "r";
  return e;
}

TEST(ValidateEntity, AcceptsOrdinaryEntities) {
  EXPECT_TRUE(ValidateEntity(Sample()).ok()) << ValidateEntity(Sample()).ToString();
  EXPECT_TRUE(ValidateEntity(Entity{}).ok());  // empty keys are legal
}

TEST(ValidateEntity, RefusesBadKeys) {
  for (const std::string bad : {"a/b", "a\\b", "a#b", "a?b", "a\tb", "\x7f", "\xC2\x9F", "\xFF"}) {
    Entity e = Keys();
    e.row_key = bad;
    Status st = ValidateEntity(e);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("RowKey"), std::string::npos) << st.message();
  }
  Entity e = Keys();
  e.partition_key = std::string(512, 'k');
  EXPECT_TRUE(ValidateEntity(e).ok());
  e.partition_key = std::string(513, 'k');
  EXPECT_EQ(ValidateEntity(e).code(), Code::kTooLarge);
  e.partition_key = std::string(256, 'k');
  for (int i = 0; i < 128; ++i) e.partition_key += "\xF0\x9F\x98\x80";  // 256 more units
  EXPECT_TRUE(ValidateEntity(e).ok());
  e.partition_key += "k";
  EXPECT_EQ(ValidateEntity(e).code(), Code::kTooLarge);
}

TEST(ValidateEntity, RefusesBadPropertyNames) {
  for (const std::string bad : {"", "1abc", "a-b", "a.b", "a@odata.type", "odata.etag", "é",
                                "PartitionKey", "RowKey", "Timestamp"}) {
    Entity e = Keys();
    e.properties[bad] = true;
    Status st = ValidateEntity(e);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("\"" + bad + "\""), std::string::npos) << st.message();
  }
  Entity e = Keys();
  e.properties["_ok_Name9"] = true;
  e.properties[std::string(255, 'n')] = true;
  EXPECT_TRUE(ValidateEntity(e).ok());
  e.properties[std::string(256, 'n')] = true;
  EXPECT_EQ(ValidateEntity(e).code(), Code::kInvalidArgument);
}

TEST(ValidateEntity, EnforcesPropertyCount) {
  Entity e = Keys();
  for (size_t i = 0; i < kMaxProperties; ++i) e.properties["P" + std::to_string(i)] = true;
  EXPECT_TRUE(ValidateEntity(e).ok());
  e.properties["One_more"] = true;
  EXPECT_EQ(ValidateEntity(e).code(), Code::kTooLarge);
}

TEST(ValidateEntity, EnforcesValueSizesNamingTheProperty) {
  Entity e = Keys();
  e.properties["S"] = std::string(32768, 'x');
  e.properties["Bin"] = Binary{std::string(65536, 'x')};
  EXPECT_TRUE(ValidateEntity(e).ok());
  e.properties["S"] = std::string(32769, 'x');
  Status st = ValidateEntity(e);
  EXPECT_EQ(st.code(), Code::kTooLarge);
  EXPECT_NE(st.message().find("\"S\""), std::string::npos) << st.message();
  // 16384 emoji = 32768 UTF-16 units in 65536 bytes: still fits.
  std::string emoji;
  for (int i = 0; i < 16384; ++i) emoji += "\xF0\x9F\x98\x80";
  e.properties["S"] = emoji;
  EXPECT_TRUE(ValidateEntity(e).ok());
  e.properties["S"] = emoji + "x";
  EXPECT_EQ(ValidateEntity(e).code(), Code::kTooLarge);
  e.properties["S"] = std::string("x");
  e.properties["Bin"] = Binary{std::string(65537, 'x')};
  st = ValidateEntity(e);
  EXPECT_EQ(st.code(), Code::kTooLarge);
  EXPECT_NE(st.message().find("\"Bin\""), std::string::npos) << st.message();
  e.properties["Bin"] = Binary{};
  e.properties["S"] = std::string("\xC3");
  EXPECT_EQ(ValidateEntity(e).code(), Code::kInvalidArgument);
}

TEST(ValidateEntity, SizeFollowsAzuresFormula) {
  Entity e;
  e.partition_key = "pk";  // 4 + 2 * (2 + 3)
  e.row_key = "abc";
  EXPECT_EQ(EntitySizeBytes(e), 14u);
  e.properties["S"] = std::string("héllo");  // 8 + 2 + 4 + 10
  e.properties["I"] = int32_t{1};            // 8 + 2 + 4
  e.properties["L"] = int64_t{1};            // 8 + 2 + 8
  e.properties["D"] = 1.0;                   // 8 + 2 + 8
  e.properties["B"] = true;                  // 8 + 2 + 1
  e.properties["Bin"] = Binary{"abc"};       // 8 + 6 + 4 + 3
  EXPECT_EQ(EntitySizeBytes(e), 14u + 24 + 14 + 18 + 18 + 11 + 21);
}

TEST(ValidateEntity, EnforcesTheEntitySize) {
  Entity e = Keys();
  // 16 strings of 32768 units: 16 * (8 + 2*3 + 4 + 65536) = 1,048,864 > 1 MiB.
  for (int i = 0; i < 16; ++i) e.properties["S" + std::to_string(i + 10)] = std::string(32768, 'x');
  Status st = ValidateEntity(e);
  EXPECT_EQ(st.code(), Code::kTooLarge);
  EXPECT_NE(st.message().find("1048576"), std::string::npos) << st.message();
  e.properties.erase("S25");
  EXPECT_TRUE(ValidateEntity(e).ok());
}

TEST(EntityAccessors, TypedGettersAreStrict) {
  const Entity e = Sample();
  EXPECT_EQ(e.GetInt64("Big"), 9007199254740993);
  EXPECT_EQ(e.GetInt64("I", -1), -1);  // an Int32 is not an Int64
  EXPECT_EQ(e.GetInt64("missing", 42), 42);
  EXPECT_NE(e.GetString("S"), nullptr);
  EXPECT_EQ(e.GetString("Big"), nullptr);
  EXPECT_NE(e.GetBinary("Bin"), nullptr);
  EXPECT_EQ(e.GetBinary("S"), nullptr);
  EXPECT_TRUE(e.Has("B"));
}

TEST(TableStoreHelpers, FilterPartitionDoublesQuotes) {
  EXPECT_EQ(FilterPartition("o'neil"), "PartitionKey eq 'o''neil'");
  EXPECT_EQ(FilterPartition("%2F"), "PartitionKey eq '%2F'");
  const auto del = TableOperation::Delete("p", "r", Condition::IfMatch("*"));
  EXPECT_EQ(del.kind, TableOperation::Kind::kDelete);
  EXPECT_EQ(del.entity.partition_key, "p");
  EXPECT_EQ(del.entity.row_key, "r");
  EXPECT_EQ(del.condition.etag, "*");
}

}  // namespace
}  // namespace stampfs
