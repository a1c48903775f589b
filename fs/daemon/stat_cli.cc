#include "fs/daemon/stat_cli.h"

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "fs/daemon/control_socket.h"

namespace stampfs {
namespace {

int Fail(const std::string& message) {
  std::cerr << "stampfs stat: " << message << "\n";
  return 1;
}

bool IsByteCount(const std::string& name) {
  return name.rfind("bytes.", 0) == 0 || name.find("_bytes") != std::string::npos;
}

std::string Human(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

}  // namespace

std::string StatUsage() {
  return "usage: stampfs stat [--json] MOUNTPOINT\n"
         "  prints the live counters of the daemon serving MOUNTPOINT: operations by kind\n"
         "  (ops.*), HTTP requests by kind (requests.blob.*, requests.table.*, requests.total,\n"
         "  .retries, .failed, .throttled), bytes.up/down, bytes.data_up (file data sent),\n"
         "  relayouts, cache.*, conflicts, errors.*;\n"
         "  --json prints them as one flat JSON object\n";
}

int StatCommand(const std::vector<std::string>& args) {
  bool json = false;
  std::string mountpoint;
  for (const std::string& a : args) {
    if (a == "--json") {
      json = true;
    } else if (a == "--help" || a == "-h") {
      std::cout << StatUsage();
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return Fail("unknown flag " + a + "\n" + StatUsage());
    } else if (mountpoint.empty()) {
      mountpoint = a;
    } else {
      return Fail("expected one MOUNTPOINT\n" + StatUsage());
    }
  }
  if (mountpoint.empty()) return Fail("expected a MOUNTPOINT\n" + StatUsage());
  auto path = ControlSocketPath(mountpoint);
  if (!path.ok()) return Fail(path.status().message());
  auto answer = QueryControlSocket(*path, "stats");
  if (!answer.ok())
    return Fail(mountpoint + " is not served by a running stampfs: " + answer.status().message());
  auto object = nlohmann::ordered_json::parse(*answer, nullptr, false);
  if (object.is_discarded() || !object.is_object()) return Fail("unreadable answer from " + *path);
  if (json) {
    std::cout << object.dump() << "\n";
    return 0;
  }
  size_t width = 0;
  for (const auto& [name, value] : object.items()) width = std::max(width, name.size());
  for (const auto& [name, value] : object.items()) {
    uint64_t v = value.is_number_unsigned() ? value.get<uint64_t>() : 0;
    std::string line = name + std::string(width + 2 - name.size(), ' ') + std::to_string(v);
    if (IsByteCount(name) && v >= 1024) line += " (" + Human(v) + ")";
    std::cout << line << "\n";
  }
  return 0;
}

}  // namespace stampfs
