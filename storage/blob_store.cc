// BlobStore's non-virtual helpers, shared by every implementation.
#include "storage/blob_store.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

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

namespace {

constexpr size_t kMaxMetadataBytes = 8 * 1024;  // names + values, Azure's limit

bool IsMetadataName(const std::string& name) {
  if (name.empty() || name[0] < 'a' || name[0] > 'z') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool IsMetadataValue(const std::string& value) {
  if (!value.empty() && (value.front() == ' ' || value.back() == ' ')) return false;
  return std::all_of(value.begin(), value.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

// Whether byte order and ICU order (Azurite's localeCompare) disagree on a and b.
bool SortsDifferently(const std::string& a, const std::string& b) {
  auto [ia, ib] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  if (ia == a.end() || ib == b.end()) return false;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  return (*ia == '_' && digit(*ib)) || (digit(*ia) && *ib == '_');
}

}  // namespace

Status ValidateBlobMetadata(const BlobMetadata& metadata) {
  size_t total = 0;
  for (auto it = metadata.begin(); it != metadata.end(); ++it) {
    const auto& [name, value] = *it;
    if (!IsMetadataName(name)) {
      return Status(Code::kInvalidArgument, "metadata name '" + name + "' is not [a-z][a-z0-9_]*");
    }
    for (auto other = std::next(it); other != metadata.end(); ++other) {
      if (SortsDifferently(name, other->first)) {
        return Status(Code::kInvalidArgument, "metadata names '" + name + "' and '" + other->first +
                                                  "' differ at '_' against a digit");
      }
    }
    if (!IsMetadataValue(value)) {
      return Status(Code::kInvalidArgument,
                    "metadata value of '" + name +
                        "' must be printable ASCII without leading or trailing spaces");
    }
    total += name.size() + value.size();
  }
  if (total > kMaxMetadataBytes) return Status(Code::kTooLarge, "metadata exceeds 8 KiB");
  return Status::Ok();
}

std::string BlockIdFor(uint64_t index) {
  // 32 hex digits -> 44 base64 characters with one '=' of padding, for every index.
  char digits[33];
  std::snprintf(digits, sizeof(digits), "%032llx", static_cast<unsigned long long>(index));
  return Base64Encode(std::string(digits, 32));
}

bool IsValidContainerName(const std::string& name) {
  if (name.size() < 3 || name.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(name.front()) || !alnum(name.back())) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!alnum(name[i]) && name[i] != '-') return false;
    if (name[i] == '-' && i > 0 && name[i - 1] == '-') return false;
  }
  return true;
}

}  // namespace stampfs
