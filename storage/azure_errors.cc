// Non-2xx responses of the Blob and Table services as Status values.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "storage/azure_clients.h"
#include "storage/blob_xml.h"

namespace stampfs {
namespace {

constexpr size_t kMaxMessageBytes = 512;

std::string HeaderValue(const HttpResponse& response, const std::string& lowercase_name) {
  auto it = response.headers.find(lowercase_name);
  return it == response.headers.end() ? std::string() : it->second;
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\r' ||
                           text.front() == '\n')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r' ||
                           text.back() == '\n')) {
    text.remove_suffix(1);
  }
  return text;
}

// Service messages end with "RequestId:..." and "Time:..." lines, which only
// make log lines unique; the remaining lines are joined with spaces.
std::string CleanMessage(std::string_view message) {
  std::string out;
  while (!message.empty()) {
    size_t eol = message.find('\n');
    std::string_view line = Trim(message.substr(0, eol));
    message = eol == std::string_view::npos ? std::string_view() : message.substr(eol + 1);
    if (line.empty() || line.starts_with("RequestId:") || line.starts_with("Time:")) continue;
    if (!out.empty()) out += ' ';
    out += line;
  }
  if (out.size() > kMaxMessageBytes) out = out.substr(0, kMaxMessageBytes) + "...";
  return out;
}

std::string JsonString(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// {"odata.error":{"code":"...","message":{"lang":"en-US","value":"..."}}}
// (Table service), tolerating "error" and a plain-string message.
std::optional<ServiceError> ParseErrorJson(std::string_view body) {
  nlohmann::json json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) return std::nullopt;
  for (const char* key : {"odata.error", "error"}) {
    auto it = json.find(key);
    if (it == json.end() || !it->is_object()) continue;
    ServiceError error{JsonString(*it, "code"), JsonString(*it, "message")};
    auto message = it->find("message");
    if (message != it->end() && message->is_object()) error.message = JsonString(*message, "value");
    return error;
  }
  return std::nullopt;
}

std::optional<ServiceError> ParseErrorBody(std::string_view body) {
  body = Trim(body);
  if (body.empty()) return std::nullopt;
  if (body.front() == '{') return ParseErrorJson(body);
  return ParseErrorXml(body);
}

bool IsPermissionMismatch(const std::string& service_code) {
  // AuthorizationPermissionMismatch, ...ResourceTypeMismatch, ...ServiceMismatch,
  // ...SourceIPMismatch, ...ProtocolMismatch: valid credentials, not enough rights.
  return service_code.starts_with("Authorization") && service_code.ends_with("Mismatch");
}

bool IsTooLargeCode(const std::string& service_code) {
  return service_code == "EntityTooLarge" || service_code == "PropertyValueTooLarge" ||
         service_code == "RequestBodyTooLarge" || service_code == "MetadataTooLarge";
}

Code CodeFor(int http_status, const std::string& service_code) {
  switch (http_status) {
    case 404:
      return Code::kNotFound;
    case 409:
      return service_code.ends_with("AlreadyExists") ? Code::kAlreadyExists : Code::kConflict;
    case 304:
    case 412:
      return Code::kPreconditionFailed;
    case 401:
    case 403:
      return Code::kAuth;
    case 413:
      return Code::kTooLarge;
    case 408:
      return Code::kTimeout;
    case 429:
    case 503:
      return Code::kThrottled;
    default:
      break;
  }
  if (IsTooLargeCode(service_code)) return Code::kTooLarge;
  if (http_status >= 400 && http_status < 500) return Code::kInvalidArgument;
  return Code::kInternal;
}

// What the user should know beyond the service's own words.
std::string Hint(Code code, const std::string& service_code) {
  if (code != Code::kAuth) return {};
  if (IsPermissionMismatch(service_code)) {
    return "permission denied: the credentials (for example a read-only SAS, or an Entra ID "
           "identity without a Storage Blob/Table Data role) do not allow this operation";
  }
  return "authentication failed: check the account name and key, the SAS token, or the Entra "
         "ID token";
}

}  // namespace

Status StatusFromResponse(const HttpResponse& response, const std::string& context) {
  std::string service_code = HeaderValue(response, "x-ms-error-code");
  std::optional<ServiceError> body = ParseErrorBody(response.body);
  if (service_code.empty() && body) service_code = body->code;
  Code code = CodeFor(response.status, service_code);

  std::string message = context;
  auto append = [&message](const std::string& part) {
    if (part.empty()) return;
    if (!message.empty()) message += ": ";
    message += part;
  };
  append(Hint(code, service_code));
  std::string detail = body ? CleanMessage(body->message) : std::string();
  append(detail.empty() ? "HTTP " + std::to_string(response.status) : detail);
  return Status(code, message, response.status, service_code);
}

}  // namespace stampfs
