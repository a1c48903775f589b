#include "storage/table_keys.h"

#include "storage/auth.h"
#include "storage/table_store.h"
#include "storage/utf8.h"

namespace stampfs {
namespace {

constexpr char kHex[] = "0123456789ABCDEF";
constexpr char kHashedPrefix[] = "~h";
constexpr size_t kSha256HexLength = 64;

void AppendEscaped(unsigned char byte, std::string* out) {
  out->push_back('%');
  out->push_back(kHex[byte >> 4]);
  out->push_back(kHex[byte & 0x0F]);
}

// ASCII bytes the Table service forbids in keys, plus '%' (our escape
// character) and DEL.
bool MustEscapeAscii(unsigned char c) {
  return c < 0x20 || c == 0x7F || c == '%' || c == '/' || c == '\\' || c == '#' || c == '?';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string EscapeKey(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    char32_t cp = 0;
    const size_t len = DecodeUtf8(text, i, &cp);
    if (len == 0) {
      // Not valid UTF-8: escape this byte alone and resynchronise on the next.
      AppendEscaped(byte, &out);
      ++i;
      continue;
    }
    const bool leading_tilde = i == 0 && byte == '~';
    const bool c1_control = cp >= 0x80 && cp <= 0x9F;
    if ((len == 1 && MustEscapeAscii(byte)) || leading_tilde || c1_control) {
      for (size_t k = 0; k < len; ++k) AppendEscaped(static_cast<unsigned char>(text[i + k]), &out);
    } else {
      out.append(text, i, len);
    }
    i += len;
  }
  return out;
}

Result<std::string> UnescapeKey(const std::string& key) {
  if (IsHashedKey(key)) {
    return Status(Code::kInvalidArgument, "a hashed key cannot be unescaped");
  }
  std::string out;
  out.reserve(key.size());
  for (size_t i = 0; i < key.size(); ++i) {
    if (key[i] != '%') {
      out.push_back(key[i]);
      continue;
    }
    const int hi = i + 2 < key.size() ? HexValue(key[i + 1]) : -1;
    const int lo = hi >= 0 ? HexValue(key[i + 2]) : -1;
    if (lo < 0) {
      return Status(Code::kInvalidArgument,
                    "malformed %XX escape at offset " + std::to_string(i) + " of a table key");
    }
    out.push_back(static_cast<char>((hi << 4) | lo));
    i += 2;
  }
  return out;
}

size_t Utf16Length(const std::string& utf8) {
  size_t units = 0;
  char32_t cp = 0;
  for (size_t i = 0; i < utf8.size();) {
    const size_t len = DecodeUtf8(utf8, i, &cp);
    if (len == 0) {
      ++units;  // an invalid byte would become one U+FFFD
      ++i;
      continue;
    }
    units += cp >= 0x10000 ? 2 : 1;
    i += len;
  }
  return units;
}

std::string KeyFor(const std::string& text) {
  std::string escaped = EscapeKey(text);
  if (Utf16Length(escaped) <= kMaxKeyUtf16Units) return escaped;
  // The hash is of the unescaped text; callers keep the text in a property.
  return kHashedPrefix + Sha256Hex(text);
}

bool IsHashedKey(const std::string& key) {
  if (key.size() != sizeof(kHashedPrefix) - 1 + kSha256HexLength) return false;
  if (key.compare(0, sizeof(kHashedPrefix) - 1, kHashedPrefix) != 0) return false;
  for (size_t i = sizeof(kHashedPrefix) - 1; i < key.size(); ++i) {
    if (HexValue(key[i]) < 0) return false;
  }
  return true;
}

}  // namespace stampfs
