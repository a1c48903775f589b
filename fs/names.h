// Rules for names and the entity properties that carry them.
#pragma once

#include <string>

#include "storage/status.h"
#include "storage/table_store.h"

namespace stampfs {

inline constexpr size_t kMaxNameBytes = 255;

// kNameTooLong over 255 bytes; kInvalidArgument for "", ".", ".." or a '/'.
Status CheckName(const std::string& name);
// Last component of a path ("/a/b" -> "b").
std::string BaseName(const std::string& path);
// The file name an entry stands for: its "name" property when the RowKey is
// hashed, else the unescaped RowKey.
Result<std::string> NameOfEntry(const Entity& entry);
// Sets the "name" property when `name`'s RowKey is hashed, removes it otherwise.
void SetEntryName(const std::string& name, Entity* entry);

}  // namespace stampfs
