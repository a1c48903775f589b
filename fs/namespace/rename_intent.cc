#include "fs/namespace/rename_intent.h"

#include <cstdio>
#include <random>

#include "fs/namespace/table_scan.h"

namespace stampfs {

namespace {

constexpr char kExchangeTempPrefix[] = ".stampfs-exchange/";
constexpr char kStashPrefix[] = "s_";

std::string ParentOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

std::string BinaryOr(const Entity& e, const char* name) {
  const Binary* b = e.GetBinary(name);
  return b ? b->bytes : std::string();
}

bool BoolOf(const Entity& e, const char* name) {
  auto it = e.properties.find(name);
  if (it == e.properties.end()) return false;
  if (const bool* b = std::get_if<bool>(&it->second)) return *b;
  return e.GetInt64(name) != 0;
}

}  // namespace

std::string RenameIntent::Describe() const {
  if (exchange) {
    return "exchange " + from + " <-> " + to + " (inos " + std::to_string(ino) + ", " +
           std::to_string(ino2) + ")";
  }
  return "rename " + from + " -> " + to + " (" + (is_dir ? "directory" : "file") + ", ino " +
         std::to_string(ino) + ")";
}

bool RenameIntent::Across() const { return exchange && ParentOf(from) != ParentOf(to); }

std::string ExchangeTempBlob(const std::string& intent_id) {
  return kExchangeTempPrefix + intent_id;
}

bool IsExchangeTempBlob(const std::string& blob) {
  return blob.compare(0, sizeof kExchangeTempPrefix - 1, kExchangeTempPrefix) == 0;
}

std::string NewIntentId(int64_t now_ns) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[48];
  std::snprintf(buf, sizeof buf, "%020lld-%016llx", static_cast<long long>(now_ns),
                static_cast<unsigned long long>(rng()));
  return buf;
}

Entity IntentToEntity(const RenameIntent& i) {
  Entity e{kIntentsPartition, i.id, {}, {}};
  // Across directories: an op a version without it refuses to roll forward
  // (its same-directory roll-forward would copy over the stashed file's blob).
  e.properties["op"] = std::string(i.Across() ? kExchangeAcrossOp : i.exchange ? "exchange" : "rename");
  if (i.exchange) {
    e.properties["ino2"] = static_cast<int64_t>(i.ino2);
    e.properties["blob2"] = i.blob2;
    e.properties["betag2"] = i.betag2;
    for (const auto& [name, value] : i.stash) e.properties[kStashPrefix + name] = value;
    if (i.Across()) e.properties["setag"] = i.stash_etag;
  }
  e.properties["from"] = Binary{i.from};
  e.properties["to"] = Binary{i.to};
  e.properties["ino"] = static_cast<int64_t>(i.ino);
  e.properties["dir"] = static_cast<int64_t>(i.is_dir ? 1 : 0);
  e.properties["noreplace"] = static_cast<int64_t>(i.no_replace ? 1 : 0);
  e.properties["replaced"] = static_cast<int64_t>(i.replaced_ino);
  e.properties["blob"] = i.blob;
  e.properties["betag"] = i.betag;
  e.properties["host"] = i.host;
  e.properties["pid"] = i.pid;
  e.properties["mount"] = i.mount;
  e.properties["created"] = i.created_ns;
  return e;
}

Result<RenameIntent> IntentFromEntity(const Entity& row) {
  const std::string* op = row.GetString("op");
  if (!op || (*op != "rename" && *op != "exchange" && *op != kExchangeAcrossOp)) {
    return Status(Code::kInvalidArgument, "intent " + row.row_key + ": unknown operation");
  }
  RenameIntent i;
  i.id = row.row_key;
  i.exchange = *op != "rename";
  i.from = BinaryOr(row, "from");
  i.to = BinaryOr(row, "to");
  i.ino = static_cast<uint64_t>(row.GetInt64("ino"));
  if (i.from.empty() || i.from[0] != '/' || i.to.empty() || i.to[0] != '/' || i.ino == 0) {
    return Status(Code::kInvalidArgument, "intent " + row.row_key + ": incomplete rename");
  }
  i.is_dir = BoolOf(row, "dir");
  i.no_replace = BoolOf(row, "noreplace");
  i.replaced_ino = static_cast<uint64_t>(row.GetInt64("replaced"));
  if (const std::string* s = row.GetString("blob")) i.blob = *s;
  if (const std::string* s = row.GetString("betag")) i.betag = *s;
  if (const std::string* s = row.GetString("host")) i.host = *s;
  i.pid = row.GetInt64("pid");
  if (const std::string* s = row.GetString("mount")) i.mount = *s;
  i.created_ns = row.GetInt64("created");
  if (i.exchange) {
    i.ino2 = static_cast<uint64_t>(row.GetInt64("ino2"));
    if (i.ino2 == 0) return Status(Code::kInvalidArgument, "intent " + row.row_key + ": incomplete exchange");
    if (const std::string* s = row.GetString("blob2")) i.blob2 = *s;
    if (const std::string* s = row.GetString("betag2")) i.betag2 = *s;
    for (const auto& [name, value] : row.properties) {
      if (name.compare(0, sizeof kStashPrefix - 1, kStashPrefix) == 0) {
        i.stash[name.substr(sizeof kStashPrefix - 1)] = value;
      }
    }
    if (const std::string* s = row.GetString("setag")) i.stash_etag = *s;
    if (i.Across() != (*op == kExchangeAcrossOp) || (i.Across() && i.stash.empty())) {
      return Status(Code::kInvalidArgument, "intent " + row.row_key + ": exchange without its entry");
    }
  }
  return i;
}

}  // namespace stampfs
