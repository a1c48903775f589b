#include "storage/table_keys.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "storage/table_store.h"

namespace stampfs {
namespace {

// The characters the Table service refuses in a key (ASCII part) and the
// C1 controls as UTF-8.
bool HasForbiddenCharacter(const std::string& key) {
  for (size_t i = 0; i < key.size(); ++i) {
    const auto c = static_cast<unsigned char>(key[i]);
    if (c < 0x20 || c == 0x7F || c == '/' || c == '\\' || c == '#' || c == '?') return true;
    if (c == 0xC2 && i + 1 < key.size()) {
      const auto next = static_cast<unsigned char>(key[i + 1]);
      if (next >= 0x80 && next <= 0x9F) return true;
    }
  }
  return false;
}

void ExpectRoundTrip(const std::string& name) {
  const std::string key = EscapeKey(name);
  EXPECT_FALSE(HasForbiddenCharacter(key)) << key;
  EXPECT_FALSE(!key.empty() && key[0] == '~') << key;
  auto back = UnescapeKey(key);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, name);
}

std::string Byte(int b) { return std::string(1, static_cast<char>(b)); }

TEST(TableKeys, EveryByteButSlashRoundTripsAloneAndEmbedded) {
  for (int b = 0x01; b <= 0xFF; ++b) {
    if (b == '/') continue;
    SCOPED_TRACE(b);
    ExpectRoundTrip(Byte(b));
    ExpectRoundTrip("a" + Byte(b) + "z");
    ExpectRoundTrip(Byte(b) + Byte(b) + "x");
  }
}

TEST(TableKeys, SlashAndNulAreEscapedToo) {
  EXPECT_EQ(EscapeKey("/"), "%2F");
  EXPECT_EQ(EscapeKey("/a/b"), "%2Fa%2Fb");
  ExpectRoundTrip(std::string("a\0b", 3));
}

TEST(TableKeys, EscapesExactlyTheSpecifiedCharacters) {
  EXPECT_EQ(EscapeKey("100%"), "100%25");
  EXPECT_EQ(EscapeKey("a\\b#c?d"), "a%5Cb%23c%3Fd");
  EXPECT_EQ(EscapeKey("tab\there\n"), "tab%09here%0A");
  EXPECT_EQ(EscapeKey("del\x7f"), "del%7F");
  EXPECT_EQ(EscapeKey("\xC2\x85"), "%C2%85");    // U+0085 NEL
  EXPECT_EQ(EscapeKey("\xC2\xA0"), "\xC2\xA0");  // U+00A0 is kept
  EXPECT_EQ(EscapeKey("it's a file (1).txt"), "it's a file (1).txt");
  EXPECT_EQ(EscapeKey("~fs"), "%7Efs");
  EXPECT_EQ(EscapeKey("a~b"), "a~b");
  EXPECT_EQ(EscapeKey(""), "");
}

TEST(TableKeys, ValidUtf8StaysReadable) {
  EXPECT_EQ(EscapeKey("héllo"), "héllo");
  EXPECT_EQ(EscapeKey("日本語.txt"), "日本語.txt");
  EXPECT_EQ(EscapeKey("smile \xF0\x9F\x98\x80"), "smile \xF0\x9F\x98\x80");
  ExpectRoundTrip("héllo");
  ExpectRoundTrip("\xF0\x9F\x98\x80");
}

TEST(TableKeys, InvalidUtf8IsEscapedBytewise) {
  EXPECT_EQ(EscapeKey("\xC0\xAF"), "%C0%AF");                // overlong '/'
  EXPECT_EQ(EscapeKey("\xED\xA0\x80"), "%ED%A0%80");         // surrogate U+D800
  EXPECT_EQ(EscapeKey("\xF4\x90\x80\x80"), "%F4%90%80%80");  // above U+10FFFF
  EXPECT_EQ(EscapeKey("\xE2\x82"), "%E2%82");                // truncated
  EXPECT_EQ(EscapeKey("\x80x"), "%80x");                     // stray continuation
  EXPECT_EQ(EscapeKey("\xC3\xA9\xFF"), "\xC3\xA9%FF");       // valid then invalid
  ExpectRoundTrip("\xC0\xAF\xED\xA0\x80\xF4\x90\x80\x80");
}

TEST(TableKeys, UnescapeRejectsMalformedEscapes) {
  EXPECT_EQ(UnescapeKey("%").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(UnescapeKey("%4").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(UnescapeKey("a%G1").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(UnescapeKey("%2f").value(), "/");
  EXPECT_EQ(UnescapeKey(KeyFor(std::string(300, '%'))).status().code(), Code::kInvalidArgument);
}

TEST(TableKeys, Utf16LengthCountsSurrogatePairs) {
  EXPECT_EQ(Utf16Length(""), 0u);
  EXPECT_EQ(Utf16Length("abc"), 3u);
  EXPECT_EQ(Utf16Length("héllo"), 5u);
  EXPECT_EQ(Utf16Length("日本"), 2u);
  EXPECT_EQ(Utf16Length("\xF0\x9F\x98\x80"), 2u);
  EXPECT_EQ(Utf16Length("a\xF0\x9F\x98\x80z"), 4u);
  EXPECT_EQ(Utf16Length("\xFF\xFE"), 2u);  // each invalid byte counts one unit
}

// 255-byte names of every kind: plain, all-escaped, multi-byte, emoji, invalid.
std::vector<std::string> LongNames() {
  std::vector<std::string> names = {std::string(255, 'a'), std::string(255, '%'),
                                    std::string(255, '\x01'), std::string(255, '\xFF'),
                                    "~" + std::string(254, 'b')};
  std::string two_byte;
  while (two_byte.size() + 2 <= 255) two_byte += "é";
  std::string emoji;
  while (emoji.size() + 4 <= 255) emoji += "\xF0\x9F\x98\x80";
  std::string c1;
  while (c1.size() + 2 <= 255) c1 += "\xC2\x85";
  std::string mixed;
  for (int i = 0; mixed.size() < 255; ++i) mixed += static_cast<char>(1 + (i * 37) % 255);
  std::replace(mixed.begin(), mixed.end(), '/', 'x');
  for (auto* s : {&two_byte, &emoji, &c1, &mixed}) names.push_back(*s);
  return names;
}

TEST(TableKeys, LongNamesGiveKeysWithinTheLimit) {
  for (const std::string& name : LongNames()) {
    ASSERT_LE(name.size(), 255u);
    std::string key = KeyFor(name);
    EXPECT_LE(Utf16Length(key), kMaxKeyUtf16Units);
    EXPECT_FALSE(HasForbiddenCharacter(key));
    if (IsHashedKey(key)) {
      EXPECT_GT(Utf16Length(EscapeKey(name)), kMaxKeyUtf16Units);
      EXPECT_EQ(key.substr(0, 2), "~h");
      EXPECT_EQ(key, KeyFor(name));  // deterministic
    } else {
      EXPECT_EQ(UnescapeKey(key).value(), name);
      EXPECT_NE(key[0], '~');
    }
    ExpectRoundTrip(name);
  }
}

TEST(TableKeys, HashedOnlyWhenTooLong) {
  EXPECT_FALSE(IsHashedKey(KeyFor(std::string(255, 'a'))));
  EXPECT_FALSE(IsHashedKey(KeyFor(std::string(170, '%'))));  // 510 units
  EXPECT_TRUE(IsHashedKey(KeyFor(std::string(171, '%'))));   // 513 units
  const std::string path = "/" + std::string(600, 'd');
  const std::string key = KeyFor(path);
  EXPECT_TRUE(IsHashedKey(key));
  EXPECT_EQ(key.size(), 66u);
  EXPECT_NE(KeyFor(path + "x"), key);
  EXPECT_FALSE(IsHashedKey("~fs"));
  EXPECT_FALSE(IsHashedKey("%7Eh" + std::string(64, 'a')));
}

TEST(TableKeys, RootAndPaths) {
  EXPECT_EQ(PartitionKeyForDirectory("/"), "%2F");
  EXPECT_EQ(PartitionKeyForDirectory("/a b/c"), "%2Fa b%2Fc");
  EXPECT_EQ(RowKeyForName("."), ".");
}

TEST(TableKeys, EscapedKeysPassEntityValidation) {
  for (int b = 0x01; b <= 0xFF; ++b) {
    Entity e;
    e.partition_key = KeyFor("/dir" + Byte(b));
    e.row_key = KeyFor(Byte(b) + "name");
    EXPECT_TRUE(ValidateEntity(e).ok()) << b << " " << ValidateEntity(e).ToString();
  }
  for (const std::string& name : LongNames()) {
    Entity e;
    e.partition_key = KeyFor("/" + name + "/" + name);
    e.row_key = KeyFor(name);
    EXPECT_TRUE(ValidateEntity(e).ok()) << ValidateEntity(e).ToString();
  }
}

}  // namespace
}  // namespace stampfs
