// How file-system paths and names become table keys (PartitionKey = the
// escaped parent directory path, RowKey = the escaped name), and back.
//
// Escaping: '%', '/', '\\', '#', '?', control characters (bytes 0x00-0x1F,
// 0x7F and the UTF-8 encodings of U+0080-U+009F), a leading '~', and every
// byte that is not part of valid UTF-8 become %XX (upper-case hex). Everything else
// (including any valid non-ASCII UTF-8) is kept, so keys stay readable in
// Storage Explorer. Any Linux name (all bytes but '/' and NUL, <= 255 bytes)
// round-trips.
//
// Keys over kMaxKeyUtf16Units after escaping become a hashed key
// "~h<sha256 hex of the unescaped text>"; the caller must keep the original
// text in an entity property, because a hashed key cannot be unescaped.
// Escaped keys never start with '~', so "~fs", "~intents" and hashed keys
// cannot collide with a real path or name. The root directory's key is "%2F".
#pragma once

#include <string>

#include "storage/status.h"

namespace stampfs {

std::string EscapeKey(const std::string& text);
// Inverse of EscapeKey; kInvalidArgument for a malformed %XX.
Result<std::string> UnescapeKey(const std::string& key);

// Length as the Table service counts it (UTF-16 code units of a UTF-8 string).
size_t Utf16Length(const std::string& utf8);

// EscapeKey, or the hashed form when the escaped key is too long.
std::string KeyFor(const std::string& text);
bool IsHashedKey(const std::string& key);

// Directory path ("/", "/a/b") -> PartitionKey of its entries.
inline std::string PartitionKeyForDirectory(const std::string& dir_path) { return KeyFor(dir_path); }
// File name (one path component) -> RowKey.
inline std::string RowKeyForName(const std::string& name) { return KeyFor(name); }

}  // namespace stampfs
