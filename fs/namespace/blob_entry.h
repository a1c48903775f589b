// What an entry takes from a blob of a container listing: the blob's
// metadata by name in any case (Azure keeps the case it was given), its
// mtime, and the properties that name the blob version. Used by renames,
// which record the version they copied (namespace_rename.cc), and by the
// importer and fsck (fs/admin/).
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>

#include "storage/blob_store.h"
#include "storage/table_store.h"

namespace stampfs {

// A metadata value by case-insensitive name (`name` in lower case); nullptr
// when the blob has none.
const std::string* BlobMeta(const BlobItem& blob, const std::string& name);

// A metadata value that is a whole decimal number; nullopt when absent,
// empty or anything else.
template <typename T>
std::optional<T> BlobMetaNumber(const BlobItem& blob, const std::string& name) {
  const std::string* v = BlobMeta(blob, name);
  if (!v || v->empty()) return std::nullopt;
  T out{};
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || end != v->data() + v->size()) return std::nullopt;
  return out;
}

// A blob's mtime: stampfs metadata "mtime" (ns), else Last-Modified.
int64_t BlobMtimeNs(const BlobItem& blob);
// The blob carries stampfs's own metadata ("stampfs"): a mount wrote it.
bool WrittenByStampfs(const BlobItem& blob);
// Sets the entry properties that describe a blob version: blob, betag and,
// from stampfs metadata, bsize.
void SetBlobProperties(const BlobItem& blob, Entity* entry);

}  // namespace stampfs
