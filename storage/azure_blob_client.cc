// BlobStore over the Azure Blob REST API (Azure and Azurite; see
// AZURE-PROTOCOL.md §3). Request building and response reading only; XML lives
// in blob_xml.cc, signing in auth.cc, retries in http.cc.
#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "storage/auth.h"
#include "storage/azure_clients.h"
#include "storage/blob_xml.h"
#include "storage/cancel.h"
#include "storage/sas.h"

namespace stampfs {
namespace {

using Query = UrlQuery;

constexpr int kMaxListResults = 5000;
constexpr std::chrono::minutes kCopyDeadline{10};
constexpr std::chrono::milliseconds kCopyPollInitial{100};
constexpr std::chrono::milliseconds kCopyPollMax{5000};
constexpr const char* kOctetStream = "application/octet-stream";

Status InvalidArgument(const std::string& message) {
  return Status(Code::kInvalidArgument, message);
}

// An empty name would address the container instead of a blob.
Status CheckBlobName(const std::string& blob) {
  if (blob.empty()) return InvalidArgument("empty blob name");
  return Status::Ok();
}

void AddMetadata(HttpRequest& request, const BlobMetadata& metadata) {
  for (const auto& [name, value] : metadata) request.SetHeader("x-ms-meta-" + name, value);
}

Status AddCondition(HttpRequest& request, const Condition& condition) {
  switch (condition.kind) {
    case Condition::Kind::kNone:
      return Status::Ok();
    case Condition::Kind::kIfMatch:
      if (condition.etag.empty()) return InvalidArgument("If-Match condition without an ETag");
      request.SetHeader("If-Match", condition.etag);
      return Status::Ok();
    case Condition::Kind::kIfNoneMatchAny:
      request.SetHeader("If-None-Match", "*");
      return Status::Ok();
  }
  return Status::Ok();
}

std::string HeaderOf(const HttpResponse& response, const std::string& lowercase_name) {
  auto it = response.headers.find(lowercase_name);
  return it == response.headers.end() ? std::string() : it->second;
}

// Size from Content-Length: right for 200 GET and HEAD; 206 overrides it.
BlobProperties PropertiesFromHeaders(const HttpResponse& response) {
  BlobProperties props;
  props.size = ParseUint64(HeaderOf(response, "content-length")).value_or(0);
  props.etag = QuoteEtag(HeaderOf(response, "etag"));
  props.last_modified = ParseHttpDate(HeaderOf(response, "last-modified")).value_or(0);
  props.content_type = HeaderOf(response, "content-type");
  props.content_md5 = HeaderOf(response, "content-md5");
  const std::string prefix = "x-ms-meta-";
  for (auto it = response.headers.lower_bound(prefix);
       it != response.headers.end() && it->first.starts_with(prefix); ++it) {
    props.metadata[it->first.substr(prefix.size())] = it->second;
  }
  return props;
}

bool IsSuccess(int status) { return status >= 200 && status < 300; }

// "bytes=offset-end" (inclusive); open-ended when length is 0 or would overflow.
std::string RangeValue(uint64_t offset, uint64_t length) {
  std::string value = "bytes=" + std::to_string(offset) + "-";
  if (length != 0 && length - 1 <= UINT64_MAX - offset)
    value += std::to_string(offset + length - 1);
  return value;
}

const char* BlockListTypeName(BlockListType type) {
  switch (type) {
    case BlockListType::kCommitted:
      return "committed";
    case BlockListType::kUncommitted:
      return "uncommitted";
    case BlockListType::kAll:
      return "all";
  }
  return "all";
}

class AzureBlobClient final : public BlobStore {
 public:
  AzureBlobClient(StorageAccount account, ClientOptions options)
      : account_(std::move(account)),
        http_(options.transport
                  ? options.transport
                  : std::shared_ptr<HttpTransport>(MakeCurlTransport({account_.ca_file})),
              options.retry, {}, {}, MakeBreaker(options.breaker)),
        signer_(MakeSigner(account_, Service::kBlob, options.now ? options.now : HttpDateNow)),
        container_sas_(!account_.HasKey() && ParseSas(account_.sas_token).resource == "c") {}

  // A container SAS addresses one existing container and allows no
  // container-level operation: "create" is "exists" when the container
  // lists, and properties are a one-blob listing.
  Status CreateContainer(const std::string& container) override {
    if (container_sas_) {
      STAMPFS_RETURN_IF_ERROR(GetContainerProperties(container));
      return Status(Code::kAlreadyExists, "container " + container + " exists (container SAS)");
    }
    HttpRequest request = NewRequest("PUT", ContainerUrl(container, {{"restype", "container"}}));
    return Call(std::move(request), "create container " + container).status();
  }

  Status DeleteContainer(const std::string& container) override {
    HttpRequest request = NewRequest("DELETE", ContainerUrl(container, {{"restype", "container"}}));
    return Call(std::move(request), "delete container " + container).status();
  }

  Status GetContainerProperties(const std::string& container) override {
    if (container_sas_) {
      ListOptions one;
      one.max_results = 1;
      return ListBlobsPage(container, one, "").status();
    }
    HttpRequest request = NewRequest("HEAD", ContainerUrl(container, {{"restype", "container"}}));
    return Call(std::move(request), "container " + container).status();
  }

  Result<BlobListing> ListBlobsPage(const std::string& container, const ListOptions& options,
                                    const std::string& marker) override;
  Result<BlobProperties> GetProperties(const std::string& container,
                                       const std::string& blob) override;
  Result<ReadResult> Read(const std::string& container, const std::string& blob, uint64_t offset,
                          uint64_t length, const Condition& if_match,
                          const BodySink& sink) override {
    return ReadRange(container, blob, offset, length, if_match, sink, {});
  }
  Result<ReadResult> ReadStream(const std::string& container, const std::string& blob,
                                uint64_t offset, uint64_t length, const Condition& if_match,
                                const BodySink& sink, std::chrono::milliseconds stall) override {
    return ReadRange(container, blob, offset, length, if_match, sink,
                     std::max(stall, std::chrono::milliseconds(1)));
  }
  Result<std::string> Put(const std::string& container, const std::string& blob,
                          const HttpBody& body, const BlobMetadata& metadata,
                          const Condition& condition) override;
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
                const Condition& condition) override;
  Result<std::string> SetMetadata(const std::string& container, const std::string& blob,
                                  const BlobMetadata& metadata,
                                  const Condition& condition) override;

 private:
  std::string ContainerUrl(const std::string& container, const Query& query = {}) const {
    return WithQuery(account_.blob_endpoint + "/" + UrlEncode(container), query);
  }

  std::string BlobUrl(const std::string& container, const std::string& blob,
                      const Query& query = {}) const {
    return WithQuery(
        account_.blob_endpoint + "/" + UrlEncode(container) + "/" + UrlEncode(blob, true), query);
  }

  static HttpRequest NewRequest(const std::string& method, std::string url) {
    return ServiceRequest(method, std::move(url), kBlobApiVersion);
  }

  // Sends with retries; any non-2xx answer becomes a Status carrying `context`.
  // Under If-None-Match: * an "exists" answer (409 or 412) is kAlreadyExists.
  Result<HttpResponse> Call(HttpRequest request, const std::string& context,
                            const Condition& condition = Condition::None()) {
    auto response = http_.Execute(std::move(request), signer_);
    if (!response.ok()) return response.status().WithContext(context);
    if (IsSuccess(response->status)) return response;
    Status status = StatusFromResponse(*response, context);
    if (condition.kind == Condition::Kind::kIfNoneMatchAny &&
        (status.http_status() == 409 || status.http_status() == 412)) {
      return Status(Code::kAlreadyExists, status.message(), status.http_status(),
                    status.service_code());
    }
    return status;
  }

  // A write that answers with the new ETag.
  Result<std::string> CallForEtag(HttpRequest request, const std::string& context,
                                  const Condition& condition) {
    auto response = Call(std::move(request), context, condition);
    if (!response.ok()) return response.status();
    std::string etag = QuoteEtag(HeaderOf(*response, "etag"));
    if (etag.empty()) return Status(Code::kCorruption, context + ": response without an ETag");
    return etag;
  }

  Result<ReadResult> ReadRange(const std::string& container, const std::string& blob,
                               uint64_t offset, uint64_t length, const Condition& if_match,
                               const BodySink& sink, std::chrono::milliseconds stall);
  Result<ReadResult> ReadOnce(const std::string& container, const std::string& blob,
                              uint64_t offset, uint64_t length, const Condition& if_match,
                              const BodySink& sink, std::chrono::milliseconds stall,
                              bool* past_end);
  Result<std::string> WaitForCopy(const std::string& container, const std::string& destination,
                                  const std::string& copy_id, const std::string& context);
  void AbortCopy(const std::string& container, const std::string& destination,
                 const std::string& copy_id);

  StorageAccount account_;
  RetryingHttpClient http_;
  RequestSigner signer_;
  bool container_sas_;  // sr=c: no container-level operations
};

Result<BlobListing> AzureBlobClient::ListBlobsPage(const std::string& container,
                                                   const ListOptions& options,
                                                   const std::string& marker) {
  Query query = {{"restype", "container"}, {"comp", "list"}};
  if (!options.prefix.empty()) query.emplace_back("prefix", options.prefix);
  if (!options.delimiter.empty()) query.emplace_back("delimiter", options.delimiter);
  if (!marker.empty()) query.emplace_back("marker", marker);
  if (options.max_results > 0) {
    query.emplace_back("maxresults",
                       std::to_string(std::min(options.max_results, kMaxListResults)));
  }
  if (options.include_metadata) query.emplace_back("include", "metadata");
  std::string context = "list " + container;
  auto response = Call(NewRequest("GET", ContainerUrl(container, query)), context);
  if (!response.ok()) return response.status();
  auto listing = ParseBlobListingXml(response->body);
  if (!listing.ok()) return listing.status().WithContext(context);
  return listing;
}

Result<BlobProperties> AzureBlobClient::GetProperties(const std::string& container,
                                                      const std::string& blob) {
  STAMPFS_RETURN_IF_ERROR(CheckBlobName(blob));
  auto response =
      Call(NewRequest("HEAD", BlobUrl(container, blob)), "properties of " + container + "/" + blob);
  if (!response.ok()) return response.status();
  return PropertiesFromHeaders(*response);
}

// Reads one range; a range that starts past the end (416, known only after
// asking) sets *past_end, and the caller learns the size with a HEAD instead.
Result<ReadResult> AzureBlobClient::ReadOnce(const std::string& container, const std::string& blob,
                                             uint64_t offset, uint64_t length,
                                             const Condition& if_match, const BodySink& sink,
                                             std::chrono::milliseconds stall, bool* past_end) {
  std::string context = "read " + container + "/" + blob;
  HttpRequest request = NewRequest("GET", BlobUrl(container, blob));
  const bool ranged = offset != 0 || length != 0;
  // A whole-blob read sends no range, so empty blobs need no special case (§7.4).
  if (ranged) request.SetHeader("x-ms-range", RangeValue(offset, length));
  STAMPFS_RETURN_IF_ERROR(AddCondition(request, if_match));
  request.stall_timeout = stall;
  uint64_t delivered = 0;
  request.sink = [&delivered, &sink](uint64_t at, const char* data, size_t len) {
    delivered = at + len;  // a retried attempt restarts at 0
    return sink ? sink(at, data, len) : true;
  };
  auto response = http_.Execute(std::move(request), signer_);
  if (!response.ok()) return response.status().WithContext(context);
  *past_end = response->status == 416;
  if (*past_end) return ReadResult{};
  if (!IsSuccess(response->status)) return StatusFromResponse(*response, context);
  if (ranged && response->status != 206) {
    return Status(Code::kCorruption, context + ": the service ignored the requested range");
  }
  ReadResult result;
  result.properties = PropertiesFromHeaders(*response);
  if (response->status == 206) {
    auto total = ParseContentRangeTotal(HeaderOf(*response, "content-range"));
    if (!total) return Status(Code::kCorruption, context + ": 206 without a Content-Range size");
    result.properties.size = *total;
  }
  result.bytes = delivered;
  return result;
}

// `stall` > 0: a stream (HttpRequest::stall_timeout).
Result<ReadResult> AzureBlobClient::ReadRange(const std::string& container, const std::string& blob,
                                              uint64_t offset, uint64_t length,
                                              const Condition& if_match, const BodySink& sink,
                                              std::chrono::milliseconds stall) {
  STAMPFS_RETURN_IF_ERROR(CheckBlobName(blob));
  if (if_match.kind == Condition::Kind::kIfNoneMatchAny) {
    return InvalidArgument("read " + container + "/" + blob + ": If-None-Match: * on a read");
  }
  // Only an unpinned blob can grow between the 416 and the HEAD: then read again.
  for (int attempt = 0; attempt < 3; ++attempt) {
    bool past_end = false;
    auto result = ReadOnce(container, blob, offset, length, if_match, sink, stall, &past_end);
    if (!result.ok() || !past_end) return result;
    HttpRequest head = NewRequest("HEAD", BlobUrl(container, blob));
    STAMPFS_RETURN_IF_ERROR(AddCondition(head, if_match));
    auto response = Call(std::move(head), "read " + container + "/" + blob);
    if (!response.ok()) return response.status();
    ReadResult empty;
    empty.properties = PropertiesFromHeaders(*response);
    if (empty.properties.size <= offset) return empty;
  }
  return Status(Code::kConflict, "read " + container + "/" + blob + ": blob kept changing");
}

Result<std::string> AzureBlobClient::Put(const std::string& container, const std::string& blob,
                                         const HttpBody& body, const BlobMetadata& metadata,
                                         const Condition& condition) {
  std::string context = "put " + container + "/" + blob;
  STAMPFS_RETURN_IF_ERROR(CheckBlobName(blob).WithContext(context));
  STAMPFS_RETURN_IF_ERROR(ValidateBlobMetadata(metadata).WithContext(context));
  HttpRequest request = NewRequest("PUT", BlobUrl(container, blob));
  request.SetHeader("x-ms-blob-type", "BlockBlob");
  request.SetHeader("Content-Type", kOctetStream);
  AddMetadata(request, metadata);
  STAMPFS_RETURN_IF_ERROR(AddCondition(request, condition));
  request.body = body;
  return CallForEtag(std::move(request), context, condition);
}

Status AzureBlobClient::PutBlock(const std::string& container, const std::string& blob,
                                 const std::string& block_id, const HttpBody& body) {
  std::string context = "put block of " + container + "/" + blob;
  STAMPFS_RETURN_IF_ERROR(CheckBlobName(blob).WithContext(context));
  if (block_id.empty()) return InvalidArgument(context + ": empty block id");
  HttpRequest request =
      NewRequest("PUT", BlobUrl(container, blob, {{"comp", "block"}, {"blockid", block_id}}));
  request.SetHeader("Content-Type", kOctetStream);
  request.body = body;
  return Call(std::move(request), context).status();
}

Result<std::string> AzureBlobClient::PutBlockList(
    const std::string& container, const std::string& blob, const std::vector<BlockRef>& blocks,
    const BlobMetadata& metadata, const Condition& condition, const std::string& content_md5) {
  std::string context = "commit " + container + "/" + blob;
  STAMPFS_RETURN_IF_ERROR(CheckBlobName(blob).WithContext(context));
  STAMPFS_RETURN_IF_ERROR(ValidateBlobMetadata(metadata).WithContext(context));
  HttpRequest request = NewRequest("PUT", BlobUrl(container, blob, {{"comp", "blocklist"}}));
  request.SetHeader("Content-Type", "application/xml");
  // Put Block List resets properties and metadata: send them every time (§3.5).
  request.SetHeader("x-ms-blob-content-type", kOctetStream);
  if (!content_md5.empty()) request.SetHeader("x-ms-blob-content-md5", content_md5);
  AddMetadata(request, metadata);
  STAMPFS_RETURN_IF_ERROR(AddCondition(request, condition));
  request.body = HttpBody::FromString(BuildBlockListXml(blocks));
  return CallForEtag(std::move(request), context, condition);
}

Result<BlockList> AzureBlobClient::GetBlockList(const std::string& container,
                                                const std::string& blob, BlockListType type) {
  std::string context = "block list of " + container + "/" + blob;
  STAMPFS_RETURN_IF_ERROR(CheckBlobName(blob).WithContext(context));
  Query query = {{"comp", "blocklist"}, {"blocklisttype", BlockListTypeName(type)}};
  auto response = Call(NewRequest("GET", BlobUrl(container, blob, query)), context);
  if (!response.ok()) return response.status();
  auto list = ParseBlockListXml(response->body);
  if (!list.ok()) return list.status().WithContext(context);
  list->etag = QuoteEtag(HeaderOf(*response, "etag"));
  return list;
}

Result<std::string> AzureBlobClient::Copy(const std::string& container, const std::string& source,
                                          const std::string& destination,
                                          const Condition& condition,
                                          const std::string& source_if_match) {
  std::string context = "copy " + container + "/" + source + " to " + destination;
  STAMPFS_RETURN_IF_ERROR(CheckBlobName(source).WithContext(context));
  STAMPFS_RETURN_IF_ERROR(CheckBlobName(destination).WithContext(context));
  HttpRequest request = NewRequest("PUT", BlobUrl(container, destination));
  std::string source_url = BlobUrl(container, source);
  // A SAS-authorized copy must authorize the source too; the header is never logged.
  if (account_.HasSas()) source_url += "?" + account_.sas_token;
  request.SetHeader("x-ms-copy-source", source_url);
  if (!source_if_match.empty()) request.SetHeader("x-ms-source-if-match", source_if_match);
  STAMPFS_RETURN_IF_ERROR(AddCondition(request, condition));
  auto response = Call(std::move(request), context, condition);
  if (!response.ok()) return response.status();
  std::string copy_status = HeaderOf(*response, "x-ms-copy-status");
  if (copy_status == "success") {
    std::string etag = QuoteEtag(HeaderOf(*response, "etag"));
    if (!etag.empty()) return etag;
  } else if (copy_status != "pending" && !copy_status.empty()) {
    return Status(Code::kInternal, context + ": copy status " + copy_status);
  }
  return WaitForCopy(container, destination, HeaderOf(*response, "x-ms-copy-id"), context);
}

// Polls the destination until the copy we started (x-ms-copy-id) finishes.
Result<std::string> AzureBlobClient::WaitForCopy(const std::string& container,
                                                 const std::string& destination,
                                                 const std::string& copy_id,
                                                 const std::string& context) {
  const auto deadline = std::chrono::steady_clock::now() + kCopyDeadline;
  std::chrono::milliseconds delay{0};
  while (true) {
    if (!SleepUnlessCancelled(delay)) return Cancelled(context + ": waiting for the copy");
    delay = std::clamp(delay * 2, kCopyPollInitial, kCopyPollMax);
    auto response = Call(NewRequest("HEAD", BlobUrl(container, destination)), context);
    if (!response.ok()) return response.status();
    std::string id = HeaderOf(*response, "x-ms-copy-id");
    if (!copy_id.empty() && id != copy_id) {
      return Status(Code::kConflict, context + ": another copy replaced the destination");
    }
    std::string copy_status = HeaderOf(*response, "x-ms-copy-status");
    if (copy_status == "success" || copy_status.empty()) {
      return QuoteEtag(HeaderOf(*response, "etag"));
    }
    if (copy_status != "pending") {
      return Status(Code::kInternal, context + ": copy " + copy_status + ": " +
                                         HeaderOf(*response, "x-ms-copy-status-description"));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      AbortCopy(container, destination, copy_id);
      return Status(Code::kTimeout, context + ": copy still pending after the deadline");
    }
  }
}

// Best effort: a copy left pending past our deadline should not land later.
void AzureBlobClient::AbortCopy(const std::string& container, const std::string& destination,
                                const std::string& copy_id) {
  if (copy_id.empty()) return;
  HttpRequest request =
      NewRequest("PUT", BlobUrl(container, destination, {{"comp", "copy"}, {"copyid", copy_id}}));
  request.SetHeader("x-ms-copy-action", "abort");
  Call(std::move(request), "abort copy").status().PermitUnchecked();
}

Status AzureBlobClient::Delete(const std::string& container, const std::string& blob,
                               const Condition& condition) {
  STAMPFS_RETURN_IF_ERROR(CheckBlobName(blob));
  HttpRequest request = NewRequest("DELETE", BlobUrl(container, blob));
  STAMPFS_RETURN_IF_ERROR(AddCondition(request, condition));
  return Call(std::move(request), "delete " + container + "/" + blob, condition).status();
}

Result<std::string> AzureBlobClient::SetMetadata(const std::string& container,
                                                 const std::string& blob,
                                                 const BlobMetadata& metadata,
                                                 const Condition& condition) {
  std::string context = "set metadata of " + container + "/" + blob;
  STAMPFS_RETURN_IF_ERROR(CheckBlobName(blob).WithContext(context));
  STAMPFS_RETURN_IF_ERROR(ValidateBlobMetadata(metadata).WithContext(context));
  HttpRequest request = NewRequest("PUT", BlobUrl(container, blob, {{"comp", "metadata"}}));
  AddMetadata(request, metadata);
  STAMPFS_RETURN_IF_ERROR(AddCondition(request, condition));
  return CallForEtag(std::move(request), context, condition);
}

}  // namespace

std::unique_ptr<BlobStore> MakeAzureBlobClient(const StorageAccount& account,
                                               ClientOptions options) {
  return std::make_unique<AzureBlobClient>(account, std::move(options));
}

}  // namespace stampfs
