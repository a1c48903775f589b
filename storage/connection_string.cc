#include "storage/connection_string.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <map>
#include <sstream>
#include <tuple>

#include "storage/auth.h"
#include "storage/token_credential.h"

namespace stampfs {
namespace {

constexpr const char* kEmulatorConnectionString =
    "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
    "AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/"
    "K1SZFPTOtr/KBHBeksoGMGw==;"
    "BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
    "QueueEndpoint=http://127.0.0.1:10001/devstoreaccount1;"
    "TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;";

// Lowercased key -> spelling used in messages.
const std::map<std::string, std::string>& KnownKeys() {
  static const auto* keys = new std::map<std::string, std::string>{
      {"usedevelopmentstorage", "UseDevelopmentStorage"},
      {"developmentstorageproxyuri", "DevelopmentStorageProxyUri"},
      {"defaultendpointsprotocol", "DefaultEndpointsProtocol"},
      {"accountname", "AccountName"},
      {"accountkey", "AccountKey"},
      {"blobendpoint", "BlobEndpoint"},
      {"tableendpoint", "TableEndpoint"},
      {"queueendpoint", "QueueEndpoint"},
      {"fileendpoint", "FileEndpoint"},
      {"endpointsuffix", "EndpointSuffix"},
      {"sharedaccesssignature", "SharedAccessSignature"},
  };
  return *keys;
}

using Fields = std::map<std::string, std::string>;  // lowercased key -> value

Status Bad(const std::string& message) {
  return Status(Code::kInvalidArgument, "connection string: " + message);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string TrimTrailingSlashes(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

// A misplaced secret can end up left of '=': echo only what looks like a name.
std::string UnknownKeyMessage(const std::string& key) {
  bool plain = key.size() <= 40;
  for (char c : key) plain = plain && std::isalpha(static_cast<unsigned char>(c));
  return plain ? "unknown key '" + key + "'" : "unknown key (not shown: it is not a key name)";
}

// Splits Key=Value;... on ';' and then on each pair's first '='.
Result<Fields> SplitPairs(const std::string& text) {
  Fields fields;
  std::stringstream in(text);
  std::string segment;
  for (int index = 1; std::getline(in, segment, ';'); ++index) {
    segment = Trim(segment);
    if (segment.empty()) continue;
    size_t eq = segment.find('=');
    if (eq == std::string::npos) {
      return Bad("element " + std::to_string(index) + " has no '=' (expected Key=Value)");
    }
    std::string key = Trim(segment.substr(0, eq));
    auto known = KnownKeys().find(Lower(key));
    if (known == KnownKeys().end()) return Bad(UnknownKeyMessage(key));
    if (!fields.emplace(known->first, Trim(segment.substr(eq + 1))).second) {
      return Bad("duplicate key '" + known->second + "'");
    }
  }
  return fields;
}

std::string Field(const Fields& fields, const char* key) {
  auto it = fields.find(key);
  return it == fields.end() ? std::string() : it->second;
}

// Validates an explicit endpoint and drops trailing slashes.
Result<std::string> CheckEndpoint(const std::string& value, const char* field) {
  std::string lower = Lower(value);
  size_t host = lower.rfind("https://", 0) == 0 ? 8 : lower.rfind("http://", 0) == 0 ? 7 : 0;
  if (host == 0 || value.size() == host || value[host] == '/') {
    return Bad(std::string(field) + " is not an http:// or https:// URL");
  }
  if (value.find_first_of("?#") != std::string::npos) {
    return Bad(std::string(field) + " must not carry a query; put a SAS in SharedAccessSignature");
  }
  return TrimTrailingSlashes(value);
}

bool IsPathStyleHost(const std::string& host) {
  if (host.find('.') == std::string::npos || host == "host.docker.internal") return true;
  for (char c : host) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') return false;
  }
  return true;
}

// scheme://host[:port]/...: the host, or "" (an IPv6 literal counts as none).
std::string HostOf(const std::string& endpoint) {
  size_t start = endpoint.find("://");
  if (start == std::string::npos) return {};
  start += 3;
  std::string authority = endpoint.substr(start, endpoint.find('/', start) - start);
  std::string host = authority.substr(0, authority.find(':'));
  return !host.empty() && host[0] == '[' ? std::string() : host;
}

// The account an endpoint addresses: the first path segment for emulator-style
// hosts (IP, no dot), else the first DNS label. Empty when there is none.
std::string AccountFromEndpoint(const std::string& endpoint) {
  const std::string host = HostOf(endpoint);
  if (host.empty()) return {};
  if (!IsPathStyleHost(host)) return host.substr(0, host.find('.'));
  const size_t slash = endpoint.find('/', endpoint.find("://") + 3);
  if (slash == std::string::npos) return {};
  std::string path = endpoint.substr(slash + 1);
  return path.substr(0, path.find('/'));
}

Status FillCredentials(const Fields& fields, StorageAccount* account) {
  if (fields.count("accountkey")) {
    account->account_key = Field(fields, "accountkey");
    if (account->account_key.empty()) return Bad("AccountKey is empty");
    auto decoded = Base64Decode(account->account_key);
    if (!decoded.ok() || decoded->empty()) return Bad("AccountKey is not valid base64");
    return Status::Ok();  // a key wins over a SAS given alongside it
  }
  if (fields.count("sharedaccesssignature")) {
    std::string sas = Field(fields, "sharedaccesssignature");
    if (!sas.empty() && sas[0] == '?') sas.erase(0, 1);
    if (sas.empty()) return Bad("SharedAccessSignature is empty");
    account->sas_token = sas;
    return Status::Ok();
  }
  return Status::Ok();  // neither: Microsoft Entra ID sign-in (fs/daemon/mount_config.cc)
}

Status FillEndpoints(const Fields& fields, StorageAccount* account) {
  std::string protocol = Lower(Field(fields, "defaultendpointsprotocol"));
  if (protocol.empty()) protocol = "https";
  if (protocol != "http" && protocol != "https") {
    return Bad("DefaultEndpointsProtocol must be http or https");
  }
  std::string suffix = fields.count("endpointsuffix") ? Field(fields, "endpointsuffix")
                                                      : std::string("core.windows.net");
  while (!suffix.empty() && suffix.front() == '.') suffix.erase(0, 1);
  suffix = TrimTrailingSlashes(suffix);
  if (suffix.empty()) return Bad("EndpointSuffix is empty");

  const std::tuple<const char*, const char*, std::string*> services[] = {
      {"blobendpoint", "BlobEndpoint", &account->blob_endpoint},
      {"tableendpoint", "TableEndpoint", &account->table_endpoint},
      {"queueendpoint", "QueueEndpoint", &account->queue_endpoint}};
  for (const auto& [key, field, out] : services) {
    if (fields.count(key)) {
      auto checked = CheckEndpoint(Field(fields, key), field);
      STAMPFS_RETURN_IF_ERROR(checked);
      *out = *checked;
    }
  }
  // A SAS string from the portal, or endpoints for Entra ID sign-in, may name
  // no account: take it from an endpoint.
  if (account->account_name.empty() && !account->HasKey()) {
    account->account_name = AccountFromEndpoint(
        !account->blob_endpoint.empty() ? account->blob_endpoint : account->table_endpoint);
  }
  if (account->account_name.empty()) return Bad("AccountName is missing");
  if (account->blob_endpoint.empty()) {
    account->blob_endpoint = protocol + "://" + account->account_name + ".blob." + suffix;
  }
  if (account->table_endpoint.empty()) {
    account->table_endpoint = protocol + "://" + account->account_name + ".table." + suffix;
  }
  if (account->queue_endpoint.empty()) {
    account->queue_endpoint = protocol + "://" + account->account_name + ".queue." + suffix;
  }
  return Status::Ok();
}

Result<StorageAccount> Build(const Fields& fields) {
  StorageAccount account;
  account.account_name = Field(fields, "accountname");
  if (fields.count("accountname") && account.account_name.empty()) {
    return Bad("AccountName is empty");
  }
  STAMPFS_RETURN_IF_ERROR(FillCredentials(fields, &account));
  STAMPFS_RETURN_IF_ERROR(FillEndpoints(fields, &account));
  return account;
}

// UseDevelopmentStorage=true: the emulator string, optionally behind a proxy host.
Result<StorageAccount> Development(const Fields& fields) {
  for (const auto& [key, value] : fields) {
    if (key != "usedevelopmentstorage" && key != "developmentstorageproxyuri") {
      return Bad("UseDevelopmentStorage cannot be combined with " + KnownKeys().at(key));
    }
  }
  auto emulator = SplitPairs(kEmulatorConnectionString);
  STAMPFS_RETURN_IF_ERROR(emulator);
  auto account = Build(*emulator);
  STAMPFS_RETURN_IF_ERROR(account);
  if (fields.count("developmentstorageproxyuri")) {
    auto proxy =
        CheckEndpoint(Field(fields, "developmentstorageproxyuri"), "DevelopmentStorageProxyUri");
    STAMPFS_RETURN_IF_ERROR(proxy);
    const std::string local = "http://127.0.0.1";
    for (std::string* e :
         {&account->blob_endpoint, &account->table_endpoint, &account->queue_endpoint}) {
      e->replace(0, local.size(), *proxy);
    }
  }
  return account;
}

}  // namespace

namespace {

bool IsLoopbackHttp(const std::string& endpoint, bool* is_http) {
  std::string lower = Lower(endpoint);
  *is_http = lower.rfind("http://", 0) == 0;
  if (!*is_http) return false;
  std::string authority = lower.substr(7, lower.find('/', 7) - 7);
  std::string host;
  if (!authority.empty() && authority[0] == '[') {
    host = authority.substr(0, authority.find(']') + 1);
  } else {
    host = authority.substr(0, authority.find(':'));
  }
  return host == "localhost" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

}  // namespace

Status CheckEndpointSecure(const std::string& endpoint, bool allow_http) {
  bool is_http = false;
  if (IsLoopbackHttp(endpoint, &is_http) || !is_http || allow_http) return Status::Ok();
  return Status(Code::kInvalidArgument,
                "endpoint " + endpoint +
                    " is plain http to a host that is not loopback: requests and their "
                    "credentials would cross the network unencrypted; use https, or "
                    "allow_http if you really mean it");
}

Status CheckEndpointsSecure(const StorageAccount& account, bool allow_http) {
  STAMPFS_RETURN_IF_ERROR(CheckEndpointSecure(account.blob_endpoint, allow_http));
  return CheckEndpointSecure(account.table_endpoint, allow_http);
}

std::string StorageAccount::Describe() const {
  const std::string auth = HasKey()     ? "SharedKey"
                           : HasSas()   ? "SAS"
                           : HasToken() ? "Entra ID, " + token_credential->Describe()
                                        : "no credentials";
  return account_name + " (blob " + blob_endpoint + ", table " + table_endpoint + ", " + auth + ")";
}

Result<StorageAccount> ParseConnectionString(const std::string& text) {
  auto fields = SplitPairs(text);
  STAMPFS_RETURN_IF_ERROR(fields);
  if (fields->empty()) return Bad("empty");
  if (fields->count("usedevelopmentstorage")) {
    std::string use = Lower(Field(*fields, "usedevelopmentstorage"));
    if (use == "true") return Development(*fields);
    if (use != "false") return Bad("UseDevelopmentStorage must be true or false");
    fields->erase("usedevelopmentstorage");
  }
  if (fields->count("developmentstorageproxyuri")) {
    return Bad("DevelopmentStorageProxyUri needs UseDevelopmentStorage=true");
  }
  return Build(*fields);
}

Result<std::string> ReadConnectionStringFile(const std::string& path) {
  auto failure = [&path](int err) {
    return Status(Code::kInvalidArgument,
                  "cannot read connection string file " + path + ": " + std::strerror(err));
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return failure(errno);
  std::string contents;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return failure(err);
    }
    if (n == 0) break;
    contents.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  std::string text = Trim(contents);
  if (text.empty()) {
    return Status(Code::kInvalidArgument, "connection string file " + path + " is empty");
  }
  return text;
}

bool IsPathStyleEndpoint(const std::string& endpoint) {
  const std::string host = HostOf(endpoint);
  return !host.empty() && IsPathStyleHost(host);
}

}  // namespace stampfs
