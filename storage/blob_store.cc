// BlobStore's non-virtual helpers, shared by every implementation.
#include "storage/blob_store.h"

#include <cstdio>

#include "storage/auth.h"

namespace stampfs {

Result<BlobListing> BlobStore::ListBlobs(const std::string& container, const ListOptions& options) {
  BlobListing all;
  std::string marker;
  do {
    auto page = ListBlobsPage(container, options, marker);
    if (!page.ok()) return page.status();
    for (BlobItem& item : page->blobs) all.blobs.push_back(std::move(item));
    for (std::string& prefix : page->prefixes) all.prefixes.push_back(std::move(prefix));
    // A service that repeats a marker would loop forever: treat it as corrupt.
    if (!page->next_marker.empty() && page->next_marker == marker) {
      return Status(Code::kCorruption, "list " + container + ": continuation marker repeated");
    }
    marker = page->next_marker;
  } while (!marker.empty());
  return all;
}

Result<std::string> BlobStore::ReadToString(const std::string& container, const std::string& blob,
                                            uint64_t offset, uint64_t length,
                                            const Condition& if_match) {
  std::string out;
  // Offsets restart at 0 when a request is retried: position, don't append.
  BodySink sink = [&out](uint64_t at, const char* data, size_t len) {
    out.resize(at);
    out.append(data, len);
    return true;
  };
  auto result = Read(container, blob, offset, length, if_match, sink);
  if (!result.ok()) return result.status();
  out.resize(result->bytes);
  return out;
}

Result<std::string> BlobStore::PutString(const std::string& container, const std::string& blob,
                                         const std::string& data, const BlobMetadata& metadata,
                                         const Condition& condition) {
  return Put(container, blob, HttpBody::FromString(data), metadata, condition);
}

std::string BlockIdFor(uint64_t index) {
  // 32 hex digits -> 44 base64 characters with one '=' of padding, for every index.
  char digits[33];
  std::snprintf(digits, sizeof(digits), "%032llx", static_cast<unsigned long long>(index));
  return Base64Encode(std::string(digits, 32));
}

}  // namespace stampfs
