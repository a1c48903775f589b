#include "fs/mount_options.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <set>

#include "storage/auth.h"

namespace stampfs {

namespace {

// Options mount(8) and fstab use that mean nothing to stampfs.
const std::set<std::string>& IgnoredOptions() {
  static const std::set<std::string> kIgnored = {
      "rw", "defaults", "auto", "noauto", "user", "users", "nouser", "_netdev", "nofail",
      "atime", "noatime", "relatime", "strictatime", "nodiratime", "async", "sync"};
  return kIgnored;
}

const std::set<std::string>& KernelOptions() {
  static const std::set<std::string> kKernel = {"nosuid", "suid", "nodev", "dev", "noexec",
                                                "exec"};
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
  if (key == "attr_timeout") {
    char* end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || v < 0 || v > 86400) {
      return Status(Code::kInvalidArgument, "option attr_timeout=" + value +
                                                ": expected seconds between 0 and 86400");
    }
    o->attr_timeout = v;
  } else if (key == "cache_dir") {
    o->cache_dir = value;
  } else if (key == "table") {
    o->table = value;
  } else if (key == "connection_string_file") {
    o->connection_string_file = value;
  } else if (key == "log_level") {
    o->log_level = value;
  } else if (key == "cache_size" || key == "block_size") {
    auto v = ParseByteSize(key, value);
    STAMPFS_RETURN_IF_ERROR(v);
    if (key == "cache_size" && *v < (16ull << 20)) {
      return Status(Code::kInvalidArgument, "option cache_size=" + value + ": at least 16M");
    }
    if (key == "block_size" && (*v < (64ull << 10) || *v > (64ull << 20) || (*v & (*v - 1)))) {
      return Status(Code::kInvalidArgument,
                    "option block_size=" + value + ": a power of two from 64K to 64M");
    }
    (key == "cache_size" ? o->cache_size : o->block_size) = *v;
  } else if (key == "conflict") {
    if (value != "copy" && value != "fail" && value != "overwrite") {
      return Status(Code::kInvalidArgument,
                    "option conflict=" + value + ": expected copy, fail or overwrite");
    }
    o->conflict = value;
  } else if (key == "uid" || key == "gid" || key == "umask") {
    auto v = ParseU32(key, value, key == "umask" ? 8 : 10);
    STAMPFS_RETURN_IF_ERROR(v);
    (key == "uid" ? o->uid : key == "gid" ? o->gid : o->umask) = *v;
  } else if (key == "connection_string" || key == "account_key" || key == "sas_token") {
    return Status(Code::kInvalidArgument,
                  "option " + key + " is refused: secrets on the command line are visible to "
                  "every user (ps); use connection_string_file=FILE (mode 0600) or "
                  "$AZURE_STORAGE_CONNECTION_STRING");
  } else if (key.rfind("x-systemd.", 0) == 0 || key == "comment") {
    // for systemd and fstab only
  } else {
    return Status(Code::kInvalidArgument, "unknown option " + key + "=" + value);
  }
  return Status::Ok();
}

}  // namespace

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
    } else if (opt == "ro") {
      o->read_only = true;
    } else if (opt == "allow_other") {
      o->allow_other = true;
    } else if (opt == "debug") {
      o->log_level = "debug";
    } else if (KernelOptions().count(opt)) {
      o->kernel_options.push_back(opt);
    } else if (!IgnoredOptions().count(opt) && opt.rfind("x-", 0) != 0) {
      return Status(Code::kInvalidArgument, "unknown option " + opt);
    }
  }
  return Status::Ok();
}

Result<MountOptions> ParseMountArgs(const std::vector<std::string>& args) {
  MountOptions o;
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
    } else if (a == "--connection-string-file") {
      auto v = next(a);
      STAMPFS_RETURN_IF_ERROR(v);
      o.connection_string_file = *v;
    } else if (a == "--connection-string" || a.rfind("--connection-string=", 0) == 0) {
      return Status(Code::kInvalidArgument,
                    "--connection-string is refused: use --connection-string-file FILE");
    } else if (!a.empty() && a[0] == '-') {
      return Status(Code::kInvalidArgument, "unknown flag " + a);
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() != 2) {
    return Status(Code::kInvalidArgument, "expected CONTAINER and MOUNTPOINT");
  }
  o.container = positional[0];
  o.mountpoint = positional[1];
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
      case 'k': case 'K': shift = 10; break;
      case 'm': case 'M': shift = 20; break;
      case 'g': case 'G': shift = 30; break;
      case 't': case 'T': shift = 40; break;
      default: shift = -1;
    }
    if (shift >= 0) ++end;
  }
  if (value.empty() || value[0] == '-' || errno != 0 || end == nullptr || *end != '\0' ||
      value[0] < '0' || value[0] > '9' ||
      shift < 0 || (shift > 0 && v > (~0ull >> shift))) {
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
  return R"(usage: stampfs mount [-f] [-o OPTIONS] [--connection-string-file FILE] CONTAINER MOUNTPOINT

Mounts an Azure Storage container. The connection string is read from
--connection-string-file FILE (or -o connection_string_file=FILE), else from
$AZURE_STORAGE_CONNECTION_STRING, else UseDevelopmentStorage=true (Azurite).

  -f                          stay in the foreground, log to stderr
  -o ro                       read-only mount
  -o allow_other              let other users access the mount
  -o attr_timeout=SECONDS     trust cached metadata this long (default 2)
  -o cache_dir=PATH           local cache (default ~/.cache/stampfs/ACCOUNT/CONTAINER)
  -o table=NAME               metadata table (default fs + container name)
  -o uid=N,gid=N              show every file as owned by N
  -o umask=OCTAL              mask permission bits shown
  -o connection_string_file=FILE
  -o log_level=error|warning|info|debug
  -o cache_size=SIZE          block cache cap, e.g. 512M, 4G (default 1G); uncommitted
                              data is never evicted: writers wait for uploads instead
  -o block_size=SIZE          base block size of new files (default 4M, 64K..64M)
  -o conflict=copy|fail|overwrite
                              when another writer committed a file first: save this
                              writer's data as NAME.conflict-HOST-TIME (default), only
                              fail (EIO, data kept in the cache), or overwrite
  -o nosuid,nodev,noexec      passed to the kernel
)";
}

}  // namespace stampfs
