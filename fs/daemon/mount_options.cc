#include "fs/daemon/mount_options.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <map>
#include <set>

#include "fs/daemon/mount_config.h"
#include "storage/auth.h"
#include "storage/entra_credential.h"
#include "storage/queue_store.h"

namespace stampfs {

namespace {

// Options mount(8) and fstab use that mean nothing to stampfs.
const std::set<std::string>& IgnoredOptions() {
  static const std::set<std::string> kIgnored = {
      "rw",     "defaults", "auto",    "noauto",   "user",        "users",      "nouser", "_netdev",
      "nofail", "atime",    "noatime", "relatime", "strictatime", "nodiratime", "async",  "sync"};
  return kIgnored;
}

const std::set<std::string>& KernelOptions() {
  static const std::set<std::string> kKernel = {"nosuid", "suid", "nodev", "dev", "noexec", "exec"};
  return kKernel;
}

Result<uint32_t> ParseU32(const std::string& key, const std::string& value, int base) {
  char* end = nullptr;
  errno = 0;
  unsigned long v = std::strtoul(value.c_str(), &end, base);
  if (value.empty() || *end != '\0' || errno != 0 || v > 0xffffffffUL) {
    return Status(Code::kInvalidArgument, "option " + key + "=" + value + ": not a number");
  }
  return static_cast<uint32_t>(v);
}

Status ApplyValueOption(const std::string& key, const std::string& value, MountOptions* o) {
  static const std::map<std::string, std::string MountOptions::*> kStrings = {
      {"cache_dir", &MountOptions::cache_dir},
      {"table", &MountOptions::table},
      {"connection_string_file", &MountOptions::connection_string_file},
      {"account_name", &MountOptions::account_name},
      {"account_key_file", &MountOptions::account_key_file},
      {"sas_token_file", &MountOptions::sas_token_file},
      {"table_sas_token_file", &MountOptions::table_sas_token_file},
      {"blob_endpoint", &MountOptions::blob_endpoint},
      {"table_endpoint", &MountOptions::table_endpoint},
      {"queue_endpoint", &MountOptions::queue_endpoint},
      {"endpoint_suffix", &MountOptions::endpoint_suffix},
      {"ca_file", &MountOptions::ca_file},
      {"tenant_id", &MountOptions::tenant_id},
      {"client_id", &MountOptions::client_id},
      {"client_secret_file", &MountOptions::client_secret_file},
      {"client_cert_file", &MountOptions::client_cert_file},
      {"federated_token_file", &MountOptions::federated_token_file},
      {"authority_host", &MountOptions::authority_host},
      {"msi_endpoint", &MountOptions::msi_endpoint},
      {"token_resource", &MountOptions::token_resource},
  };
  if (auto it = kStrings.find(key); it != kStrings.end()) {
    o->*(it->second) = value;
  } else if (key == "attr_timeout" || key == "shutdown_timeout" || key == "discover" ||
             key == "token_refresh_margin" || key == "offline_after" || key == "foreign_ttl") {
    const double limit = key == "shutdown_timeout" ? 3600 : 86400;
    char* end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || v < 0 || v > limit) {
      return Status(Code::kInvalidArgument, "option " + key + "=" + value +
                                                ": expected seconds between 0 and " +
                                                std::to_string(static_cast<int>(limit)));
    }
    (key == "attr_timeout"           ? o->attr_timeout
     : key == "discover"             ? o->discover
     : key == "foreign_ttl"          ? o->foreign_ttl
     : key == "offline_after"        ? o->offline_after
     : key == "token_refresh_margin" ? o->token_refresh_margin
                                     : o->shutdown_timeout) = v;
  } else if (key == "events" || key == "events_queue") {
    Status name = CheckQueueName(value);
    if (!name.ok())
      return Status(Code::kInvalidArgument, "option " + key + "=" + value + ": " + name.message());
    o->events_queue = value;
  } else if (key == "auth") {
    STAMPFS_RETURN_IF_ERROR(ParseAuthMethod(value));
    o->auth = value;
  } else if (key == "config") {
    // Applied before everything else by ParseMountArgs.
  } else if (key == "log_level") {
    o->log_level = value;
  } else if (key == "cache_size" || key == "block_size" || key == "dir_readahead_size") {
    auto v = ParseByteSize(key, value);
    STAMPFS_RETURN_IF_ERROR(v);
    if (key == "cache_size" && *v < (16ull << 20)) {
      return Status(Code::kInvalidArgument, "option cache_size=" + value + ": at least 16M");
    }
    if (key == "block_size" && (*v < (64ull << 10) || *v > (64ull << 20) || (*v & (*v - 1)))) {
      return Status(Code::kInvalidArgument,
                    "option block_size=" + value + ": a power of two from 64K to 64M");
    }
    if (key == "dir_readahead_size" && *v > (64ull << 20)) {
      return Status(Code::kInvalidArgument, "option dir_readahead_size=" + value + ": at most 64M");
    }
    (key == "cache_size" ? o->cache_size
     : key == "block_size" ? o->block_size
                           : o->dir_readahead_size) = *v;
  } else if (key == "conflict") {
    if (value != "copy" && value != "fail" && value != "overwrite") {
      return Status(Code::kInvalidArgument,
                    "option conflict=" + value + ": expected copy, fail or overwrite");
    }
    o->conflict = value;
  } else if (key == "commit") {
    if (value != "async" && value != "close") {
      return Status(Code::kInvalidArgument, "option commit=" + value + ": expected async or close");
    }
    o->async_commit = value == "async";
  } else if (key == "commit_delay") {
    char* end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || v < 0 || v > 60) {
      return Status(Code::kInvalidArgument,
                    "option commit_delay=" + value + ": expected seconds between 0 and 60");
    }
    o->commit_delay = v;
  } else if (key == "commit_threads") {
    auto v = ParseU32(key, value, 10);
    STAMPFS_RETURN_IF_ERROR(v);
    if (*v < 1 || *v > 128) {
      return Status(Code::kInvalidArgument, "option commit_threads=" + value + ": 1 to 128");
    }
    o->commit_threads = static_cast<int>(*v);
  } else if (key == "dir_readahead") {
    auto v = ParseU32(key, value, 10);
    STAMPFS_RETURN_IF_ERROR(v);
    if (*v > 256) return Status(Code::kInvalidArgument, "option dir_readahead=" + value + ": 0 to 256");
    o->dir_readahead = *v;
  } else if (key == "uid" || key == "gid" || key == "umask") {
    auto v = ParseU32(key, value, key == "umask" ? 8 : 10);
    STAMPFS_RETURN_IF_ERROR(v);
    (key == "uid" ? o->uid : key == "gid" ? o->gid : o->umask) = *v;
  } else if (key == "connection_string" || key == "account_key" || key == "sas_token" ||
             key == "client_secret") {
    return Status(Code::kInvalidArgument,
                  "option " + key +
                      " is refused: secrets on the command line are visible to "
                      "every user (ps); use connection_string_file=FILE, account_key_file=FILE, "
                      "sas_token_file=FILE or client_secret_file=FILE (mode 0600), a config "
                      "file, or the environment");
  } else if (key.rfind("x-systemd.", 0) == 0 || key == "comment") {
    // for systemd and fstab only
  } else {
    return Status(Code::kInvalidArgument, "unknown option " + key + "=" + value);
  }
  return Status::Ok();
}

}  // namespace

bool ApplyFlag(const std::string& key, bool on, MountOptions* o) {
  if (key == "ro") {
    o->read_only = on;
  } else if (key == "allow_other") {
    o->allow_other = on;
  } else if (key == "allow_http") {
    o->allow_http = on;
  } else if (key == "dir_markers") {
    o->dir_markers = on;
  } else if (key == "debug") {
    if (on) o->log_level = "debug";
  } else if (KernelOptions().count(key)) {
    if (on) o->kernel_options.push_back(key);
  } else {
    return false;
  }
  return true;
}

Status ApplyOptionList(const std::string& list, MountOptions* o) {
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string opt = list.substr(start, comma - start);
    start = comma + 1;
    if (opt.empty()) continue;
    size_t eq = opt.find('=');
    if (eq != std::string::npos) {
      STAMPFS_RETURN_IF_ERROR(ApplyValueOption(opt.substr(0, eq), opt.substr(eq + 1), o));
    } else if (!ApplyFlag(opt, true, o) && !IgnoredOptions().count(opt) &&
               opt.rfind("x-", 0) != 0) {
      return Status(Code::kInvalidArgument, "unknown option " + opt);
    }
  }
  return Status::Ok();
}

namespace {

// The config file named anywhere in the arguments (the last one wins).
Result<std::string> FindConfigFile(const std::vector<std::string>& args) {
  std::string config;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string list;
    if (a == "--config") {
      if (i + 1 >= args.size()) return Status(Code::kInvalidArgument, "--config needs a value");
      config = args[++i];
    } else if (a.rfind("--config=", 0) == 0) {
      config = a.substr(9);
    } else if (a == "-o" && i + 1 < args.size()) {
      list = args[++i];
    } else if (a.rfind("-o", 0) == 0 && a.size() > 2) {
      list = a.substr(2);
    }
    size_t start = 0;
    while (!list.empty() && start < list.size()) {
      size_t comma = list.find(',', start);
      if (comma == std::string::npos) comma = list.size();
      std::string opt = list.substr(start, comma - start);
      if (opt.rfind("config=", 0) == 0) config = opt.substr(7);
      start = comma + 1;
    }
  }
  return config;
}

}  // namespace

Result<MountOptions> ParseMountArgs(const std::vector<std::string>& args) {
  MountOptions o;
  auto config = FindConfigFile(args);
  STAMPFS_RETURN_IF_ERROR(config);
  if (!config->empty()) STAMPFS_RETURN_IF_ERROR(ApplyConfigFile(*config, &o));
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto next = [&](const std::string& flag) -> Result<std::string> {
      if (i + 1 >= args.size()) return Status(Code::kInvalidArgument, flag + " needs a value");
      return args[++i];
    };
    if (a == "-f" || a == "--foreground") {
      o.foreground = true;
    } else if (a == "-o") {
      auto v = next(a);
      STAMPFS_RETURN_IF_ERROR(v);
      STAMPFS_RETURN_IF_ERROR(ApplyOptionList(*v, &o));
    } else if (a.rfind("-o", 0) == 0 && a.size() > 2) {
      STAMPFS_RETURN_IF_ERROR(ApplyOptionList(a.substr(2), &o));
    } else if (a == "--config") {
      ++i;  // applied first
    } else if (a.rfind("--config=", 0) == 0) {
      // applied first
    } else if (a == "--connection-string-file") {
      auto v = next(a);
      STAMPFS_RETURN_IF_ERROR(v);
      // Empty: no file (systemd passes an unset ${VAR} as ""); a config
      // file's connection_string_file then stays.
      if (!v->empty()) o.connection_string_file = *v;
    } else if (a == "--connection-string" || a.rfind("--connection-string=", 0) == 0) {
      return Status(Code::kInvalidArgument,
                    "--connection-string is refused: use --connection-string-file FILE");
    } else if (!a.empty() && a[0] == '-') {
      return Status(Code::kInvalidArgument, "unknown flag " + a);
    } else {
      positional.push_back(a);
    }
  }
  // From the config file, CONTAINER or both may be left out.
  if (positional.size() == 2) {
    o.container = positional[0];
    o.mountpoint = positional[1];
  } else if (positional.size() == 1 && !o.container.empty()) {
    o.mountpoint = positional[0];
  } else if (positional.size() > 2 || o.container.empty() || o.mountpoint.empty() ||
             !positional.empty()) {
    return Status(Code::kInvalidArgument, "expected CONTAINER and MOUNTPOINT");
  }
  STAMPFS_RETURN_IF_ERROR(CheckContainerName(o.container));
  if (o.table.empty()) o.table = DefaultTableName(o.container);
  return o;
}

Result<uint64_t> ParseByteSize(const std::string& key, const std::string& value) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(value.c_str(), &end, 10);
  int shift = 0;
  if (end != nullptr && *end != '\0' && end[1] == '\0') {
    switch (*end) {
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
        shift = 30;
        break;
      case 't':
      case 'T':
        shift = 40;
        break;
      default:
        shift = -1;
    }
    if (shift >= 0) ++end;
  }
  if (value.empty() || value[0] == '-' || errno != 0 || end == nullptr || *end != '\0' ||
      value[0] < '0' || value[0] > '9' || shift < 0 || (shift > 0 && v > (~0ull >> shift))) {
    return Status(Code::kInvalidArgument,
                  "option " + key + "=" + value + ": expected a size such as 512M or 2G");
  }
  return static_cast<uint64_t>(v) << shift;
}

Status CheckContainerName(const std::string& name) {
  bool ok = name.size() >= 3 && name.size() <= 63 && name.front() != '-' && name.back() != '-' &&
            name.find("--") == std::string::npos;
  for (char c : name) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-');
  if (!ok) {
    return Status(Code::kInvalidArgument,
                  "container name '" + name +
                      "' is invalid: 3-63 lowercase letters, digits and single hyphens, "
                      "starting and ending with a letter or digit");
  }
  return Status::Ok();
}

std::string DefaultTableName(const std::string& container) {
  std::string t = "fs";
  for (char c : container) {
    if (c != '-') t.push_back(c);
  }
  if (container.find('-') != std::string::npos) t += Sha256Hex(container).substr(0, 8);
  return t.substr(0, 63);
}

std::string DefaultCacheDir(const std::string& account, const std::string& container) {
  std::string base;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    base = xdg;
  } else if (getuid() == 0) {
    base = "/var/cache";
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    base = std::string(home) + "/.cache";
  } else {
    base = "/tmp";
  }
  return base + "/stampfs/" + account + "/" + container;
}

std::string MountUsage() {
  return R"(usage: stampfs mount [-f] [--config FILE] [-o OPTIONS] [--connection-string-file FILE]
                     CONTAINER MOUNTPOINT

Mounts an Azure Storage container. The connection comes from, in order:
connection_string_file (or connection_string in the config file); else
account_name with account_key_file or sas_token_file, or alone (Microsoft
Entra ID sign-in, auth=); else $AZURE_STORAGE_CONNECTION_STRING; else
UseDevelopmentStorage=true (Azurite). Secrets are never accepted on the
command line.

  -f, --foreground            stay in the foreground, log to stderr (else syslog)
  --config FILE, -o config=FILE
                              read options from FILE (key = value lines, below)
  --connection-string-file FILE, -o connection_string_file=FILE
                              a connection string (file mode 0600)
  -o account_name=NAME        the storage account (with a key or SAS file)
  -o account_key_file=FILE    Shared Key: the account key (file mode 0600)
  -o sas_token_file=FILE      an account SAS, or a container SAS (file mode 0600);
                              a read-only SAS (no w/a/c/d/u in sp) mounts read-only
  -o table_sas_token_file=FILE
                              the table's own SAS, with a container SAS
  -o blob_endpoint=URL        default https://ACCOUNT.blob.SUFFIX
  -o table_endpoint=URL       default https://ACCOUNT.table.SUFFIX
  -o endpoint_suffix=SUFFIX   default core.windows.net
  -o allow_http               allow plain http to a host that is not loopback
  -o ca_file=PATH             trust these CAs (PEM) for https instead of the system's
  -o auth=auto|key|sas|msi|workload|sp|cli
                              how to sign in (default auto: key or SAS if given, else
                              Entra ID: service principal, workload identity, managed
                              identity, az CLI, the first that works)
  -o tenant_id=ID, -o client_id=ID   (default $AZURE_TENANT_ID, $AZURE_CLIENT_ID)
  -o client_secret_file=FILE  a service principal's secret (mode 0600)
  -o client_cert_file=FILE    a service principal's certificate + key, PEM (mode 0600)
  -o federated_token_file=FILE    workload identity (default $AZURE_FEDERATED_TOKEN_FILE)
  -o authority_host=URL       default https://login.microsoftonline.com
  -o msi_endpoint=URL         managed identity endpoint (default IMDS)
  -o token_resource=URL       default https://storage.azure.com
  -o token_refresh_margin=SECONDS  replace tokens this long before expiry (default 300)
  -o dir_markers              mkdir also writes a zero-length hdi_isfolder=true marker
                              blob, so other tools see empty directories (default off)
  -o ro                       read-only mount
  -o allow_other              let other users access the mount
  -o attr_timeout=SECONDS     trust cached metadata this long (default 2)
  -o offline_after=SECONDS    a revalidation of cached metadata not answered this long
                              keeps the cached copy in use (default 5)
  -o cache_dir=PATH           local cache (default ~/.cache/stampfs/ACCOUNT/CONTAINER,
                              /var/cache/stampfs/ACCOUNT/CONTAINER for root)
  -o cache_size=SIZE          block cache cap, e.g. 512M, 4G (default 1G, at least 16M);
                              uncommitted data is never evicted: writers wait instead
  -o block_size=SIZE          base block size of new files (default 4M, 64K..64M)
  -o table=NAME               metadata table (default fs + container name)
  -o conflict=copy|fail|overwrite
                              when another writer committed a file first: save this
                              writer's data as NAME.conflict-HOST-TIME (default), only
                              fail (EIO, data kept in the cache), or overwrite
  -o commit=async|close       async (default): close returns once the changes are durable
                              in the local cache journal, and they are committed to the
                              container within commit_delay (fsync commits at once);
                              close: every close commits before it returns
  -o commit_delay=SECONDS     async: commit this long after the last close (default 0.5)
  -o commit_threads=N         async: uploads in flight at once (default 16)
  -o dir_readahead=N          a reader opening a directory's files in listing order gets
                              the next N small files fetched ahead in parallel (default
                              32; 0: off)
  -o dir_readahead_size=SIZE  the largest file fetched so (default 1M; one block at most)
  -o foreign_ttl=SECONDS      a directory being listed (or a name looked up and not
                              found) is checked against its blobs at most this often,
                              so what other tools write shows up (default 30; 0: never)
  -o events=QUEUE             apply the container's Event Grid blob events from this
                              storage queue of the account: other tools' changes show
                              in about a second (docs/configuration.md shows the az
                              commands that create the queue and the subscription)
  -o discover=SECONDS         import what other tools wrote to the whole container this
                              often (as stampfs import --refresh; default 0: never)
  -o shutdown_timeout=SECONDS at unmount/SIGTERM, commit dirty files this long at most
                              (default 30); what is left stays journaled
  -o uid=N, -o gid=N          show every file as owned by N
  -o umask=OCTAL              mask permission bits shown (default 0)
  -o log_level=error|warning|info|debug   (default info; -o debug = debug)
  -o nosuid,nodev,noexec      passed to the kernel
  mount(8) options (_netdev, nofail, auto, noauto, user, users, nouser, defaults,
  rw, x-systemd.*) are accepted and ignored.

)" + ConfigFileHelp();
}

}  // namespace stampfs
