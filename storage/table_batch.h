// Entity group transactions ($batch, AZURE-PROTOCOL.md §6): the client-side
// checks, the multipart/mixed request body, and the multipart response.
#pragma once

#include <string>
#include <vector>

#include "storage/http.h"
#include "storage/status.h"
#include "storage/table_store.h"

namespace stampfs {

// "table(PartitionKey='pk',RowKey='rk')": each key with "'" doubled, then
// percent-encoded except for the quotes (§4.8). `before_row_key` goes between
// the two keys (only an emulator's batch parts use it: table_batch.cc).
std::string EntityResource(const std::string& table, const std::string& partition_key,
                           const std::string& row_key, const std::string& before_row_key = "");

// The rules Azure enforces and Azurite partly does not, checked before
// sending: 1..kMaxBatchOperations operations, one PartitionKey, each RowKey
// once, every entity valid, If-Match on every delete. Sets *failed_index to
// the offending operation, or -1 when the batch as a whole is at fault.
Status ValidateBatch(const std::vector<TableOperation>& operations, int* failed_index);

struct BatchBody {
  std::string content_type;  // multipart/mixed; boundary=batch_<id>
  std::string body;
};

// The multipart body: CRLF line ends, one changeset, absolute sub-request URLs
// (`endpoint` + "/" + resource), single-line JSON, explicit If-Match on
// DELETE, Content-ID n (1-based) on every part; for an emulator (path-style)
// endpoint, RowKeys Azurite would misread get a line break before them. `batch_id`/`changeset_id`
// complete the boundaries batch_<id> and changeset_<id>.
Result<BatchBody> BuildBatchBody(const std::string& endpoint, const std::string& table,
                                 const std::vector<TableOperation>& operations,
                                 const std::string& batch_id, const std::string& changeset_id);

// Bytes one operation adds to a batch body, for an endpoint plus table name
// of up to 256 bytes: an upper bound for the splitter (ExecuteInBatches).
size_t EstimateOperationBytes(const TableOperation& operation);
// Fixed bytes of a batch body around its operations (boundaries, headers).
inline constexpr size_t kBatchEnvelopeBytes = 512;

// A random UUID (lower-case hex, 8-4-4-4-12) for boundaries.
std::string NewBoundaryId();

// Reads the $batch response: 202 with every part 2xx gives the ETags in
// operation order; a failing part gives its Status and index; any other outer
// status gives its Status with index -1; an unreadable body gives kCorruption.
Result<BatchResult> ParseBatchResponse(const HttpResponse& response, size_t operation_count,
                                       BatchError* error);

}  // namespace stampfs
