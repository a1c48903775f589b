// In-memory BlobStore with the Blob service's semantics (AZURE-PROTOCOL.md §3):
// a new quoted ETag on every write, If-Match / If-None-Match evaluated as Azure
// does (not as Azurite <= 3.35 does for If-Match "*"), committed and
// uncommitted block lists, listing in byte order with markers.
//
// Invariants: one mutex guards all state; body readers and sinks run outside
// it. Block data is immutable and shared, so commits and copies never copy
// bytes. A blob with committed == false exists only as staged blocks: it is
// invisible to reads, listings and conditions.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "storage/content_md5.h"
#include "storage/fakes.h"
#include "storage/table_keys.h"

namespace stampfs {
namespace {

constexpr size_t kMaxCommittedBlocks = 50000;
constexpr size_t kMaxUncommittedBlocks = 100000;
constexpr size_t kMaxBlobNameLength = 1024;
constexpr long kMaxBlobSegments = 254;
constexpr size_t kMaxBlockIdBytes = 64;
constexpr int kMaxListResults = 5000;
constexpr size_t kSinkChunk = 16 * 1024;  // as curl delivers a body

Status ContainerNotFound(const std::string& container) {
  return Status(Code::kNotFound, "container " + container + " does not exist", 404,
                "ContainerNotFound");
}
Status BlobNotFound(const std::string& blob) {
  return Status(Code::kNotFound, "blob " + blob + " does not exist", 404, "BlobNotFound");
}
Status ConditionNotMet(const std::string& blob) {
  return Status(Code::kPreconditionFailed, "condition not met for blob " + blob, 412,
                "ConditionNotMet");
}
Status Invalid(const std::string& message, const std::string& service_code) {
  return Status(Code::kInvalidArgument, message, 400, service_code);
}

struct Block {
  std::string id;  // empty for the single anonymous block of a Put Blob
  std::shared_ptr<const std::string> data;
};

struct Blob {
  bool committed = false;
  std::vector<Block> blocks;  // the committed content, in order
  std::vector<Block> staged;  // uncommitted blocks, in staging order, ids unique
  std::string etag;
  int64_t last_modified = 0;
  std::string content_type = "application/octet-stream";
  std::string content_md5;  // base64; Put Blob computes it, Put Block List takes it
  BlobMetadata metadata;

  uint64_t Size() const {
    uint64_t size = 0;
    for (const Block& b : blocks) size += b.data->size();
    return size;
  }
};

using Container = std::map<std::string, Blob>;  // byte order of names

// Quoted "0x" + 16 upper-case hex digits, unique within the process.
std::string NewEtag() {
  static std::atomic<uint64_t> counter{
      0x08DC000000000000ull +
      (static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) &
       0xFFFFFFFFFFull) *
          16};
  char buf[24];
  std::snprintf(buf, sizeof buf, "\"0x%016llX\"",
                static_cast<unsigned long long>(counter.fetch_add(1) + 1));
  return buf;
}

bool IsBase64Char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '/';
}

int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  return c == '+' ? 62 : 63;
}

// Canonical padded standard base64 of 1..64 bytes (what Azure and Azurite accept).
Status ValidateBlockId(const std::string& id) {
  const Status bad =
      Invalid("block id is not canonical base64 of 1..64 bytes", "InvalidQueryParameterValue");
  if (id.empty() || id.size() % 4 != 0) return bad;
  size_t pad = 0;
  while (pad < 2 && id[id.size() - 1 - pad] == '=') ++pad;
  for (size_t i = 0; i < id.size() - pad; ++i) {
    if (!IsBase64Char(id[i])) return bad;
  }
  // Unused low bits of the last data character must be zero.
  const int last = Base64Value(id[id.size() - 1 - pad]);
  if ((pad == 1 && (last & 0x3)) || (pad == 2 && (last & 0xF))) return bad;
  if (id.size() / 4 * 3 - pad > kMaxBlockIdBytes) {
    return Invalid("block id longer than 64 bytes", "OutOfRangeInput");
  }
  return Status::Ok();
}

// Azure: 1..1,024 characters and at most 254 '/'-separated segments.
Status ValidateBlobName(const std::string& blob) {
  if (blob.empty() || Utf16Length(blob) > kMaxBlobNameLength) {
    return Invalid("blob name must be 1..1024 characters", "InvalidResourceName");
  }
  if (std::count(blob.begin(), blob.end(), '/') + 1 > kMaxBlobSegments) {
    return Invalid("blob name has more than 254 segments", "InvalidResourceName");
  }
  return Status::Ok();
}

Result<std::shared_ptr<const std::string>> ReadBody(const HttpBody& body) {
  auto data = std::make_shared<std::string>();
  data->resize(body.size);
  uint64_t done = 0;
  while (done < body.size) {
    if (!body.reader) return Status(Code::kInvalidArgument, "body has a size but no reader");
    const size_t n = body.reader(done, data->data() + done, body.size - done);
    if (n == 0) return Status(Code::kInvalidArgument, "body shorter than its declared size");
    done += n;
  }
  return std::shared_ptr<const std::string>(std::move(data));
}

// Write preconditions as Azure evaluates them on a blob that may be missing.
Status CheckWriteCondition(const Blob* blob, const Condition& condition, const std::string& name) {
  const bool exists = blob != nullptr && blob->committed;
  switch (condition.kind) {
    case Condition::Kind::kNone:
      return Status::Ok();
    case Condition::Kind::kIfNoneMatchAny:
      if (!exists) return Status::Ok();
      return Status(Code::kAlreadyExists, "blob " + name + " already exists", 409,
                    "BlobAlreadyExists");
    case Condition::Kind::kIfMatch:
      if (!exists) return ConditionNotMet(name);  // Azure: also for If-Match "*"
      if (condition.etag == "*" || condition.etag == blob->etag) return Status::Ok();
      return ConditionNotMet(name);
  }
  return Status::Ok();
}

BlobProperties PropertiesOf(const Blob& blob, bool with_metadata) {
  BlobProperties p;
  p.size = blob.Size();
  p.etag = blob.etag;
  p.last_modified = blob.last_modified;
  p.content_type = blob.content_type;
  p.content_md5 = blob.content_md5;
  if (with_metadata) p.metadata = blob.metadata;
  return p;
}

// Marks `blob` as a freshly committed version.
void Commit(Blob& blob, std::vector<Block> blocks, const BlobMetadata& metadata) {
  blob.committed = true;
  blob.blocks = std::move(blocks);
  blob.staged.clear();
  blob.etag = NewEtag();
  blob.last_modified = static_cast<int64_t>(std::time(nullptr));
  blob.content_type = "application/octet-stream";
  blob.content_md5.clear();
  blob.metadata = metadata;
}

const Block* FindBlock(const std::vector<Block>& blocks, const std::string& id) {
  for (const Block& b : blocks) {
    if (b.id == id) return &b;
  }
  return nullptr;
}

class FakeBlobStore : public BlobStore {
 public:
  Status CreateContainer(const std::string& container) override {
    if (!IsValidContainerName(container)) {
      return Invalid("invalid container name " + container, "InvalidResourceName");
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (!containers_.emplace(container, Container{}).second) {
      return Status(Code::kAlreadyExists, "container " + container + " already exists", 409,
                    "ContainerAlreadyExists");
    }
    return Status::Ok();
  }

  Status DeleteContainer(const std::string& container) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (containers_.erase(container) == 0) return ContainerNotFound(container);
    return Status::Ok();
  }

  Status GetContainerProperties(const std::string& container) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (containers_.count(container) == 0) return ContainerNotFound(container);
    return Status::Ok();
  }

  Result<BlobListing> ListBlobsPage(const std::string& container, const ListOptions& options,
                                    const std::string& marker) override;

  Result<BlobProperties> GetProperties(const std::string& container,
                                       const std::string& blob) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto found = FindCommitted(container, blob);
    STAMPFS_RETURN_IF_ERROR(found);
    return PropertiesOf(**found, true);
  }

  Result<ReadResult> Read(const std::string& container, const std::string& blob, uint64_t offset,
                          uint64_t length, const Condition& if_match,
                          const BodySink& sink) override;
  // The version is fixed when the read starts, as with Read; nothing stalls
  // in memory. A sink that refuses bytes ends it (kInternal).
  Result<ReadResult> ReadStream(const std::string& container, const std::string& blob,
                                uint64_t offset, uint64_t length, const Condition& if_match,
                                const BodySink& sink, std::chrono::milliseconds) override {
    return Read(container, blob, offset, length, if_match, sink);
  }

  Result<std::string> Put(const std::string& container, const std::string& blob,
                          const HttpBody& body, const BlobMetadata& metadata,
                          const Condition& condition) override {
    STAMPFS_RETURN_IF_ERROR(ValidateBlobName(blob));
    STAMPFS_RETURN_IF_ERROR(ValidateBlobMetadata(metadata));
    auto data = ReadBody(body);
    STAMPFS_RETURN_IF_ERROR(data);
    std::string md5 = ContentMd5::Of(**data);
    std::lock_guard<std::mutex> lock(mu_);
    auto c = FindContainer(container);
    STAMPFS_RETURN_IF_ERROR(c);
    auto it = (*c)->find(blob);
    STAMPFS_RETURN_IF_ERROR(
        CheckWriteCondition(it == (*c)->end() ? nullptr : &it->second, condition, blob));
    std::vector<Block> blocks;
    if (!(*data)->empty()) blocks.push_back(Block{"", *data});
    Blob& target = (**c)[blob];
    Commit(target, std::move(blocks), metadata);
    target.content_md5 = std::move(md5);  // the service computes it for Put Blob
    return target.etag;
  }

  Status PutBlock(const std::string& container, const std::string& blob,
                  const std::string& block_id, const HttpBody& body) override;

  Result<std::string> PutBlockList(const std::string& container, const std::string& blob,
                                   const std::vector<BlockRef>& blocks,
                                   const BlobMetadata& metadata, const Condition& condition,
                                   const std::string& content_md5 = "") override;

  Result<BlockList> GetBlockList(const std::string& container, const std::string& blob,
                                 BlockListType type) override;

  Result<std::string> Copy(const std::string& container, const std::string& source,
                           const std::string& destination, const Condition& condition,
                           const std::string& source_if_match) override;

  Status Delete(const std::string& container, const std::string& blob,
                const Condition& condition) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto found = FindExisting(container, blob, condition);
    STAMPFS_RETURN_IF_ERROR(found);
    containers_[container].erase(blob);  // staged blocks go with it
    return Status::Ok();
  }

  Result<std::string> SetMetadata(const std::string& container, const std::string& blob,
                                  const BlobMetadata& metadata,
                                  const Condition& condition) override {
    STAMPFS_RETURN_IF_ERROR(ValidateBlobMetadata(metadata));
    std::lock_guard<std::mutex> lock(mu_);
    auto found = FindExisting(container, blob, condition);
    STAMPFS_RETURN_IF_ERROR(found);
    Blob& target = **found;
    target.metadata = metadata;
    target.etag = NewEtag();
    target.last_modified = static_cast<int64_t>(std::time(nullptr));
    return target.etag;
  }

 private:
  // All helpers below expect mu_ to be held.
  Result<Container*> FindContainer(const std::string& container) {
    auto it = containers_.find(container);
    if (it == containers_.end()) return ContainerNotFound(container);
    return &it->second;
  }

  Result<Blob*> FindCommitted(const std::string& container, const std::string& blob) {
    auto c = FindContainer(container);
    STAMPFS_RETURN_IF_ERROR(c);
    auto it = (*c)->find(blob);
    if (it == (*c)->end() || !it->second.committed) return BlobNotFound(blob);
    return &it->second;
  }

  // The blob an operation on an existing blob (Read, Delete, SetMetadata)
  // acts on, after its condition: missing is 404 unconditionally but 412 under
  // If-Match; If-None-Match "*" on an existing blob is 412, which the Azure
  // client reports as kAlreadyExists.
  Result<Blob*> FindExisting(const std::string& container, const std::string& blob,
                             const Condition& condition) {
    auto found = FindCommitted(container, blob);
    if (!found.ok()) {
      const bool blob_missing = found.status().service_code() == "BlobNotFound";
      if (blob_missing && condition.kind == Condition::Kind::kIfMatch) return ConditionNotMet(blob);
      return found.status();
    }
    if (condition.kind == Condition::Kind::kIfNoneMatchAny) {
      return Status(Code::kAlreadyExists, "blob " + blob + " exists", 412, "ConditionNotMet");
    }
    STAMPFS_RETURN_IF_ERROR(CheckWriteCondition(*found, condition, blob));
    return found;
  }

  std::mutex mu_;
  std::map<std::string, Container> containers_;
};

Result<BlobListing> FakeBlobStore::ListBlobsPage(const std::string& container,
                                                 const ListOptions& options,
                                                 const std::string& marker) {
  // Like the client: <= 0 means the service default, larger values are capped.
  const int max_results = options.max_results <= 0 || options.max_results > kMaxListResults
                              ? kMaxListResults
                              : options.max_results;
  std::lock_guard<std::mutex> lock(mu_);
  auto c = FindContainer(container);
  STAMPFS_RETURN_IF_ERROR(c);
  const Container& blobs = **c;
  BlobListing out;
  int entries = 0;  // blobs and prefixes both count toward max_results
  std::string last_prefix;
  // Markers are the key of the next entry (a blob name or a prefix): both sort
  // at the position of their first blob, so lower_bound resumes exactly there.
  for (auto it = blobs.lower_bound(std::max(options.prefix, marker)); it != blobs.end(); ++it) {
    const std::string& name = it->first;
    if (name.compare(0, options.prefix.size(), options.prefix) != 0) break;
    if (!it->second.committed) continue;
    std::string group;
    if (!options.delimiter.empty()) {
      const size_t pos = name.find(options.delimiter, options.prefix.size());
      if (pos != std::string::npos) group = name.substr(0, pos + options.delimiter.size());
    }
    if (!group.empty() && group == last_prefix) continue;
    if (entries == max_results) {
      out.next_marker = group.empty() ? name : group;
      break;
    }
    ++entries;
    if (!group.empty()) {
      out.prefixes.push_back(group);
      last_prefix = group;
      continue;
    }
    out.blobs.push_back(BlobItem{name, PropertiesOf(it->second, options.include_metadata)});
  }
  return out;
}

Result<ReadResult> FakeBlobStore::Read(const std::string& container, const std::string& blob,
                                       uint64_t offset, uint64_t length, const Condition& if_match,
                                       const BodySink& sink) {
  if (if_match.kind == Condition::Kind::kIfNoneMatchAny) {
    return Invalid("If-None-Match: * is not allowed on reads", "UnsatisfiableCondition");
  }
  struct Slice {
    std::shared_ptr<const std::string> data;
    size_t begin, end;
  };
  std::vector<Slice> slices;
  ReadResult result;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto found = FindExisting(container, blob, if_match);
    STAMPFS_RETURN_IF_ERROR(found);
    const Blob& b = **found;
    result.properties = PropertiesOf(b, true);
    const uint64_t size = result.properties.size;
    const uint64_t begin = std::min(offset, size);
    const uint64_t end = (length == 0 || length > size - begin) ? size : begin + length;
    result.bytes = end - begin;
    uint64_t pos = 0;  // offset of the current block in the blob
    for (const Block& block : b.blocks) {
      const uint64_t block_end = pos + block.data->size();
      if (block_end > begin && pos < end) {
        slices.push_back(Slice{block.data, static_cast<size_t>(std::max(begin, pos) - pos),
                               static_cast<size_t>(std::min(end, block_end) - pos)});
      }
      pos = block_end;
    }
  }
  // Outside the lock: a sink may call back into the store.
  uint64_t delivered = 0;
  for (const Slice& s : slices) {
    for (size_t at = s.begin; at < s.end && sink;) {
      const size_t n = std::min(kSinkChunk, s.end - at);
      if (!sink(delivered, s.data->data() + at, n)) {
        return Status(Code::kInternal, "read of " + blob + " aborted by its sink");
      }
      delivered += n;
      at += n;
    }
  }
  return result;
}

Status FakeBlobStore::PutBlock(const std::string& container, const std::string& blob,
                               const std::string& block_id, const HttpBody& body) {
  STAMPFS_RETURN_IF_ERROR(ValidateBlobName(blob));
  STAMPFS_RETURN_IF_ERROR(ValidateBlockId(block_id));
  auto data = ReadBody(body);
  STAMPFS_RETURN_IF_ERROR(data);
  std::lock_guard<std::mutex> lock(mu_);
  auto c = FindContainer(container);
  STAMPFS_RETURN_IF_ERROR(c);
  Blob& target = (**c)[blob];  // creates an invisible, uncommitted-only blob
  // Azure: every block id of one blob has the same length.
  for (const auto* list : {&target.staged, &target.blocks}) {
    for (const Block& b : *list) {
      if (!b.id.empty() && b.id.size() != block_id.size()) {
        return Invalid("block id length differs from the blob's other blocks",
                       "InvalidBlobOrBlock");
      }
    }
  }
  for (Block& b : target.staged) {
    if (b.id == block_id) {
      b.data = *data;  // re-staging replaces the earlier uncommitted block
      return Status::Ok();
    }
  }
  if (target.staged.size() >= kMaxUncommittedBlocks) {
    return Status(Code::kConflict, "too many uncommitted blocks", 409, "BlockCountExceedsLimit");
  }
  target.staged.push_back(Block{block_id, *data});
  return Status::Ok();
}

Result<std::string> FakeBlobStore::PutBlockList(
    const std::string& container, const std::string& blob, const std::vector<BlockRef>& blocks,
    const BlobMetadata& metadata, const Condition& condition, const std::string& content_md5) {
  STAMPFS_RETURN_IF_ERROR(ValidateBlobName(blob));
  STAMPFS_RETURN_IF_ERROR(ValidateBlobMetadata(metadata));
  if (blocks.size() > kMaxCommittedBlocks) {
    return Status(Code::kConflict, "more than 50,000 committed blocks", 409,
                  "BlockCountExceedsLimit");
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto c = FindContainer(container);
  STAMPFS_RETURN_IF_ERROR(c);
  auto it = (*c)->find(blob);
  Blob* existing = it == (*c)->end() ? nullptr : &it->second;
  STAMPFS_RETURN_IF_ERROR(CheckWriteCondition(existing, condition, blob));
  static const std::vector<Block> kNone;
  const auto& committed = existing && existing->committed ? existing->blocks : kNone;
  const auto& staged = existing ? existing->staged : kNone;
  std::vector<Block> chosen;
  chosen.reserve(blocks.size());
  for (const BlockRef& ref : blocks) {
    const Block* b = nullptr;
    if (ref.source != BlockRef::Source::kCommitted) b = FindBlock(staged, ref.id);
    if (b == nullptr && ref.source != BlockRef::Source::kUncommitted) {
      b = ref.id.empty() ? nullptr : FindBlock(committed, ref.id);
    }
    if (b == nullptr) {
      return Invalid("block " + ref.id + " is not in the required list", "InvalidBlockList");
    }
    chosen.push_back(*b);
  }
  Blob& target = (**c)[blob];
  Commit(target, std::move(chosen), metadata);  // discards every uncommitted block
  target.content_md5 = content_md5;             // Azure stores it unchecked
  return target.etag;
}

Result<BlockList> FakeBlobStore::GetBlockList(const std::string& container, const std::string& blob,
                                              BlockListType type) {
  std::lock_guard<std::mutex> lock(mu_);
  auto c = FindContainer(container);
  STAMPFS_RETURN_IF_ERROR(c);
  auto it = (*c)->find(blob);
  if (it == (*c)->end()) return BlobNotFound(blob);
  const Blob& b = it->second;
  BlockList out;
  if (b.committed) out.etag = b.etag;
  if (type != BlockListType::kUncommitted) {
    for (const Block& block : b.blocks) {
      if (!block.id.empty()) out.committed.push_back(BlockInfo{block.id, block.data->size()});
    }
  }
  if (type != BlockListType::kCommitted) {
    for (const Block& block : b.staged) {
      out.uncommitted.push_back(BlockInfo{block.id, block.data->size()});
    }
  }
  return out;
}

Result<std::string> FakeBlobStore::Copy(const std::string& container, const std::string& source,
                                        const std::string& destination, const Condition& condition,
                                        const std::string& source_if_match) {
  STAMPFS_RETURN_IF_ERROR(ValidateBlobName(destination));
  std::lock_guard<std::mutex> lock(mu_);
  auto found = FindCommitted(container, source);
  STAMPFS_RETURN_IF_ERROR(found);
  if (!source_if_match.empty() && source_if_match != "*" && source_if_match != (*found)->etag) {
    return Status(Code::kPreconditionFailed, "source condition not met for " + source, 412,
                  "SourceConditionNotMet");
  }
  Container& c = containers_[container];
  auto it = c.find(destination);
  STAMPFS_RETURN_IF_ERROR(
      CheckWriteCondition(it == c.end() ? nullptr : &it->second, condition, destination));
  // Copies first: source and destination may be the same blob.
  std::vector<Block> blocks = (*found)->blocks;
  BlobMetadata metadata = (*found)->metadata;
  std::string content_type = (*found)->content_type;
  std::string content_md5 = (*found)->content_md5;
  Blob& target = c[destination];
  Commit(target, std::move(blocks), metadata);
  target.content_type = std::move(content_type);
  target.content_md5 = std::move(content_md5);
  return target.etag;
}

}  // namespace

std::unique_ptr<BlobStore> MakeFakeBlobStore() { return std::make_unique<FakeBlobStore>(); }

}  // namespace stampfs
