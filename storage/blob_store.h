// BlobStore: the block-blob operations stampfs needs, independent of HTTP.
// Implemented by AzureBlobClient (REST), FakeBlobStore (memory) and
// FaultyBlobStore (fault injection around any other BlobStore).
//
// ETags are stored quoted ("0x8DC..."), as the ETag header carries them;
// listing ETags are quoted on the way in. Every write takes a Condition, so a
// caller always says what it expects to overwrite.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "storage/http.h"
#include "storage/status.h"

namespace stampfs {

// Blob metadata: names are [a-z][a-z0-9_]* (see AZURE-PROTOCOL.md §1.1 quirk 3),
// values ASCII without CR/LF. Writes replace the whole set.
using BlobMetadata = std::map<std::string, std::string>;

// The checks every BlobStore makes before a write (no HTTP status): names
// [a-z][a-z0-9_]* where no two names first differ at a '_' against a digit
// (Azurite signs headers in ICU order, Azure in byte order: they disagree
// only there, so blobfuse's `hdi_isfolder` is fine beside `mode`), values
// printable ASCII without leading or trailing spaces, at most 8 KiB in all.
Status ValidateBlobMetadata(const BlobMetadata& metadata);

// A write precondition. Default-constructed = unconditional (spell it
// Condition::None() at call sites so it is a visible choice).
struct Condition {
  enum class Kind { kNone, kIfMatch, kIfNoneMatchAny };
  Kind kind = Kind::kNone;
  std::string etag;  // for kIfMatch: a quoted ETag or "*"

  static Condition None() { return {}; }
  static Condition IfMatch(std::string etag) { return {Kind::kIfMatch, std::move(etag)}; }
  // Create-only: fails with kAlreadyExists when the target exists.
  static Condition IfNoneMatchAny() { return {Kind::kIfNoneMatchAny, {}}; }
};

struct BlobProperties {
  uint64_t size = 0;
  std::string etag;           // quoted
  int64_t last_modified = 0;  // Unix seconds
  std::string content_type;
  std::string content_md5;  // base64 Content-MD5 of the whole blob ("" when it has none)
  BlobMetadata metadata;
};

struct BlobItem {
  std::string name;
  BlobProperties properties;  // metadata filled only when asked for
};

struct BlobListing {
  std::vector<BlobItem> blobs;
  std::vector<std::string> prefixes;  // "dir/" entries when a delimiter is given
  std::string next_marker;            // empty on the last page
};

struct ListOptions {
  std::string prefix;
  std::string delimiter;  // empty: flat listing
  bool include_metadata = false;
  int max_results = 5000;  // per page
};

enum class BlockListType { kCommitted, kUncommitted, kAll };

// One entry of a Put Block List body.
struct BlockRef {
  enum class Source { kCommitted, kUncommitted, kLatest };
  std::string id;  // base64, one fixed length per blob
  Source source = Source::kLatest;
};

struct BlockInfo {
  std::string id;
  uint64_t size = 0;
};

struct BlockList {
  std::string etag;  // empty when the blob has no committed version
  std::vector<BlockInfo> committed;
  std::vector<BlockInfo> uncommitted;
};

// Ranged read result.
struct ReadResult {
  uint64_t bytes = 0;         // bytes delivered to the sink
  BlobProperties properties;  // of the version that was read (size = whole blob)
};

class BlobStore {
 public:
  virtual ~BlobStore() = default;

  // kAlreadyExists when it exists.
  virtual Status CreateContainer(const std::string& container) = 0;
  virtual Status DeleteContainer(const std::string& container) = 0;
  // OK when the container exists and the credentials may read it.
  virtual Status GetContainerProperties(const std::string& container) = 0;

  // One page from `marker` (empty for the first).
  virtual Result<BlobListing> ListBlobsPage(const std::string& container,
                                            const ListOptions& options,
                                            const std::string& marker) = 0;
  // Every page, following continuations.
  Result<BlobListing> ListBlobs(const std::string& container, const ListOptions& options);

  virtual Result<BlobProperties> GetProperties(const std::string& container,
                                               const std::string& blob) = 0;

  // Reads [offset, offset+length) into `sink`, clipped to the blob's size;
  // length 0 with offset 0 reads the whole blob. `if_match` pins the version
  // (kPreconditionFailed when the blob changed). Never sends a Range that
  // starts at or past the end (Azurite and Azure disagree there).
  virtual Result<ReadResult> Read(const std::string& container, const std::string& blob,
                                  uint64_t offset, uint64_t length, const Condition& if_match,
                                  const BodySink& sink) = 0;
  // Read for long ranges (a whole file read ahead): bounded by progress, not
  // by a total deadline: fails with kTimeout once no byte arrived for `stall`.
  // The version is pinned as by Read. Never restarts: after bytes reached the
  // sink a failure is returned, and the caller resumes from what it got.
  virtual Result<ReadResult> ReadStream(const std::string& container, const std::string& blob,
                                        uint64_t offset, uint64_t length, const Condition& if_match,
                                        const BodySink& sink, std::chrono::milliseconds stall) = 0;
  // Convenience: the bytes as a string.
  Result<std::string> ReadToString(const std::string& container, const std::string& blob,
                                   uint64_t offset = 0, uint64_t length = 0,
                                   const Condition& if_match = Condition::None());

  // Single-shot upload; returns the new ETag. The service computes the
  // blob's Content-MD5.
  virtual Result<std::string> Put(const std::string& container, const std::string& blob,
                                  const HttpBody& body, const BlobMetadata& metadata,
                                  const Condition& condition) = 0;
  Result<std::string> PutString(const std::string& container, const std::string& blob,
                                const std::string& data, const BlobMetadata& metadata,
                                const Condition& condition);

  // Stages one block (not visible until committed).
  virtual Status PutBlock(const std::string& container, const std::string& blob,
                          const std::string& block_id, const HttpBody& body) = 0;
  // Commits `blocks` in order; metadata replaces the blob's; returns the new
  // ETag. `content_md5` (base64) becomes the blob's Content-MD5, unchecked:
  // the caller vouches for it; "" leaves the blob without one.
  virtual Result<std::string> PutBlockList(const std::string& container, const std::string& blob,
                                           const std::vector<BlockRef>& blocks,
                                           const BlobMetadata& metadata, const Condition& condition,
                                           const std::string& content_md5 = "") = 0;
  virtual Result<BlockList> GetBlockList(const std::string& container, const std::string& blob,
                                         BlockListType type) = 0;

  // Server-side copy within the container; waits until the copy completes.
  // `condition` applies to the destination, `source_if_match` (quoted ETag or
  // empty) pins the source version. Returns the destination ETag.
  virtual Result<std::string> Copy(const std::string& container, const std::string& source,
                                   const std::string& destination, const Condition& condition,
                                   const std::string& source_if_match) = 0;

  virtual Status Delete(const std::string& container, const std::string& blob,
                        const Condition& condition) = 0;

  // Replaces all metadata; returns the new ETag.
  virtual Result<std::string> SetMetadata(const std::string& container, const std::string& blob,
                                          const BlobMetadata& metadata,
                                          const Condition& condition) = 0;
};

// Fixed-width block id for block number `index` (same length for every index
// of every blob, so patched blobs keep one id width).
std::string BlockIdFor(uint64_t index);

// Container (and queue) names: 3-63 of [a-z0-9-], starting and ending
// alphanumeric, no "--".
bool IsValidContainerName(const std::string& name);

}  // namespace stampfs
