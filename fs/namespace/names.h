// Rules for names and the entity properties that carry them.
#pragma once

#include <string>
#include <vector>

#include "storage/status.h"
#include "storage/table_store.h"

namespace stampfs {

inline constexpr size_t kMaxNameBytes = 255;

// kNameTooLong over 255 bytes; kInvalidArgument for "", ".", ".." or a '/'.
Status CheckName(const std::string& name);
// CheckName, and for a name being created (create, mkdir, symlink, the target
// of a rename): kIllegalSequence when it holds U+F05C or U+F080..U+F0FF, the
// characters blob names use for '\' and for bytes that are not UTF-8
// (BlobNameFor). Allowed, "a\U+F05C" and "a\\" would name one blob.
Status CheckNewName(const std::string& name);
// Whether `cp` is one of the code points BlobNameFor writes for a byte.
inline bool IsBlobEscapeCodePoint(char32_t cp) {
  return cp == 0xF05C || (cp >= 0xF080 && cp <= 0xF0FF);
}
// The non-empty fields of `text` between `sep`s.
std::vector<std::string> SplitFields(const std::string& text, char sep);
// Last component of a path ("/a/b" -> "b").
std::string BaseName(const std::string& path);
// The file name an entry stands for: its "name" property when the RowKey is
// hashed, else the unescaped RowKey.
Result<std::string> NameOfEntry(const Entity& entry);
// Sets the "name" property when `name`'s RowKey is hashed, removes it otherwise.
void SetEntryName(const std::string& name, Entity* entry);
// The blob a file entry at `path` names: its "blob" property, else the
// path's own (BlobNameFor).
std::string EntryBlobName(const Entity& entry, const std::string& path);

}  // namespace stampfs
