// stampfs_inspect: reads a stampfs container's table and blobs directly with
// the storage library (not through a mount), for the e2e tests.
//
//   stampfs_inspect entities CONTAINER [PARTITIONKEY]
//       every entity (or one partition's), one line each:
//       PartitionKey<TAB>RowKey<TAB>name=value<TAB>...
//   stampfs_inspect blobs CONTAINER
//       every blob: name<TAB>size<TAB>etag<TAB>meta:key=value<TAB>...
//   stampfs_inspect cat CONTAINER BLOB      the blob's bytes on stdout
//   stampfs_inspect key TEXT                KeyFor(TEXT): the table key of a name or path
//   stampfs_inspect table CONTAINER         the default table name
//   stampfs_inspect drop CONTAINER          deletes the container and its table
//
// Options (before the command): --table NAME overrides DefaultTableName.
// The connection string comes from $AZURE_STORAGE_CONNECTION_STRING, else
// UseDevelopmentStorage=true (Azurite).
//
// Keys and values are printed escaped so one entity stays on one line:
// '\\' -> "\\\\", TAB -> "\\t", LF -> "\\n", other bytes < 0x20 and 0x7f ->
// "\\xHH". Valid UTF-8 is kept. Int properties are decimal except "mode",
// which is octal with a leading 0; Binary values are printed as their bytes,
// escaped, with invalid UTF-8 as \xHH (the xattr blob is printed as hex).
// Exit status: 0 on success, 1 on a storage error, 2 on usage errors.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "fs/daemon/mount_options.h"
#include "storage/azure_clients.h"
#include "storage/connection_string.h"
#include "storage/table_keys.h"
#include "storage/utf8.h"

namespace stampfs {
namespace {

int Usage() {
  std::cerr << "usage: stampfs_inspect [--table NAME] entities CONTAINER [PARTITIONKEY]\n"
               "       stampfs_inspect [--table NAME] blobs CONTAINER\n"
               "       stampfs_inspect cat CONTAINER BLOB\n"
               "       stampfs_inspect key TEXT\n"
               "       stampfs_inspect [--table NAME] table CONTAINER\n"
               "       stampfs_inspect [--table NAME] drop CONTAINER\n";
  return 2;
}

int Fail(const std::string& what, const Status& s) {
  std::cerr << "stampfs_inspect: " << what << ": " << s.ToString() << "\n";
  return 1;
}

std::string Escape(const std::string& s) {
  std::string out;
  char hex[8];
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (char32_t cp; size_t n = DecodeUtf8(s, i, &cp)) {
      out.append(s, i, n);
      i += n;
      continue;
    } else {
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
    ++i;
  }
  return out;
}

std::string Hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string Format(const std::string& name, const PropertyValue& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return Escape(*s);
  if (const auto* i = std::get_if<int64_t>(&v)) {
    if (name == "mode") {
      char buf[32];
      std::snprintf(buf, sizeof buf, "0%llo", static_cast<unsigned long long>(*i));
      return buf;
    }
    return std::to_string(*i);
  }
  if (const auto* i = std::get_if<int32_t>(&v)) return std::to_string(*i);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const auto* d = std::get_if<double>(&v)) return std::to_string(*d);
  if (const auto* b = std::get_if<Binary>(&v)) {
    return name == "xattr" ? "hex:" + Hex(b->bytes) : Escape(b->bytes);
  }
  return "?";
}

Result<StorageAccount> Account() {
  const char* env = std::getenv("AZURE_STORAGE_CONNECTION_STRING");
  return ParseConnectionString(env && *env ? env : kDevelopmentConnectionString);
}

ClientOptions Options() {
  ClientOptions o;
  o.retry.attempt_timeout = std::chrono::seconds(20);
  o.retry.total_deadline = std::chrono::seconds(60);
  return o;
}

int Entities(const StorageAccount& account, const std::string& table,
             const std::vector<std::string>& args) {
  auto store = MakeAzureTableClient(account, Options());
  QueryOptions q;
  if (args.size() > 1) q.filter = FilterPartition(args[1]);
  auto rows = store->Query(table, q);
  if (!rows.ok()) return Fail("query table " + table, rows.status());
  for (const Entity& e : *rows) {
    std::string line = Escape(e.partition_key) + "\t" + Escape(e.row_key);
    for (const auto& [name, value] : e.properties) line += "\t" + name + "=" + Format(name, value);
    std::cout << line << "\n";
  }
  return 0;
}

int Blobs(const StorageAccount& account, const std::string& container) {
  auto store = MakeAzureBlobClient(account, Options());
  ListOptions o;
  o.include_metadata = true;
  auto listing = store->ListBlobs(container, o);
  if (!listing.ok()) return Fail("list container " + container, listing.status());
  for (const BlobItem& b : listing->blobs) {
    std::string line = Escape(b.name) + "\t" + std::to_string(b.properties.size) + "\t" +
                       Escape(b.properties.etag);
    for (const auto& [k, v] : b.properties.metadata) line += "\tmeta:" + k + "=" + Escape(v);
    std::cout << line << "\n";
  }
  return 0;
}

int Cat(const StorageAccount& account, const std::string& container, const std::string& blob) {
  auto store = MakeAzureBlobClient(account, Options());
  auto r = store->Read(container, blob, 0, 0, Condition::None(),
                       [](uint64_t, const char* data, size_t len) {
                         return std::fwrite(data, 1, len, stdout) == len;
                       });
  if (!r.ok()) return Fail("read blob " + blob, r.status());
  return std::fflush(stdout) == 0 ? 0 : 1;
}

int Drop(const StorageAccount& account, const std::string& container, const std::string& table) {
  int rc = 0;
  Status s = MakeAzureTableClient(account, Options())->DeleteTable(table);
  if (!s.ok() && !s.Is(Code::kNotFound)) rc = Fail("delete table " + table, s);
  s = MakeAzureBlobClient(account, Options())->DeleteContainer(container);
  if (!s.ok() && !s.Is(Code::kNotFound)) rc = Fail("delete container " + container, s);
  return rc;
}

int Main(std::vector<std::string> args) {
  std::string table;
  if (args.size() >= 2 && args[0] == "--table") {
    table = args[1];
    args.erase(args.begin(), args.begin() + 2);
  }
  if (args.size() < 2) return Usage();
  const std::string& cmd = args[0];
  if (cmd == "key") {
    if (args.size() != 2) return Usage();
    std::cout << KeyFor(args[1]) << "\n";
    return 0;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  const std::string& container = rest[0];
  if (table.empty()) table = DefaultTableName(container);
  if (cmd == "table") {
    std::cout << table << "\n";
    return 0;
  }
  auto account = Account();
  if (!account.ok()) return Fail("connection string", account.status());
  if (cmd == "entities" && rest.size() <= 2) return Entities(*account, table, rest);
  if (cmd == "blobs" && rest.size() == 1) return Blobs(*account, container);
  if (cmd == "cat" && rest.size() == 2) return Cat(*account, container, rest[1]);
  if (cmd == "drop" && rest.size() == 1) return Drop(*account, container, table);
  return Usage();
}

}  // namespace
}  // namespace stampfs

int main(int argc, char** argv) {
  return stampfs::Main(std::vector<std::string>(argv + 1, argv + argc));
}
