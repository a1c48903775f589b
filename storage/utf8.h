// Strict UTF-8 decoding shared by key escaping and entity validation.
#pragma once

#include <cstddef>
#include <string>

namespace stampfs {

// Decodes the code point starting at `pos`. Returns the sequence length
// (1-4) and sets `*cp`, or 0 when the bytes there are not valid UTF-8:
// truncated sequences, stray continuation bytes, overlong forms, UTF-16
// surrogates (U+D800-U+DFFF) and values above U+10FFFF are all invalid.
inline size_t DecodeUtf8(const std::string& s, size_t pos, char32_t* cp) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(pos);
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  size_t len = 0;
  char32_t value = 0;
  char32_t min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, value = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, value = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, value = b0 & 0x07, min = 0x10000;
  } else {
    return 0;  // continuation byte or 0xF8-0xFF
  }
  if (pos + len > s.size()) return 0;
  for (size_t i = 1; i < len; ++i) {
    const unsigned char b = byte(pos + i);
    if ((b & 0xC0) != 0x80) return 0;
    value = (value << 6) | (b & 0x3F);
  }
  if (value < min || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return 0;
  *cp = value;
  return len;
}

inline bool IsValidUtf8(const std::string& s) {
  char32_t cp = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t n = DecodeUtf8(s, i, &cp);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace stampfs
