#include "storage/table_batch.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "storage/azure_clients.h"
#include "storage/connection_string.h"
#include "storage/table_json.h"

namespace stampfs {
namespace {

constexpr char kCrlf[] = "\r\n";

Status Corrupt(const std::string& what) {
  return Status(Code::kCorruption, "table batch response: " + what);
}

const char* MethodFor(const TableOperation& op) {
  switch (op.kind) {
    case TableOperation::Kind::kInsert:
      return "POST";
    case TableOperation::Kind::kReplace:
      return "PUT";
    case TableOperation::Kind::kMerge:
      return "MERGE";
    case TableOperation::Kind::kDelete:
      return "DELETE";
  }
  return "POST";
}

// Replace/Merge with IfNoneMatchAny (create-only) is sent as an insert.
bool SendsAsInsert(const TableOperation& op) {
  return op.kind == TableOperation::Kind::kInsert ||
         (op.kind != TableOperation::Kind::kDelete &&
          op.condition.kind == Condition::Kind::kIfNoneMatchAny);
}

// Azurite (src/table/batch/TableBatchOrchestrator.ts) reads a part's
// PartitionKey from its percent-decoded URL with a greedy match that ends at
// the last "'," of the line: a RowKey whose text puts "'," after the opening
// quote (one starting with ',', or with a "'" before a ',') made it read a
// wrong PartitionKey and answer 404 to MERGE, PUT and DELETE. For those keys,
// an emulator's parts break the line before RowKey ("%0A", decoded before
// the match, which cannot cross it); Azure always gets the standard form.
bool AzuriteMisreadsRowKey(const std::string& row_key) {
  return (!row_key.empty() && row_key[0] == ',') || row_key.find("',") != std::string::npos;
}

// One application/http part of the changeset, ending with CRLF.
Result<std::string> BuildPart(const std::string& endpoint, bool emulator, const std::string& table,
                              const TableOperation& op, size_t content_id) {
  const bool insert = SendsAsInsert(op);
  const std::string& rk = op.entity.row_key;
  const std::string url =
      endpoint + "/" +
      (insert ? table
              : EntityResource(table, op.entity.partition_key, rk,
                               emulator && AzuriteMisreadsRowKey(rk) ? "%0A" : ""));
  std::string part = "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n";
  part += std::string(insert ? "POST" : MethodFor(op)) + " " + url + " HTTP/1.1" + kCrlf;
  part += "Content-ID: " + std::to_string(content_id) + kCrlf;
  const bool has_body = op.kind != TableOperation::Kind::kDelete;
  if (has_body) part += "Content-Type: application/json\r\n";
  part += "Accept: application/json;odata=minimalmetadata\r\n";
  if (insert) part += "Prefer: return-no-content\r\n";
  part += "DataServiceVersion: 3.0;\r\n";
  if (!insert && op.condition.kind == Condition::Kind::kIfMatch) {
    part += "If-Match: " + op.condition.etag + kCrlf;
  }
  part += kCrlf;
  if (has_body) {
    auto json = EntityToJson(op.entity, /*include_keys=*/true);
    if (!json.ok()) return json.status();
    part += *json + kCrlf;  // one line: Azurite answers 500 to multi-line bodies
  }
  return part;
}

std::string RemoveCarriageReturns(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') continue;
    out.push_back(text[i]);
  }
  return out;
}

// The value of the first "boundary=" at or after `from`, or "".
std::string FindBoundary(const std::string& text, size_t from = 0) {
  const size_t at = text.find("boundary=", from);
  if (at == std::string::npos) return {};
  size_t begin = at + 9;
  if (begin < text.size() && text[begin] == '"') ++begin;
  size_t end = begin;
  while (end < text.size() && text[end] != '"' && text[end] != ';' && text[end] != '\n' &&
         text[end] != ' ' && text[end] != '\t') {
    ++end;
  }
  return text.substr(begin, end - begin);
}

// Splits LF-normalised multipart text into the parts between "--boundary" lines.
Status SplitParts(const std::string& text, const std::string& boundary,
                  std::vector<std::string>* parts) {
  const std::string delim = "--" + boundary;
  size_t pos = text.rfind(delim, 0) == 0 ? 0 : text.find("\n" + delim);
  if (pos == std::string::npos) return Corrupt("boundary " + boundary + " not found");
  if (pos != 0) ++pos;
  while (true) {
    const size_t after = pos + delim.size();
    if (text.compare(after, 2, "--") == 0) return Status::Ok();  // closing delimiter
    const size_t line_end = text.find('\n', after);
    if (line_end == std::string::npos) return Corrupt("truncated part");
    const size_t next = text.find("\n" + delim, line_end);
    if (next == std::string::npos) return Corrupt("unterminated part");
    parts->push_back(text.substr(line_end + 1, next - line_end));
    pos = next + 1;
  }
}

struct SubResponse {
  HttpResponse response;
  int content_id = 0;
};

// Lower-cased "name: value" lines from `pos` up to a blank line; returns the
// position after it.
size_t ReadHeaders(const std::string& part, size_t pos, HttpHeaders* headers) {
  while (pos < part.size()) {
    size_t eol = part.find('\n', pos);
    if (eol == std::string::npos) eol = part.size();
    const std::string line = part.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.empty()) break;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    size_t v = colon + 1;
    while (v < line.size() && line[v] == ' ') ++v;
    (*headers)[name] = line.substr(v);
  }
  return pos;
}

Result<SubResponse> ParsePart(const std::string& part) {
  HttpHeaders mime;
  const size_t http = ReadHeaders(part, 0, &mime);
  int status = 0;
  if (part.compare(http, 5, "HTTP/") != 0 ||
      std::sscanf(part.c_str() + http, "HTTP/%*s %d", &status) != 1 || status < 100 ||
      status > 599) {
    return Corrupt("part without an HTTP status line");
  }
  SubResponse sub;
  sub.response.status = status;
  const size_t body = ReadHeaders(part, part.find('\n', http) + 1, &sub.response.headers);
  if (body < part.size()) sub.response.body = part.substr(body);
  while (!sub.response.body.empty() && sub.response.body.back() == '\n') {
    sub.response.body.pop_back();
  }
  sub.content_id = std::atoi(sub.response.Header("content-id").c_str());
  return sub;
}

// The failing operation: the number before ':' in odata.error.message.value
// (0-based), else Content-ID - 1.
int FailedIndex(const SubResponse& sub, size_t operation_count) {
  int index = -1;
  const auto doc = nlohmann::json::parse(sub.response.body, nullptr, false);
  try {
    const std::string value = doc.at("odata.error").at("message").at("value").get<std::string>();
    const size_t colon = value.find(':');
    if (colon > 0 && colon != std::string::npos && colon < 4 &&
        value.find_first_not_of("0123456789") == colon) {
      index = std::stoi(value.substr(0, colon));
    }
  } catch (const nlohmann::json::exception&) {
  }
  if (index < 0 && sub.content_id > 0) index = sub.content_id - 1;
  if (index < 0 && operation_count == 1) index = 0;
  return index >= static_cast<int>(operation_count) ? -1 : index;
}

Result<BatchResult> Fail(Status status, int index, BatchError* error) {
  if (error) *error = BatchError{status, index};
  return status;
}

}  // namespace

std::string EntityResource(const std::string& table, const std::string& partition_key,
                           const std::string& row_key, const std::string& before_row_key) {
  // UrlEncode turns every ' into %27; the URL carries it literally, doubled.
  const auto encode = [](const std::string& key) {
    const std::string encoded = UrlEncode(key);
    std::string out;
    for (size_t i = 0; i < encoded.size(); ++i) {
      if (encoded.compare(i, 3, "%27") == 0) {
        out += "''";
        i += 2;
      } else {
        out.push_back(encoded[i]);
      }
    }
    return out;
  };
  return table + "(PartitionKey='" + encode(partition_key) + "'," + before_row_key + "RowKey='" +
         encode(row_key) + "')";
}

Status ValidateBatch(const std::vector<TableOperation>& operations, int* failed_index) {
  *failed_index = -1;
  if (operations.empty()) return Status(Code::kInvalidArgument, "empty table batch");
  if (operations.size() > kMaxBatchOperations) {
    return Status(Code::kTooLarge, "table batch of " + std::to_string(operations.size()) +
                                       " operations, over the limit of " +
                                       std::to_string(kMaxBatchOperations));
  }
  std::set<std::string> row_keys;
  for (size_t i = 0; i < operations.size(); ++i) {
    const TableOperation& op = operations[i];
    *failed_index = static_cast<int>(i);
    const std::string where = "batch operation " + std::to_string(i);
    if (op.entity.partition_key != operations[0].entity.partition_key) {
      return Status(Code::kInvalidArgument, where + ": PartitionKey differs from operation 0's");
    }
    if (!row_keys.insert(op.entity.row_key).second) {
      return Status(Code::kInvalidArgument, where + ": RowKey appears twice in one batch");
    }
    if (op.kind == TableOperation::Kind::kDelete) {
      if (op.condition.kind != Condition::Kind::kIfMatch) {
        return Status(Code::kInvalidArgument, where + ": delete needs If-Match (an ETag or \"*\")");
      }
      Entity keys{op.entity.partition_key, op.entity.row_key, {}, {}};
      STAMPFS_RETURN_IF_ERROR(ValidateEntity(keys).WithContext(where));
    } else {
      STAMPFS_RETURN_IF_ERROR(ValidateEntity(op.entity).WithContext(where));
    }
  }
  *failed_index = -1;
  return Status::Ok();
}

Result<BatchBody> BuildBatchBody(const std::string& endpoint, const std::string& table,
                                 const std::vector<TableOperation>& operations,
                                 const std::string& batch_id, const std::string& changeset_id) {
  const std::string batch = "batch_" + batch_id;
  const std::string changeset = "changeset_" + changeset_id;
  BatchBody out;
  out.content_type = "multipart/mixed; boundary=" + batch;
  std::string& body = out.body;
  body =
      "--" + batch + kCrlf + "Content-Type: multipart/mixed; boundary=" + changeset + kCrlf + kCrlf;
  const bool emulator = IsPathStyleEndpoint(endpoint);
  for (size_t i = 0; i < operations.size(); ++i) {
    auto part = BuildPart(endpoint, emulator, table, operations[i], i + 1);
    if (!part.ok()) return part.status().WithContext("batch operation " + std::to_string(i));
    body += "--" + changeset + kCrlf + *part;
  }
  body += "--" + changeset + "--" + kCrlf + "--" + batch + "--" + kCrlf;
  return out;
}

size_t EstimateOperationBytes(const TableOperation& operation) {
  static const std::string kEndpoint(192, 'e');
  static const std::string kTable(63, 't');
  auto part = BuildPart(kEndpoint, true, kTable, operation, kMaxBatchOperations);
  // "--changeset_<36>\r\n" precedes each part.
  if (part.ok()) return part->size() + 48;
  return EntitySizeBytes(operation.entity) * 2 + 1024;  // invalid: the store will refuse it
}

std::string NewBoundaryId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const uint64_t hi = rng();
  const uint64_t lo = rng();
  char buf[37];
  std::snprintf(buf, sizeof(buf), "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xFFFF),
                static_cast<unsigned>((hi & 0x0FFF) | 0x4000),
                static_cast<unsigned>(((lo >> 48) & 0x3FFF) | 0x8000),
                static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFULL));
  return buf;
}

Result<BatchResult> ParseBatchResponse(const HttpResponse& response, size_t operation_count,
                                       BatchError* error) {
  if (response.status != 202) {
    return Fail(StatusFromResponse(response, "table batch"), -1, error);
  }
  const std::string text = RemoveCarriageReturns(response.body);
  // The changeset boundary is the first "boundary=" inside the body; an
  // envelope-level answer may have parts directly under the batch boundary.
  std::string boundary = FindBoundary(text);
  if (boundary.empty()) boundary = FindBoundary(response.Header("content-type"));
  if (boundary.empty()) return Fail(Corrupt("no multipart boundary"), -1, error);
  std::vector<std::string> parts;
  Status split = SplitParts(text, boundary, &parts);
  if (!split.ok()) return Fail(split, -1, error);
  if (parts.empty()) return Fail(Corrupt("no parts"), -1, error);
  BatchResult result;
  for (const std::string& raw : parts) {
    auto sub = ParsePart(raw);
    if (!sub.ok()) return Fail(sub.status(), -1, error);
    if (sub->response.status < 200 || sub->response.status > 299) {
      const int index = FailedIndex(*sub, operation_count);
      const std::string context =
          index >= 0 ? "table batch operation " + std::to_string(index) : "table batch";
      return Fail(StatusFromResponse(sub->response, context), index, error);
    }
    result.etags.push_back(sub->response.Header("etag"));
  }
  if (result.etags.size() != operation_count) {
    return Fail(Corrupt(std::to_string(result.etags.size()) + " parts for " +
                        std::to_string(operation_count) + " operations"),
                -1, error);
  }
  return result;
}

}  // namespace stampfs
