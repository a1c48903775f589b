#include "fs/namespace/names.h"

#include <algorithm>

#include "fs/namespace/inode_table.h"
#include "storage/table_keys.h"
#include "storage/utf8.h"

namespace stampfs {

Status CheckName(const std::string& name) {
  if (name.size() > kMaxNameBytes) {
    return Status(Code::kNameTooLong, "name longer than 255 bytes");
  }
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos) {
    return Status(Code::kInvalidArgument, "invalid file name");
  }
  return Status::Ok();
}

Status CheckNewName(const std::string& name) {
  STAMPFS_RETURN_IF_ERROR(CheckName(name));
  for (size_t i = 0; i < name.size();) {
    char32_t cp = 0;
    size_t len = DecodeUtf8(name, i, &cp);
    if (len == 0) {
      ++i;
      continue;
    }
    if (IsBlobEscapeCodePoint(cp)) {
      return Status(Code::kIllegalSequence,
                    "names may not hold U+F05C or U+F080..U+F0FF: stampfs stores '\\' and "
                    "bytes that are not UTF-8 in blob names as these characters");
    }
    i += len;
  }
  return Status::Ok();
}

std::string BaseName(const std::string& path) { return path.substr(path.rfind('/') + 1); }

Result<std::string> NameOfEntry(const Entity& entry) {
  if (const Binary* b = entry.GetBinary("name")) return b->bytes;
  if (IsHashedKey(entry.row_key)) {
    return Status(Code::kCorruption, "hashed row key " + entry.row_key + " without a name");
  }
  return UnescapeKey(entry.row_key);
}

void SetEntryName(const std::string& name, Entity* entry) {
  if (IsHashedKey(entry->row_key)) {
    entry->properties["name"] = Binary{name};
  } else {
    entry->properties.erase("name");
  }
}

std::string EntryBlobName(const Entity& entry, const std::string& path) {
  const std::string* b = entry.GetString("blob");
  return b && !b->empty() ? *b : BlobNameFor(path);
}

std::vector<std::string> SplitFields(const std::string& text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(sep, start);
    if (end == std::string::npos) end = text.size();
    if (end > start) parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

}  // namespace stampfs
