#include "cache/meta_cache.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cache/entity_codec.h"

namespace stampfs {
namespace {

using namespace std::string_literals;  // NOLINT: "a\0b"s

Entity MakeEntity(const std::string& pk, const std::string& rk, const std::string& etag = "") {
  Entity e;
  e.partition_key = pk;
  e.row_key = rk;
  e.etag = etag;
  return e;
}

// Every property type, at the values most likely to be mangled.
Entity AllTypesEntity() {
  Entity e = MakeEntity("pk", "rk", "W/\"datetime'2024-01-01T00%3A00%3A00Z'\"");
  e.properties["s_empty"] = std::string();
  e.properties["s_nul"] = "a\0b\xff"s;
  e.properties["s_text"] = std::string("hello, wörld");
  e.properties["i64_max"] = std::numeric_limits<int64_t>::max();
  e.properties["i64_min"] = std::numeric_limits<int64_t>::min();
  e.properties["i64_neg"] = int64_t{-42};
  e.properties["i64_2p53p1"] = (int64_t{1} << 53) + 1;  // not representable as a double
  e.properties["i32_min"] = std::numeric_limits<int32_t>::min();
  e.properties["i32_neg"] = int32_t{-7};
  e.properties["b_true"] = true;
  e.properties["b_false"] = false;
  e.properties["d_pi"] = 3.141592653589793;
  e.properties["d_neg_zero"] = -0.0;
  e.properties["d_tiny"] = std::numeric_limits<double>::denorm_min();
  e.properties["bin_nul"] = Binary{"\0\x01\0\xfe"s};
  e.properties["bin_empty"] = Binary{};
  return e;
}

// A fresh directory under the test temp dir, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "meta_cache_test.XXXXXX";
    char* made = mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::unique_ptr<MetaCache> OpenOrDie(const std::string& path) {
  auto cache = MetaCache::Open(path);
  EXPECT_TRUE(cache.ok()) << cache.status().ToString();
  return cache.ok() ? std::move(cache).value() : nullptr;
}

// Runs SQL on a database file through a separate, raw connection.
void RawExec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

std::string RawQueryText(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_stmt* stmt = nullptr;
  std::string out;
  if (sqlite3_open(path.c_str(), &db) == SQLITE_OK &&
      sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW) {
    out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out.push_back(static_cast<char>(b));
  return out;
}

std::vector<std::string> RowKeys(const std::vector<CachedEntity>& entries) {
  std::vector<std::string> out;
  for (const auto& c : entries) out.push_back(c.entity.row_key);
  return out;
}

// --- Encoding ---------------------------------------------------------------

TEST(MetaCacheEncoding, EveryPropertyTypeRoundTripsWithItsExactType) {
  Entity in = AllTypesEntity();
  Entity out;
  ASSERT_TRUE(DecodeProperties(EncodeProperties(in), &out).ok());
  // variant equality compares the alternative too: an int32 read back as
  // int64, or a binary as a string, fails here.
  EXPECT_EQ(out.properties, in.properties);
  EXPECT_EQ(std::get<int64_t>(out.properties.at("i64_2p53p1")), (int64_t{1} << 53) + 1);
  EXPECT_TRUE(std::signbit(std::get<double>(out.properties.at("d_neg_zero"))));
  EXPECT_EQ(std::get<Binary>(out.properties.at("bin_nul")).bytes.size(), 4u);
}

TEST(MetaCacheEncoding, NanKeepsItsBits) {
  Entity in;
  in.properties["nan"] = std::numeric_limits<double>::quiet_NaN();
  Entity out;
  ASSERT_TRUE(DecodeProperties(EncodeProperties(in), &out).ok());
  EXPECT_TRUE(std::isnan(std::get<double>(out.properties.at("nan"))));
}

TEST(MetaCacheEncoding, KeysAndEtagAreNotInTheBlob) {
  Entity in = MakeEntity("PARTITIONKEY", "ROWKEY", "ETAGVALUE");
  in.properties["x"] = int32_t{1};
  std::string blob = EncodeProperties(in);
  EXPECT_EQ(blob.find("PARTITIONKEY"), std::string::npos);
  EXPECT_EQ(blob.find("ROWKEY"), std::string::npos);
  EXPECT_EQ(blob.find("ETAGVALUE"), std::string::npos);

  // Decoding fills properties only and leaves the caller's keys alone.
  Entity out = MakeEntity("p", "r", "e");
  ASSERT_TRUE(DecodeProperties(blob, &out).ok());
  EXPECT_EQ(out.partition_key, "p");
  EXPECT_EQ(out.row_key, "r");
  EXPECT_EQ(out.etag, "e");
  EXPECT_EQ(out.properties, in.properties);
}

TEST(MetaCacheEncoding, EmptyPropertiesRoundTripAndReplaceOldOnes) {
  Entity out;
  out.properties["stale"] = true;
  ASSERT_TRUE(DecodeProperties(EncodeProperties(Entity{}), &out).ok());
  EXPECT_TRUE(out.properties.empty());
}

TEST(MetaCacheEncoding, EveryTruncatedPrefixIsRejectedAsCorruption) {
  const std::string full = EncodeProperties(AllTypesEntity());
  for (size_t n = 0; n < full.size(); ++n) {
    Entity out;
    out.properties["untouched"] = true;
    Status st = DecodeProperties(full.substr(0, n), &out);
    EXPECT_EQ(st.code(), Code::kCorruption) << "prefix of " << n << " bytes";
    EXPECT_EQ(out.properties.size(), 1u) << "a failed decode must not change the entity";
  }
}

TEST(MetaCacheEncoding, MalformedInputsAreRejectedAsCorruption) {
  Entity one;
  one.properties["a"] = true;
  // format | count | name length | 'a' | tag (bool) | value
  const std::string good = EncodeProperties(one);
  ASSERT_EQ(good, Bytes({1, 1, 1, 'a', 4, 1}));
  const std::vector<std::string> cases = {
      good + "x",                                        // trailing bytes
      Bytes({1, 1, 1, 'a', 0x7f, 1}),                    // unknown type tag
      Bytes({1, 1, 1, 'a', 4, 2}),                       // bool other than 0/1
      Bytes({9, 1, 1, 'a', 4, 1}),                       // unknown format
      Bytes({1, 2, 1, 'b', 4, 1, 1, 'a', 4, 1}),         // names out of order
      Bytes({1, 2, 1, 'a', 4, 1, 1, 'a', 4, 1}),         // name repeated
      Bytes({1, 1, 0xff, 0xff, 0xff, 0xff, 0x7f, 'a'}),  // name length beyond input
      Bytes({1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1}),  // > 10 bytes
      Bytes({1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}),     // > 64 bits
      Bytes({1, 0x80, 0}),                                          // overlong varint (count 0)
      Bytes({1, 1, 1, 'a', 1, 0xff, 0xff, 0xff, 0xff, 0x0f, 'x'}),  // string beyond input
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    Entity out;
    EXPECT_EQ(DecodeProperties(cases[i], &out).code(), Code::kCorruption) << "case " << i;
  }
}

TEST(MetaCacheEncoding, RandomBytesAndMutationsNeverCrash) {
  std::mt19937 rng(12345);
  const std::string valid = EncodeProperties(AllTypesEntity());
  int accepted_mutations = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string bytes;
    if (i % 2 == 0) {
      bytes.resize(rng() % 64);
      for (char& c : bytes) c = static_cast<char>(rng());
    } else {
      bytes = valid;
      bytes[rng() % bytes.size()] = static_cast<char>(rng());
    }
    Entity out;
    Status st = DecodeProperties(bytes, &out);
    if (st.ok()) {
      // Whatever decodes must re-encode to the very same bytes (one encoding each).
      EXPECT_EQ(EncodeProperties(out), bytes);
      ++accepted_mutations;
    } else {
      EXPECT_EQ(st.code(), Code::kCorruption);
    }
  }
  EXPECT_LT(accepted_mutations, 20000);
}

// --- Entries ----------------------------------------------------------------

TEST(MetaCache, PutGetEraseEntryKeepsKeysEtagPropertiesAndFetchTime) {
  auto cache = OpenOrDie(":memory:");
  ASSERT_NE(cache, nullptr);
  EXPECT_FALSE(cache->GetEntry("pk", "rk").has_value());

  Entity e = AllTypesEntity();
  ASSERT_TRUE(cache->PutEntry(e, 1000).ok());
  auto got = cache->GetEntry("pk", "rk");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->entity.partition_key, "pk");
  EXPECT_EQ(got->entity.row_key, "rk");
  EXPECT_EQ(got->entity.etag, e.etag);
  EXPECT_EQ(got->entity.properties, e.properties);
  EXPECT_EQ(got->fetched_ms, 1000);
  EXPECT_FALSE(cache->GetEntry("pk", "rk2").has_value());
  EXPECT_FALSE(cache->GetEntry("pk2", "rk").has_value());

  ASSERT_TRUE(cache->EraseEntry("pk", "rk").ok());
  EXPECT_FALSE(cache->GetEntry("pk", "rk").has_value());
  EXPECT_TRUE(cache->EraseEntry("pk", "rk").ok()) << "erasing a missing entry is not an error";
}

TEST(MetaCache, PutEntryReplacesThePreviousVersionWhole) {
  auto cache = OpenOrDie(":memory:");
  ASSERT_NE(cache, nullptr);
  Entity v1 = MakeEntity("d", "f", "etag1");
  v1.properties["size"] = int64_t{1};
  v1.properties["old"] = true;
  ASSERT_TRUE(cache->PutEntry(v1, 1).ok());
  Entity v2 = MakeEntity("d", "f", "etag2");
  v2.properties["size"] = int64_t{2};
  ASSERT_TRUE(cache->PutEntry(v2, 2).ok());

  auto got = cache->GetEntry("d", "f");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->entity.etag, "etag2");
  EXPECT_EQ(got->entity.properties, v2.properties);
  EXPECT_EQ(got->fetched_ms, 2);
  EXPECT_EQ(cache->ListEntries("d").size(), 1u);
}

TEST(MetaCache, KeysWithNulAndNonAsciiBytesAreDistinct) {
  auto cache = OpenOrDie(":memory:");
  ASSERT_NE(cache, nullptr);
  ASSERT_TRUE(cache->PutEntry(MakeEntity("p", "a\0b"s, "1"), 1).ok());
  ASSERT_TRUE(cache->PutEntry(MakeEntity("p", "a", "2"), 1).ok());
  ASSERT_TRUE(cache->PutEntry(MakeEntity("p", "é", "3"), 1).ok());
  auto got = cache->GetEntry("p", "a\0b"s);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->entity.etag, "1");
  EXPECT_EQ(got->entity.row_key, "a\0b"s);
  EXPECT_EQ(cache->GetEntry("p", "a")->entity.etag, "2");
  EXPECT_EQ(cache->GetEntry("p", "é")->entity.etag, "3");
}

TEST(MetaCache, ListEntriesIsOrderedByRowKeyBytes) {
  auto cache = OpenOrDie(":memory:");
  ASSERT_NE(cache, nullptr);
  std::vector<std::string> keys = {"b", "a", "B", "aa", "a b", "z", "0", "é"};
  for (const auto& k : keys) ASSERT_TRUE(cache->PutEntry(MakeEntity("p", k), 1).ok());
  ASSERT_TRUE(cache->PutEntry(MakeEntity("other", "A"), 1).ok());
  std::vector<std::string> expected = keys;
  std::sort(expected.begin(), expected.end());  // byte order, like SQLite's BINARY
  EXPECT_EQ(RowKeys(cache->ListEntries("p")), expected);
  EXPECT_TRUE(cache->ListEntries("nothing").empty());
}

// --- Listings and generations -----------------------------------------------

TEST(MetaCache, PutListingReplacesStaleEntriesOfOnlyThatPartition) {
  auto cache = OpenOrDie(":memory:");
  ASSERT_NE(cache, nullptr);
  ASSERT_TRUE(cache->PutEntry(MakeEntity("dir", "stale"), 1).ok());
  ASSERT_TRUE(cache->PutEntry(MakeEntity("dir", "kept", "old"), 1).ok());
  ASSERT_TRUE(cache->PutEntry(MakeEntity("dirx", "neighbour"), 1).ok());
  ASSERT_TRUE(cache->SetGeneration("dirx", {"nx", true, 5}).ok());

  Entity kept = MakeEntity("dir", "kept", "new");
  kept.properties["size"] = int64_t{9};
  ASSERT_TRUE(cache->PutListing("dir", {kept, MakeEntity("dir", "added")}, "dot1", 77).ok());

  auto listed = cache->ListEntries("dir");
  EXPECT_EQ(RowKeys(listed), (std::vector<std::string>{"added", "kept"}));
  EXPECT_EQ(listed[1].entity.etag, "new");
  EXPECT_EQ(listed[1].entity.properties, kept.properties);
  EXPECT_EQ(listed[1].fetched_ms, 77);
  EXPECT_FALSE(cache->GetEntry("dir", "stale").has_value());

  auto gen = cache->GetGeneration("dir");
  ASSERT_TRUE(gen.has_value());
  EXPECT_EQ(gen->dot_etag, "dot1");
  EXPECT_TRUE(gen->complete);
  EXPECT_EQ(gen->validated_ms, 77);

  // The other partition (a prefix-sharing name) is untouched.
  EXPECT_EQ(RowKeys(cache->ListEntries("dirx")), (std::vector<std::string>{"neighbour"}));
  EXPECT_EQ(cache->GetGeneration("dirx")->dot_etag, "nx");
}

TEST(MetaCache, EmptyPutListingClearsThePartitionAndMarksItComplete) {
  auto cache = OpenOrDie(":memory:");
  ASSERT_NE(cache, nullptr);
  ASSERT_TRUE(cache->PutEntry(MakeEntity("d", "gone"), 1).ok());
  ASSERT_TRUE(cache->PutListing("d", {}, "dot", 3).ok());
  EXPECT_TRUE(cache->ListEntries("d").empty());
  ASSERT_TRUE(cache->GetGeneration("d").has_value());
  EXPECT_TRUE(cache->GetGeneration("d")->complete);
}

TEST(MetaCache, PutListingWithAnEntryOfAnotherPartitionChangesNothing) {
  auto cache = OpenOrDie(":memory:");
  ASSERT_NE(cache, nullptr);
  ASSERT_TRUE(cache->PutEntry(MakeEntity("d", "old"), 1).ok());
  Status st = cache->PutListing("d", {MakeEntity("d", "a"), MakeEntity("e", "b")}, "dot", 2);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_EQ(RowKeys(cache->ListEntries("d")), (std::vector<std::string>{"old"}));
  EXPECT_FALSE(cache->GetEntry("e", "b").has_value());
  EXPECT_FALSE(cache->GetGeneration("d").has_value());
}

TEST(MetaCache, SetGenerationUpsertsAndInvalidateClearsOnlyCompleteness) {
  auto cache = OpenOrDie(":memory:");
  ASSERT_NE(cache, nullptr);
  EXPECT_FALSE(cache->GetGeneration("d").has_value());

  ASSERT_TRUE(cache->SetGeneration("d", {"e1", false, 10}).ok());
  auto g = cache->GetGeneration("d");
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->dot_etag, "e1");
  EXPECT_FALSE(g->complete);
  EXPECT_EQ(g->validated_ms, 10);

  ASSERT_TRUE(cache->SetGeneration("d", {"e2", true, 20}).ok());
  g = cache->GetGeneration("d");
  EXPECT_EQ(g->dot_etag, "e2");
  EXPECT_TRUE(g->complete);
  EXPECT_EQ(g->validated_ms, 20);

  ASSERT_TRUE(cache->PutEntry(MakeEntity("d", "hint"), 1).ok());
  ASSERT_TRUE(cache->InvalidateListing("d").ok());
  g = cache->GetGeneration("d");
  ASSERT_TRUE(g.has_value());
  EXPECT_FALSE(g->complete);
  EXPECT_EQ(g->dot_etag, "e2");
  EXPECT_EQ(g->validated_ms, 20);
  EXPECT_EQ(cache->ListEntries("d").size(), 1u) << "entries stay as hints";
}

TEST(MetaCache, InvalidateListingWithoutGenerationCreatesNone) {
  auto cache = OpenOrDie(":memory:");
  ASSERT_NE(cache, nullptr);
  EXPECT_TRUE(cache->InvalidateListing("never").ok());
  EXPECT_FALSE(cache->GetGeneration("never").has_value());
}

TEST(MetaCache, DropPartitionForgetsEntriesAndGenerationOfThatPartitionOnly) {
  auto cache = OpenOrDie(":memory:");
  ASSERT_NE(cache, nullptr);
  ASSERT_TRUE(cache->PutListing("a", {MakeEntity("a", "1"), MakeEntity("a", "2")}, "ea", 1).ok());
  ASSERT_TRUE(cache->PutListing("b", {MakeEntity("b", "1")}, "eb", 1).ok());
  ASSERT_TRUE(cache->DropPartition("a").ok());
  EXPECT_TRUE(cache->ListEntries("a").empty());
  EXPECT_FALSE(cache->GetGeneration("a").has_value());
  EXPECT_EQ(cache->ListEntries("b").size(), 1u);
  EXPECT_TRUE(cache->GetGeneration("b").has_value());
  EXPECT_TRUE(cache->DropPartition("none").ok());
}

// --- Files, persistence, errors ---------------------------------------------

TEST(MetaCache, EverythingSurvivesCloseAndReopenOfTheSameFile) {
  TempDir dir;
  const std::string path = dir.File("meta.db");
  Entity e = AllTypesEntity();
  {
    auto cache = OpenOrDie(path);
    ASSERT_NE(cache, nullptr);
    ASSERT_TRUE(cache->PutEntry(e, 123).ok());
    ASSERT_TRUE(cache->PutListing("dir", {MakeEntity("dir", "x", "ex")}, "dot", 456).ok());
    ASSERT_TRUE(cache->SetGeneration("other", {"o", false, 789}).ok());
  }
  auto cache = OpenOrDie(path);
  ASSERT_NE(cache, nullptr);
  auto got = cache->GetEntry("pk", "rk");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->entity.properties, e.properties);
  EXPECT_EQ(got->entity.etag, e.etag);
  EXPECT_EQ(got->fetched_ms, 123);
  EXPECT_EQ(RowKeys(cache->ListEntries("dir")), (std::vector<std::string>{"x"}));
  auto gen = cache->GetGeneration("dir");
  ASSERT_TRUE(gen.has_value());
  EXPECT_EQ(gen->dot_etag, "dot");
  EXPECT_TRUE(gen->complete);
  EXPECT_EQ(gen->validated_ms, 456);
  EXPECT_EQ(cache->GetGeneration("other")->validated_ms, 789);
}

TEST(MetaCache, FileIsInWalModeWithCurrentSchemaVersion) {
  TempDir dir;
  const std::string path = dir.File("meta.db");
  ASSERT_NE(OpenOrDie(path), nullptr);
  EXPECT_EQ(RawQueryText(path, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(RawQueryText(path, "PRAGMA user_version"), "3");
}

// A cache written by a build of schema 1 keeps its entries and gains the
// tables of deferred directory attribute changes (2) and of mkdirs under
// way (3).
TEST(MetaCache, ASchemaOneCacheIsMigratedKeepingItsEntries) {
  TempDir dir;
  const std::string path = dir.File("meta.db");
  RawExec(path,
          "CREATE TABLE entries(pk TEXT, rk TEXT, props BLOB, etag TEXT, fetched_ms INTEGER,"
          " PRIMARY KEY(pk, rk)) WITHOUT ROWID;"
          "CREATE TABLE generations(pk TEXT PRIMARY KEY, dot_etag TEXT, complete INTEGER,"
          " validated_ms INTEGER);"
          "INSERT INTO generations VALUES('d', 'e1', 1, 5);"
          "PRAGMA user_version = 1;");
  auto cache = OpenOrDie(path);
  ASSERT_NE(cache, nullptr);
  auto gen = cache->GetGeneration("d");
  ASSERT_TRUE(gen.has_value());
  EXPECT_EQ(gen->dot_etag, "e1");
  EXPECT_EQ(RawQueryText(path, "PRAGMA user_version"), "3");
  ASSERT_TRUE(cache->PutMkdir(9, "/a/new").ok());
  ASSERT_TRUE(cache->PutMkdir(10, "/b").ok());
  ASSERT_TRUE(cache->EraseMkdir(10).ok());
  EXPECT_EQ(cache->ListMkdirs(),
            (std::vector<std::pair<uint64_t, std::string>>{{9, "/a/new"}}));
  ASSERT_TRUE(cache->PutDeferredAttrs({7, "/a", "b", "m=493 ", 42}).ok());
  auto rows = cache->ListDeferredAttrs();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].ino, 7u);
  EXPECT_EQ(rows[0].parent_path, "/a");
  EXPECT_EQ(rows[0].name, "b");
  EXPECT_EQ(rows[0].change, "m=493 ");
  EXPECT_EQ(rows[0].ctime_ns, 42);
  ASSERT_TRUE(cache->EraseDeferredAttrs(7).ok());
  EXPECT_TRUE(cache->ListDeferredAttrs().empty());
}

TEST(MetaCache, OpenInAMissingDirectoryFailsNamingThePath) {
  TempDir dir;
  const std::string path = dir.File("no/such/dir/meta.db");
  auto cache = MetaCache::Open(path);
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.status().code(), Code::kNotFound);
  EXPECT_NE(cache.status().message().find(path), std::string::npos) << cache.status().ToString();
  EXPECT_FALSE(std::filesystem::exists(dir.File("no")));
}

TEST(MetaCache, OpenOfANonSqliteFileIsCorruption) {
  TempDir dir;
  for (size_t size : {16u, 100u, 8192u}) {
    const std::string path = dir.File("garbage" + std::to_string(size));
    {
      std::ofstream out(path, std::ios::binary);
      for (size_t i = 0; i < size; ++i) out.put(static_cast<char>('A' + i % 26));
    }
    auto cache = MetaCache::Open(path);
    ASSERT_FALSE(cache.ok()) << size;
    EXPECT_EQ(cache.status().code(), Code::kCorruption) << cache.status().ToString();
    EXPECT_NE(cache.status().message().find(path), std::string::npos);
  }
}

TEST(MetaCache, OpenRefusesASchemaVersionFromANewerBuild) {
  TempDir dir;
  const std::string path = dir.File("future.db");
  RawExec(path, "PRAGMA user_version = 99");
  auto cache = MetaCache::Open(path);
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.status().code(), Code::kNotSupported) << cache.status().ToString();
  EXPECT_EQ(RawQueryText(path, "PRAGMA user_version"), "99");
}

TEST(MetaCache, UndecodableRowReadsAsMissAndInvalidatesTheListing) {
  TempDir dir;
  const std::string path = dir.File("meta.db");
  auto cache = OpenOrDie(path);
  ASSERT_NE(cache, nullptr);
  ASSERT_TRUE(
      cache->PutListing("d", {MakeEntity("d", "bad"), MakeEntity("d", "good")}, "e", 1).ok());
  RawExec(path, "UPDATE entries SET props = x'01ff' WHERE rk = 'bad'");

  EXPECT_EQ(RowKeys(cache->ListEntries("d")), (std::vector<std::string>{"good"}));
  ASSERT_TRUE(cache->GetGeneration("d").has_value());
  EXPECT_FALSE(cache->GetGeneration("d")->complete);
  EXPECT_FALSE(cache->GetEntry("d", "bad").has_value());

  // Same through GetEntry.
  ASSERT_TRUE(cache->PutListing("d", {MakeEntity("d", "bad2")}, "e", 1).ok());
  RawExec(path, "UPDATE entries SET props = x'' WHERE rk = 'bad2'");
  EXPECT_FALSE(cache->GetEntry("d", "bad2").has_value());
  EXPECT_FALSE(cache->GetGeneration("d")->complete);
}

// What a read found is stored only if no write of its partition came after
// the ticket the reader took before its request.
TEST(MetaCache, AReadsAnswerIsStoredOnlyIfThePartitionWasNotWrittenSinceItsTicket) {
  auto cache = OpenOrDie(":memory:");
  ASSERT_NE(cache, nullptr);
  uint64_t ticket = cache->ReadTicket("d");
  ASSERT_TRUE(cache->PutFetched(MakeEntity("d", "f", "read"), 1, ticket).ok());
  EXPECT_EQ(cache->GetEntry("d", "f")->entity.etag, "read");
  EXPECT_EQ(cache->ReadTicket("d"), ticket) << "a stored answer is no write";

  ticket = cache->ReadTicket("d");
  ASSERT_TRUE(cache->EraseEntry("d", "f").ok());  // this mount's unlink
  ASSERT_TRUE(cache->PutFetched(MakeEntity("d", "f", "old"), 2, ticket).ok());
  EXPECT_FALSE(cache->GetEntry("d", "f").has_value());

  ticket = cache->ReadTicket("d");
  ASSERT_TRUE(cache->PutEntry(MakeEntity("d", "f", "created"), 3).ok());  // a create
  ASSERT_TRUE(cache->EraseFetched("d", "f", ticket).ok());
  EXPECT_EQ(cache->GetEntry("d", "f")->entity.etag, "created");

  ticket = cache->ReadTicket("d");
  ASSERT_TRUE(cache->SetGeneration("d", {"dot2", true, 4}).ok());
  ASSERT_TRUE(cache->ConfirmGeneration("d", {"dot1", true, 5}, ticket).ok());
  EXPECT_EQ(cache->GetGeneration("d")->dot_etag, "dot2");
  ASSERT_TRUE(cache->PutListing("d", {MakeEntity("d", "old")}, "dot1", 6, ticket).ok());
  EXPECT_EQ(cache->GetGeneration("d")->dot_etag, "dot2");
  EXPECT_EQ(RowKeys(cache->ListEntries("d")), std::vector<std::string>{"f"});

  // Another partition's writes do not count (partitions share counters by
  // hash; "d" and "e" do not).
  ticket = cache->ReadTicket("d");
  ASSERT_TRUE(cache->PutEntry(MakeEntity("e", "x"), 7).ok());
  ASSERT_EQ(cache->ReadTicket("d"), ticket);
  ASSERT_TRUE(cache->PutListing("d", {MakeEntity("d", "g")}, "dot3", 8, ticket).ok());
  EXPECT_EQ(RowKeys(cache->ListEntries("d")), std::vector<std::string>{"g"});
}

TEST(MetaCache, ConcurrentPutsAndGetsFromFourThreadsLoseNothing) {
  TempDir dir;
  auto cache = OpenOrDie(dir.File("meta.db"));
  ASSERT_NE(cache, nullptr);
  constexpr int kThreads = 4;
  constexpr int kOps = 500;
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string pk = "p" + std::to_string(t);
      for (int i = 0; i < kOps; ++i) {
        Entity e = MakeEntity(pk, "r" + std::to_string(i), "e" + std::to_string(i));
        e.properties["i"] = int64_t{i};
        if (!cache->PutEntry(e, i).ok()) ++mismatches[t];
        auto got = cache->GetEntry(pk, e.row_key);
        if (!got || got->entity.properties != e.properties) ++mismatches[t];
        if (i % 50 == 0) cache->ListEntries(pk);  // readers interleaved with writers
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(mismatches[t], 0) << "thread " << t;
    EXPECT_EQ(cache->ListEntries("p" + std::to_string(t)).size(), static_cast<size_t>(kOps));
  }
}

}  // namespace
}  // namespace stampfs
