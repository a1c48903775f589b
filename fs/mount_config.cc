#include "fs/mount_config.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

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
  if (key.empty() && sas.empty()) {
    return Status(Code::kInvalidArgument,
                  "account_name needs account_key_file or sas_token_file (or a config file "
                  "holding account_key or sas_token)");
  }
  if (o.account_name.empty() && (o.blob_endpoint.empty() || o.table_endpoint.empty())) {
    return Status(Code::kInvalidArgument,
                  "a key or SAS needs account_name (or both blob_endpoint and table_endpoint)");
  }
  std::string text;
  if (!o.account_name.empty()) text += "AccountName=" + o.account_name + ";";
  text += key.empty() ? "SharedAccessSignature=" + sas + ";" : "AccountKey=" + key + ";";
  if (!o.blob_endpoint.empty()) text += "BlobEndpoint=" + o.blob_endpoint + ";";
  if (!o.table_endpoint.empty()) text += "TableEndpoint=" + o.table_endpoint + ";";
  if (!o.endpoint_suffix.empty()) text += "EndpointSuffix=" + o.endpoint_suffix + ";";
  return text;
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
  return account;
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
