#include "fs/daemon/mount_config.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "fs/base/log.h"
#include "storage/entra_credential.h"
#include "storage/sas.h"

namespace stampfs {
namespace {

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

Result<bool> ParseBool(const std::string& where, const std::string& value) {
  if (value == "true" || value == "yes" || value == "on" || value == "1") return true;
  if (value == "false" || value == "no" || value == "off" || value == "0") return false;
  return Status(Code::kInvalidArgument, where + ": expected true or false");
}

bool IsFlag(const std::string& key) {
  return key == "ro" || key == "read_only" || key == "allow_other" || key == "allow_http" ||
         key == "dir_markers" || key == "debug" || key == "nosuid" || key == "nodev" ||
         key == "noexec";
}

bool IsSecretKey(const std::string& key) {
  return key == "account_key" || key == "sas_token" || key == "connection_string";
}

Result<std::string> ReadSecretFile(const std::string& path, const std::string& what) {
  STAMPFS_RETURN_IF_ERROR(CheckSecretFileMode(path, what));
  std::ifstream in(path);
  if (!in) {
    return Status(Code::kInvalidArgument,
                  "cannot read " + what + " " + path + ": " + std::strerror(errno));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string value = Trim(buffer.str());
  if (value.empty()) return Status(Code::kInvalidArgument, what + " " + path + " is empty");
  return value;
}

// A connection string from the account fields (the parser validates them).
Result<std::string> ConnectionStringFromParts(const MountOptions& o) {
  std::string key = o.inline_account_key, sas = o.inline_sas_token;
  if (!o.account_key_file.empty()) {
    auto k = ReadSecretFile(o.account_key_file, "account key file");
    STAMPFS_RETURN_IF_ERROR(k);
    key = *k;
  }
  if (!o.sas_token_file.empty()) {
    auto s = ReadSecretFile(o.sas_token_file, "SAS token file");
    STAMPFS_RETURN_IF_ERROR(s);
    sas = *s;
  }
  if (!key.empty() && !sas.empty()) {
    return Status(Code::kInvalidArgument, "give an account key or a SAS token, not both");
  }
  if (o.account_name.empty() && (o.blob_endpoint.empty() || o.table_endpoint.empty())) {
    return Status(Code::kInvalidArgument,
                  "the account needs account_name (or both blob_endpoint and table_endpoint)");
  }
  // Neither key nor SAS: Microsoft Entra ID sign-in (SignIn below).
  std::string text;
  if (!o.account_name.empty()) text += "AccountName=" + o.account_name + ";";
  if (!key.empty()) text += "AccountKey=" + key + ";";
  if (!sas.empty()) text += "SharedAccessSignature=" + sas + ";";
  if (!o.blob_endpoint.empty()) text += "BlobEndpoint=" + o.blob_endpoint + ";";
  if (!o.table_endpoint.empty()) text += "TableEndpoint=" + o.table_endpoint + ";";
  if (!o.queue_endpoint.empty()) text += "QueueEndpoint=" + o.queue_endpoint + ";";
  if (!o.endpoint_suffix.empty()) text += "EndpointSuffix=" + o.endpoint_suffix + ";";
  return text;
}

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

// Options win over the environment DefaultAzureCredential reads.
Result<EntraOptions> EntraOptionsFor(const MountOptions& o, AuthMethod method) {
  EntraOptions e;
  e.method = method;
  e.tenant_id = !o.tenant_id.empty() ? o.tenant_id : Env("AZURE_TENANT_ID");
  e.client_id = !o.client_id.empty() ? o.client_id : Env("AZURE_CLIENT_ID");
  if (!o.client_secret_file.empty()) {
    auto secret = ReadSecretFile(o.client_secret_file, "client secret file");
    STAMPFS_RETURN_IF_ERROR(secret);
    e.client_secret = *secret;
  } else if (o.client_cert_file.empty()) {
    e.client_secret = Env("AZURE_CLIENT_SECRET");
  }
  e.client_cert_file =
      !o.client_cert_file.empty() ? o.client_cert_file : Env("AZURE_CLIENT_CERTIFICATE_PATH");
  if (!e.client_cert_file.empty() && e.client_secret.empty()) {
    STAMPFS_RETURN_IF_ERROR(CheckSecretFileMode(e.client_cert_file, "client certificate file"));
  }
  e.federated_token_file =
      !o.federated_token_file.empty() ? o.federated_token_file : Env("AZURE_FEDERATED_TOKEN_FILE");
  e.authority_host = !o.authority_host.empty()              ? o.authority_host
                     : !Env("AZURE_AUTHORITY_HOST").empty() ? Env("AZURE_AUTHORITY_HOST")
                                                            : std::string(kPublicAuthorityHost);
  e.msi_endpoint = o.msi_endpoint;
  e.identity_endpoint = Env("IDENTITY_ENDPOINT");
  e.identity_header = Env("IDENTITY_HEADER");
  if (!o.token_resource.empty()) e.resource = o.token_resource;
  e.ca_file = o.ca_file;
  e.allow_http = o.allow_http;
  e.refresh.margin = std::chrono::seconds(static_cast<int64_t>(o.token_refresh_margin));
  return e;
}

bool NamesAnAccount(const MountOptions& o) {
  return !o.account_name.empty() || !o.account_key_file.empty() || !o.sas_token_file.empty() ||
         !o.inline_account_key.empty() || !o.inline_sas_token.empty() || !o.blob_endpoint.empty() ||
         !o.table_endpoint.empty();
}

}  // namespace

Status CheckSecretFileMode(const std::string& path, const std::string& what) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return Status(Code::kInvalidArgument,
                  "cannot read " + what + " " + path + ": " + std::strerror(errno));
  }
  if ((st.st_mode & (S_IRGRP | S_IROTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Status(Code::kInvalidArgument,
                  what + " " + path + " holds a secret but is readable by group or others (mode " +
                      mode + "); refusing to start: chmod 600 " + path);
  }
  return Status::Ok();
}

Status ApplyConfigText(const std::string& text, const std::string& name, bool private_file,
                       MountOptions* o) {
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = Trim(line);
    if (line.empty() || line[0] == '#') continue;
    const std::string where = name + ":" + std::to_string(number);
    size_t eq = line.find('=');
    if (eq == std::string::npos) {
      return Status(Code::kInvalidArgument, where + ": expected key = value");
    }
    std::string key = Trim(line.substr(0, eq));
    std::string value = Trim(line.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    const std::string at = where + ": " + key;  // never the value: it may be a secret
    if (IsSecretKey(key)) {
      if (!private_file) {
        return Status(Code::kInvalidArgument,
                      "config file " + name + " holds a secret (" + key +
                          ") but is readable by group or others; refusing to start: chmod 600 " +
                          name);
      }
      (key == "account_key" ? o->inline_account_key
       : key == "sas_token" ? o->inline_sas_token
                            : o->inline_connection_string) = value;
    } else if (key == "container") {
      o->container = value;
    } else if (key == "mountpoint") {
      o->mountpoint = value;
    } else if (key == "config") {
      return Status(Code::kInvalidArgument, at + ": a config file cannot include another");
    } else if (key == "options") {
      Status s = ApplyOptionList(value, o);
      if (!s.ok()) return s.WithContext(where);
    } else if (IsFlag(key)) {
      auto on = ParseBool(at, value);
      STAMPFS_RETURN_IF_ERROR(on);
      ApplyFlag(key == "read_only" ? "ro" : key, *on, o);
    } else {
      if (value.find(',') != std::string::npos) {
        return Status(Code::kInvalidArgument, at + ": a value cannot contain ','");
      }
      Status s = ApplyOptionList(key + "=" + value, o);
      if (!s.ok()) return s.WithContext(where);
    }
  }
  return Status::Ok();
}

Status ApplyConfigFile(const std::string& path, MountOptions* o) {
  std::ifstream in(path);
  struct stat st;
  if (!in || stat(path.c_str(), &st) != 0) {
    return Status(Code::kInvalidArgument,
                  "cannot read config file " + path + ": " + std::strerror(errno));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  o->config_file = path;
  return ApplyConfigText(buffer.str(), path, (st.st_mode & (S_IRGRP | S_IROTH)) == 0, o);
}

Result<StorageAccount> LoadAccount(const MountOptions& o) {
  std::string text;
  if (!o.connection_string_file.empty()) {
    STAMPFS_RETURN_IF_ERROR(
        CheckSecretFileMode(o.connection_string_file, "connection string file"));
    auto t = ReadConnectionStringFile(o.connection_string_file);
    STAMPFS_RETURN_IF_ERROR(t);
    text = *t;
  } else if (!o.inline_connection_string.empty()) {
    text = o.inline_connection_string;
  } else if (NamesAnAccount(o)) {
    auto t = ConnectionStringFromParts(o);
    STAMPFS_RETURN_IF_ERROR(t);
    text = *t;
  } else if (const char* env = std::getenv("AZURE_STORAGE_CONNECTION_STRING"); env && *env) {
    text = env;
  } else {
    text = kDevelopmentConnectionString;
  }
  auto account = ParseConnectionString(text);
  STAMPFS_RETURN_IF_ERROR(account);
  if (!o.table_sas_token_file.empty()) {
    auto t = ReadSecretFile(o.table_sas_token_file, "table SAS token file");
    STAMPFS_RETURN_IF_ERROR(t);
    account->table_sas_token = (*t)[0] == '?' ? t->substr(1) : *t;
  }
  if (!account->HasKey() && ParseSas(account->sas_token).resource == "c" &&
      account->table_sas_token.empty()) {
    return Status(Code::kInvalidArgument,
                  "a container SAS (sr=c) gives no access to the Table service: add "
                  "table_sas_token_file=FILE with a SAS for the table " +
                      (o.table.empty() ? std::string("of the mount") : o.table) +
                      " (tn=TABLE, sp=raud; sp=r for a read-only mount)");
  }
  STAMPFS_RETURN_IF_ERROR(CheckEndpointsSecure(*account, o.allow_http));
  if (!o.ca_file.empty()) {
    std::ifstream ca(o.ca_file);
    if (!ca) {
      return Status(Code::kInvalidArgument,
                    "cannot read ca_file " + o.ca_file + ": " + std::strerror(errno));
    }
    account->ca_file = o.ca_file;
  }
  STAMPFS_RETURN_IF_ERROR(SignIn(o, &*account));
  return account;
}

// Checks the method against the credentials found, and signs in with Entra
// ID when that is the method: the first token is fetched now, so a mount
// that cannot sign in fails at once and says why.
Status SignIn(const MountOptions& o, StorageAccount* account) {
  auto method = ParseAuthMethod(o.auth);
  STAMPFS_RETURN_IF_ERROR(method);
  const bool has_secret = account->HasKey() || account->HasSas();
  if (*method == AuthMethod::kKey && !account->HasKey()) {
    return Status(Code::kInvalidArgument, "auth=key needs an account key (account_key_file)");
  }
  if (*method == AuthMethod::kSas && !account->HasSas()) {
    return Status(Code::kInvalidArgument, "auth=sas needs a SAS token (sas_token_file)");
  }
  if (IsEntraMethod(*method) && has_secret) {
    return Status(Code::kInvalidArgument,
                  std::string("auth=") + o.auth +
                      " signs in with Entra ID, but an account key or SAS is configured too "
                      "(connection string or files): give one or the other");
  }
  if (has_secret || *method == AuthMethod::kKey || *method == AuthMethod::kSas) {
    return Status::Ok();
  }
  auto options = EntraOptionsFor(o, *method);
  STAMPFS_RETURN_IF_ERROR(options);
  auto credential = MakeEntraCredential(*options);
  STAMPFS_RETURN_IF_ERROR(credential);
  auto token = (*credential)->Token();
  if (!token.ok()) {
    return Status(Code::kAuth, "cannot sign in to " + account->account_name +
                                   " with Microsoft Entra ID: " + token.status().message());
  }
  account->token_credential = *credential;
  LogInfo("signed in with Microsoft Entra ID: " + (*credential)->Describe());
  return Status::Ok();
}

std::string ConfigFileHelp() {
  return R"(Config file (--config FILE, -o config=FILE): one "key = value" a line, '#' comments.
  Keys: container, mountpoint, every -o option above with its value, the flags
  (ro, allow_other, allow_http, dir_markers, debug, nosuid, nodev, noexec) with true/false,
  options = an -o list. Secrets (account_key, sas_token, connection_string) are
  allowed in it only when group and others cannot read it (chmod 600).
  The command line overrides the file.
)";
}

}  // namespace stampfs
