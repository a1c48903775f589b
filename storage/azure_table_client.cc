// AzureTableClient: TableStore over the Table REST API with typed JSON
// (AZURE-PROTOCOL.md §4-§6). Signing and retries come from auth.h / http.h.
#include <algorithm>
#include <cctype>

#include "storage/auth.h"
#include "storage/azure_clients.h"
#include "storage/table_batch.h"
#include "storage/table_json.h"

namespace stampfs {
namespace {

constexpr char kAccept[] = "application/json;odata=minimalmetadata";
constexpr char kDataServiceVersion[] = "3.0;NetFx";
constexpr char kJson[] = "application/json";

// Table names: ^[A-Za-z][A-Za-z0-9]{2,62}$. Checked so a name never reshapes a URL.
Status ValidateTableName(const std::string& table) {
  bool ok =
      table.size() >= 3 && table.size() <= 63 && std::isalpha(static_cast<unsigned char>(table[0]));
  for (char c : table) ok = ok && std::isalnum(static_cast<unsigned char>(c));
  if (ok) return Status::Ok();
  return Status(Code::kInvalidArgument, "invalid table name \"" + table +
                                            "\" (3-63 letters and digits, starting with a letter)");
}

// Response headers are matched case-insensitively (Azure and Azurite differ).
std::string FindHeader(const HttpResponse& response, const std::string& lowercase_name) {
  for (const auto& [name, value] : response.headers) {
    if (name.size() != lowercase_name.size()) continue;
    bool same = true;
    for (size_t i = 0; same && i < name.size(); ++i) {
      same = std::tolower(static_cast<unsigned char>(name[i])) == lowercase_name[i];
    }
    if (same) return value;
  }
  return {};
}

bool Is2xx(const HttpResponse& r) { return r.status >= 200 && r.status <= 299; }

// ETag from the header, else from the body's odata.etag (201 with content).
std::string EtagOf(const HttpResponse& response) {
  std::string etag = FindHeader(response, "etag");
  if (etag.empty() && !response.body.empty()) {
    auto entity = ParseEntityJson(response.body);
    if (entity.ok()) etag = entity->etag;
  }
  return etag;
}

std::string Describe(const std::string& table, const std::string& pk, const std::string& rk) {
  return table + "(" + pk + "," + rk + ")";
}

class AzureTableClient : public TableStore {
 public:
  AzureTableClient(const StorageAccount& account, ClientOptions options)
      : endpoint_(account.table_endpoint),
        http_(Transport(options, account), options.retry, {}, {}, MakeBreaker(options.breaker)),
        sign_(MakeSigner(account, Service::kTable, options.now ? options.now : HttpDateNow)),
        table_sas_(!account.HasKey() && !account.table_sas_token.empty()) {}

  Status CreateTable(const std::string& table) override;
  Status DeleteTable(const std::string& table) override;
  Result<Entity> Get(const std::string& table, const std::string& partition_key,
                     const std::string& row_key) override;
  Result<std::string> Insert(const std::string& table, const Entity& entity) override;
  Result<std::string> Update(const std::string& table, const Entity& entity, UpdateMode mode,
                             const Condition& condition) override;
  Status Delete(const std::string& table, const std::string& partition_key,
                const std::string& row_key, const Condition& condition) override;
  Result<stampfs::QueryPage> QueryPage(const std::string& table, const QueryOptions& options,
                                       const std::string& next_partition_key,
                                       const std::string& next_row_key) override;
  Result<BatchResult> ExecuteBatch(const std::string& table,
                                   const std::vector<TableOperation>& operations,
                                   BatchError* error) override;

 private:
  static std::shared_ptr<HttpTransport> Transport(ClientOptions& options,
                                                  const StorageAccount& account) {
    if (!options.transport) options.transport = MakeCurlTransport({account.ca_file});
    return options.transport;
  }

  // A request to endpoint + "/" + path with the headers every Table call carries.
  HttpRequest NewRequest(const std::string& method, const std::string& path) const {
    HttpRequest request;
    request.method = method;
    request.url = endpoint_ + "/" + path;
    request.SetHeader("x-ms-version", kTableApiVersion);
    request.SetHeader("Accept", kAccept);
    request.SetHeader("DataServiceVersion", kDataServiceVersion);
    request.SetHeader("MaxDataServiceVersion", kDataServiceVersion);
    return request;
  }
  static void SetJsonBody(HttpRequest* request, std::string json) {
    request->SetHeader("Content-Type", kJson);
    request->body = HttpBody::FromString(std::move(json));
  }
  Result<HttpResponse> Send(HttpRequest request) {
    return http_.Execute(std::move(request), sign_);
  }

  std::string endpoint_;
  RetryingHttpClient http_;
  RequestSigner sign_;
  bool table_sas_;  // a table's own SAS: no table-level operations
};

Status AzureTableClient::CreateTable(const std::string& table) {
  STAMPFS_RETURN_IF_ERROR(ValidateTableName(table));
  if (table_sas_) {
    // A table SAS addresses one existing table and cannot create it: it
    // "exists" when a one-row query answers.
    QueryOptions one;
    one.top = 1;
    auto page = QueryPage(table, one, "", "");
    STAMPFS_RETURN_IF_ERROR(page);
    return Status(Code::kAlreadyExists, "table " + table + " exists (table SAS)");
  }
  HttpRequest request = NewRequest("POST", "Tables");
  request.SetHeader("Prefer", "return-no-content");
  SetJsonBody(&request, "{\"TableName\":\"" + table + "\"}");
  auto response = Send(std::move(request));
  if (!response.ok()) return response.status().WithContext("create table " + table);
  if (Is2xx(*response)) return Status::Ok();
  Status st = StatusFromResponse(*response, "create table " + table);
  if (response->status == 409 && st.service_code() != "TableBeingDeleted") {
    return Status(Code::kAlreadyExists, st.message(), st.http_status(), st.service_code());
  }
  return st;
}

Status AzureTableClient::DeleteTable(const std::string& table) {
  STAMPFS_RETURN_IF_ERROR(ValidateTableName(table));
  auto response = Send(NewRequest("DELETE", "Tables('" + table + "')"));
  if (!response.ok()) return response.status().WithContext("delete table " + table);
  if (Is2xx(*response)) return Status::Ok();
  return StatusFromResponse(*response, "delete table " + table);
}

Result<Entity> AzureTableClient::Get(const std::string& table, const std::string& partition_key,
                                     const std::string& row_key) {
  STAMPFS_RETURN_IF_ERROR(ValidateTableName(table));
  const std::string what = "get entity " + Describe(table, partition_key, row_key);
  auto response = Send(NewRequest("GET", EntityResource(table, partition_key, row_key)));
  if (!response.ok()) return response.status().WithContext(what);
  if (!Is2xx(*response)) return StatusFromResponse(*response, what);
  auto entity = ParseEntityJson(response->body);
  if (!entity.ok()) return entity.status().WithContext(what);
  const std::string etag = FindHeader(*response, "etag");
  if (!etag.empty()) entity->etag = etag;
  if (entity->partition_key.empty()) entity->partition_key = partition_key;
  if (entity->row_key.empty()) entity->row_key = row_key;
  return entity;
}

Result<std::string> AzureTableClient::Insert(const std::string& table, const Entity& entity) {
  STAMPFS_RETURN_IF_ERROR(ValidateTableName(table));
  const std::string what = "insert entity " + Describe(table, entity.partition_key, entity.row_key);
  STAMPFS_RETURN_IF_ERROR(ValidateEntity(entity).WithContext(what));
  auto json = EntityToJson(entity);
  if (!json.ok()) return json.status().WithContext(what);
  HttpRequest request = NewRequest("POST", table);
  request.SetHeader("Prefer", "return-no-content");
  SetJsonBody(&request, std::move(*json));
  auto response = Send(std::move(request));
  if (!response.ok()) return response.status().WithContext(what);
  if (!Is2xx(*response)) return StatusFromResponse(*response, what);
  return EtagOf(*response);
}

Result<std::string> AzureTableClient::Update(const std::string& table, const Entity& entity,
                                             UpdateMode mode, const Condition& condition) {
  // Create-only is an insert whatever the mode.
  if (condition.kind == Condition::Kind::kIfNoneMatchAny) return Insert(table, entity);
  STAMPFS_RETURN_IF_ERROR(ValidateTableName(table));
  const char* method = mode == UpdateMode::kReplace ? "PUT" : "MERGE";
  const std::string what = std::string(mode == UpdateMode::kReplace ? "replace" : "merge") +
                           " entity " + Describe(table, entity.partition_key, entity.row_key);
  STAMPFS_RETURN_IF_ERROR(ValidateEntity(entity).WithContext(what));
  auto json = EntityToJson(entity);
  if (!json.ok()) return json.status().WithContext(what);
  HttpRequest request =
      NewRequest(method, EntityResource(table, entity.partition_key, entity.row_key));
  // No If-Match: insert-or-replace / insert-or-merge.
  if (condition.kind == Condition::Kind::kIfMatch) request.SetHeader("If-Match", condition.etag);
  SetJsonBody(&request, std::move(*json));
  auto response = Send(std::move(request));
  if (!response.ok()) return response.status().WithContext(what);
  if (!Is2xx(*response)) return StatusFromResponse(*response, what);
  return EtagOf(*response);
}

Status AzureTableClient::Delete(const std::string& table, const std::string& partition_key,
                                const std::string& row_key, const Condition& condition) {
  STAMPFS_RETURN_IF_ERROR(ValidateTableName(table));
  const std::string what = "delete entity " + Describe(table, partition_key, row_key);
  if (condition.kind != Condition::Kind::kIfMatch) {
    return Status(Code::kInvalidArgument, what + ": needs If-Match (an ETag or \"*\")");
  }
  HttpRequest request = NewRequest("DELETE", EntityResource(table, partition_key, row_key));
  request.SetHeader("If-Match", condition.etag);
  auto response = Send(std::move(request));
  if (!response.ok()) return response.status().WithContext(what);
  if (Is2xx(*response)) return Status::Ok();
  return StatusFromResponse(*response, what);
}

Result<QueryPage> AzureTableClient::QueryPage(const std::string& table, const QueryOptions& options,
                                              const std::string& next_partition_key,
                                              const std::string& next_row_key) {
  STAMPFS_RETURN_IF_ERROR(ValidateTableName(table));
  const std::string what = "query table " + table;
  std::string path = table + "()?$top=" + std::to_string(std::clamp(options.top, 1, 1000));
  if (!options.filter.empty()) path += "&$filter=" + UrlEncode(options.filter);
  if (!options.select.empty()) {
    // Keys are always selected so that every entity read back names itself.
    std::string select = "PartitionKey,RowKey";
    for (const auto& name : options.select) {
      if (name != "PartitionKey" && name != "RowKey") select += "," + name;
    }
    path += "&$select=" + UrlEncode(select);
  }
  if (!next_partition_key.empty()) path += "&NextPartitionKey=" + UrlEncode(next_partition_key);
  if (!next_row_key.empty()) path += "&NextRowKey=" + UrlEncode(next_row_key);
  auto response = Send(NewRequest("GET", path));
  if (!response.ok()) return response.status().WithContext(what);
  if (!Is2xx(*response)) return StatusFromResponse(*response, what);
  auto entities = ParseEntityListJson(response->body);
  if (!entities.ok()) return entities.status().WithContext(what);
  stampfs::QueryPage page;
  page.entities = std::move(*entities);
  page.next_partition_key = FindHeader(*response, "x-ms-continuation-nextpartitionkey");
  page.next_row_key = FindHeader(*response, "x-ms-continuation-nextrowkey");
  return page;
}

Result<BatchResult> AzureTableClient::ExecuteBatch(const std::string& table,
                                                   const std::vector<TableOperation>& operations,
                                                   BatchError* error) {
  const auto fail = [error](Status status, int index) -> Result<BatchResult> {
    if (error) *error = BatchError{status, index};
    return status;
  };
  const std::string what = "batch on " + table;
  if (Status st = ValidateTableName(table); !st.ok()) return fail(st, -1);
  int index = -1;
  if (Status st = ValidateBatch(operations, &index); !st.ok()) {
    return fail(st.WithContext(what), index);
  }
  auto body = BuildBatchBody(endpoint_, table, operations, NewBoundaryId(), NewBoundaryId());
  if (!body.ok()) return fail(body.status().WithContext(what), -1);
  if (body->body.size() > kMaxBatchBytes) {
    return fail(
        Status(Code::kTooLarge, what + ": body of " + std::to_string(body->body.size()) +
                                    " bytes, over the limit of " + std::to_string(kMaxBatchBytes)),
        -1);
  }
  HttpRequest request = NewRequest("POST", "$batch");
  request.SetHeader("Content-Type", body->content_type);
  request.body = HttpBody::FromString(std::move(body->body));
  // Resent only when the service certainly did not run it: 429/503 (throttled
  // before execution) or a connection failure (kTransport). A timeout or a
  // 5xx after execution may have applied it, so it is returned as is and
  // ExecuteInBatches resends the halves: a transaction that did apply then
  // fails on replay (inserts 409, If-Match 412, deletes 404) instead of
  // applying twice. A kTransport after delivery is reported the same way.
  auto response = http_.Execute(std::move(request), sign_, Resend::kOnlyUnsent);
  if (!response.ok()) return fail(response.status().WithContext(what), -1);
  BatchError local;
  auto result = ParseBatchResponse(*response, operations.size(), &local);
  if (!result.ok()) return fail(local.status.WithContext(what), local.failed_index);
  return result;
}

}  // namespace

std::unique_ptr<TableStore> MakeAzureTableClient(const StorageAccount& account,
                                                 ClientOptions options) {
  return std::make_unique<AzureTableClient>(account, std::move(options));
}

}  // namespace stampfs
