// stampfs_populate: writes a container's blobs and table rows directly with
// the storage library (never through stampfs), for tests/e2e/import_fsck.sh:
// containers "written by other tools", and tables damaged on purpose.
//
//   stampfs_populate create CONTAINER            the container (fine if it exists)
//   stampfs_populate put CONTAINER NAME [TEXT [KEY=VALUE...]]
//       a blob holding TEXT (default empty) with metadata KEY=VALUE ([a-z0-9] names)
//   stampfs_populate marker CONTAINER NAME       a zero-length blob with metadata
//       hdi_isfolder=true, as blobfuse makes them (a raw request: the client
//       refuses '_' in metadata names, see AZURE-PROTOCOL.md §1.1 quirk 3)
//   stampfs_populate many CONTAINER PREFIX COUNT [THREADS]
//       COUNT blobs PREFIX/f00000..., uploaded by THREADS threads (default
//       16). Every 50th holds its own name and a newline; the others are
//       empty, committed from an empty block list: that stores no extent, and
//       Azurite's in-memory store stalls for minutes collecting thousands of
//       extents once the container is deleted.
//   stampfs_populate tree CONTAINER DIRS PER_DIR [THREADS]
//       DIRS directories d0000... of PER_DIR blobs each, as `many` makes them
//       (a foreign container for tests/bench: prints the blobs per second)
//   stampfs_populate delete CONTAINER NAME       deletes a blob
//   stampfs_populate queue QUEUE                 creates a storage queue
//   stampfs_populate count QUEUE                 prints how many messages it shows (up to 32)
//   stampfs_populate message QUEUE TEXT          posts TEXT as it is
//   stampfs_populate event QUEUE created|deleted CONTAINER NAME [SEQUENCER [cloud]]
//       posts a blob event to QUEUE as Event Grid's storage-queue destination
//       does (the Event Grid schema, or CloudEvents 1.0 with "cloud"; base64
//       JSON); a "created" event carries the blob's ETag and length as read
//       now. SEQUENCER defaults to the clock in ns, 32 hex digits.
//   stampfs_populate delete-row CONTAINER PK RK  deletes a table row
//   stampfs_populate set-string CONTAINER PK RK PROPERTY VALUE
//       merges a string property into a table row
//
// Options (first): --table NAME overrides DefaultTableName(CONTAINER). The
// connection string comes from $AZURE_STORAGE_CONNECTION_STRING, else
// UseDevelopmentStorage=true. Exit status: 0 done, 1 storage error, 2 usage.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "fs/daemon/mount_options.h"
#include "storage/auth.h"
#include "storage/azure_clients.h"
#include "storage/connection_string.h"
#include "storage/queue_store.h"

namespace stampfs {
namespace {

int Usage() {
  std::cerr << "usage: stampfs_populate [--table NAME] create CONTAINER\n"
               "       stampfs_populate put CONTAINER NAME [TEXT [KEY=VALUE...]]\n"
               "       stampfs_populate marker CONTAINER NAME\n"
               "       stampfs_populate many CONTAINER PREFIX COUNT [THREADS]\n"
               "       stampfs_populate delete CONTAINER NAME\n"
               "       stampfs_populate [--table NAME] delete-row CONTAINER PK RK\n"
               "       stampfs_populate [--table NAME] set-string CONTAINER PK RK PROPERTY VALUE\n";
  return 2;
}

int Fail(const std::string& what, const Status& s) {
  std::cerr << "stampfs_populate: " << what << ": " << s.ToString() << "\n";
  return 1;
}

ClientOptions Options() {
  ClientOptions o;
  o.retry.attempt_timeout = std::chrono::seconds(20);
  o.retry.total_deadline = std::chrono::seconds(60);
  return o;
}

int Put(const StorageAccount& account, const std::vector<std::string>& a) {
  BlobMetadata md;
  for (size_t i = 3; i < a.size(); ++i) {
    size_t eq = a[i].find('=');
    if (eq == std::string::npos) return Usage();
    md[a[i].substr(0, eq)] = a[i].substr(eq + 1);
  }
  auto r = MakeAzureBlobClient(account, Options())
               ->PutString(a[0], a[1], a.size() > 2 ? a[2] : "", md, Condition::None());
  return r.ok() ? 0 : Fail("put " + a[1], r.status());
}

// Put Blob by hand, so the metadata name may hold an underscore.
int Marker(const StorageAccount& account, const std::string& container, const std::string& name) {
  RetryingHttpClient http(MakeCurlTransport(), Options().retry);
  HttpRequest req;
  req.method = "PUT";
  req.url = account.blob_endpoint + "/" + UrlEncode(container) + "/" + UrlEncode(name, true);
  req.SetHeader("x-ms-version", kBlobApiVersion);
  req.SetHeader("x-ms-blob-type", "BlockBlob");
  req.SetHeader("x-ms-meta-hdi_isfolder", "true");
  auto r = http.Execute(req, MakeSigner(account, Service::kBlob));
  if (!r.ok()) return Fail("marker " + name, r.status());
  if (r->status / 100 != 2) return Fail("marker " + name, StatusFromResponse(*r, "put " + name));
  return 0;
}

// `count` blobs named by `name_of(i)`, by `threads` threads: every 50th
// holds its leaf name and a newline, the others are empty.
int PutMany(const StorageAccount& account, const std::string& container, int count, int threads,
            const std::function<std::string(int, std::string*)>& name_of) {
  std::atomic<int> next{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      auto blobs = MakeAzureBlobClient(account, Options());
      for (int i = next++; i < count && failures == 0; i = next++) {
        std::string leaf;
        const std::string name = name_of(i, &leaf);
        auto r = i % 50 == 0 ? blobs->PutString(container, name, leaf + "\n", {}, Condition::None())
                             : blobs->PutBlockList(container, name, {}, {}, Condition::None());
        if (!r.ok()) {
          if (failures++ == 0) Fail("put " + name, r.status());
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  return failures == 0 ? 0 : 1;
}

int Tree(const StorageAccount& account, const std::vector<std::string>& a) {
  const int dirs = std::atoi(a[1].c_str());
  const int per_dir = std::atoi(a[2].c_str());
  const int threads = a.size() > 3 ? std::atoi(a[3].c_str()) : 32;
  if (dirs <= 0 || per_dir <= 0 || threads <= 0) return Usage();
  const auto start = std::chrono::steady_clock::now();
  const int rc =
      PutMany(account, a[0], dirs * per_dir, threads, [per_dir](int i, std::string* leaf) {
        char dir[16], file[16];
        std::snprintf(dir, sizeof dir, "d%04d", i / per_dir);
        std::snprintf(file, sizeof file, "f%05d", i % per_dir);
        *leaf = file;
        return std::string(dir) + "/" + file;
      });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << dirs * per_dir << " blobs in " << s << " s (" << static_cast<int>(dirs * per_dir / s)
            << " blobs/s)\n";
  return rc;
}

int Many(const StorageAccount& account, const std::vector<std::string>& a) {
  const int count = std::atoi(a[2].c_str());
  const int threads = a.size() > 3 ? std::atoi(a[3].c_str()) : 16;
  if (count <= 0 || threads <= 0) return Usage();
  return PutMany(account, a[0], count, threads, [&a](int i, std::string* leaf) {
    char name[16];
    std::snprintf(name, sizeof name, "f%05d", i);
    *leaf = name;
    return a[1] + "/" + name;
  });
}

// The JSON Event Grid delivers for one blob event (AZURE-NOTES.md).
int Event(const StorageAccount& account, const std::vector<std::string>& a) {
  const std::string& queue = a[0];
  const bool created = a[1] == "created";
  if (!created && a[1] != "deleted") return Usage();
  const std::string& container = a[2];
  const std::string& blob = a[3];
  std::string sequencer = a.size() > 4 ? a[4] : "";
  if (sequencer.empty()) {
    char hex[40];
    std::snprintf(hex, sizeof hex, "%032llx",
                  static_cast<unsigned long long>(
                      std::chrono::system_clock::now().time_since_epoch().count()));
    sequencer = hex;
  }
  nlohmann::json data = {{"api", created ? "PutBlob" : "DeleteBlob"},
                         {"blobType", "BlockBlob"},
                         {"sequencer", sequencer},
                         {"url", account.blob_endpoint + "/" + container + "/" + blob}};
  if (created) {
    auto props = MakeAzureBlobClient(account, Options())->GetProperties(container, blob);
    if (!props.ok()) return Fail("read " + blob, props.status());
    data["eTag"] = props->etag;
    data["contentLength"] = props->size;
    data["contentType"] = "application/octet-stream";
  }
  const std::string type =
      created ? "Microsoft.Storage.BlobCreated" : "Microsoft.Storage.BlobDeleted";
  const std::string source =
      "/subscriptions/s/resourceGroups/g/providers/"
      "Microsoft.Storage/storageAccounts/" +
      account.account_name;
  const std::string subject = "/blobServices/default/containers/" + container + "/blobs/" + blob;
  const std::string id = sequencer + "-" + std::to_string(getpid());
  nlohmann::json event;
  if (a.size() > 5 && a[5] == "cloud") {
    event = {{"specversion", "1.0"}, {"type", type}, {"source", source},
             {"subject", subject},   {"id", id},     {"time", "2026-12-06T00:00:00Z"},
             {"data", data}};
  } else {
    event = {{"topic", source},        {"subject", subject},
             {"eventType", type},      {"id", id},
             {"data", data},           {"dataVersion", ""},
             {"metadataVersion", "1"}, {"eventTime", "2026-12-06T00:00:00Z"}};
  }
  Status s =
      MakeAzureQueueClient(account, Options())->PutMessage(queue, Base64Encode(event.dump()));
  return s.ok() ? 0 : Fail("put message", s);
}

int Run(const StorageAccount& account, const std::string& table, const std::string& cmd,
        const std::vector<std::string>& a) {
  if (cmd == "create" && a.size() == 1) {
    Status s = MakeAzureBlobClient(account, Options())->CreateContainer(a[0]);
    return s.ok() || s.Is(Code::kAlreadyExists) ? 0 : Fail("create " + a[0], s);
  }
  if (cmd == "put" && a.size() >= 2) return Put(account, a);
  if (cmd == "marker" && a.size() == 2) return Marker(account, a[0], a[1]);
  if (cmd == "many" && (a.size() == 3 || a.size() == 4)) return Many(account, a);
  if (cmd == "tree" && (a.size() == 3 || a.size() == 4)) return Tree(account, a);
  if (cmd == "delete" && a.size() == 2) {
    Status s = MakeAzureBlobClient(account, Options())->Delete(a[0], a[1], Condition::None());
    return s.ok() ? 0 : Fail("delete " + a[1], s);
  }
  if (cmd == "queue" && a.size() == 1) {
    Status s = MakeAzureQueueClient(account, Options())->CreateQueue(a[0]);
    return s.ok() ? 0 : Fail("create queue " + a[0], s);
  }
  if (cmd == "event" && a.size() >= 4 && a.size() <= 6) return Event(account, a);
  if (cmd == "count" && a.size() == 1) {
    auto r = MakeAzureQueueClient(account, Options())->PeekMessages(a[0], 32);
    if (!r.ok()) return Fail("peek " + a[0], r.status());
    std::cout << r->size() << "\n";
    return 0;
  }
  if (cmd == "message" && a.size() == 2) {
    Status s = MakeAzureQueueClient(account, Options())->PutMessage(a[0], a[1]);
    return s.ok() ? 0 : Fail("put message", s);
  }
  if (cmd == "delete-row" && a.size() == 3) {
    Status s = MakeAzureTableClient(account, Options())
                   ->Delete(table, a[1], a[2], Condition::IfMatch("*"));
    return s.ok() ? 0 : Fail("delete row", s);
  }
  if (cmd == "set-string" && a.size() == 5) {
    Entity e{a[1], a[2], {{a[3], a[4]}}, {}};
    auto r = MakeAzureTableClient(account, Options())
                 ->Update(table, e, UpdateMode::kMerge, Condition::IfMatch("*"));
    return r.ok() ? 0 : Fail("merge row", r.status());
  }
  return Usage();
}

int Main(std::vector<std::string> args) {
  std::string table;
  if (args.size() >= 2 && args[0] == "--table") {
    table = args[1];
    args.erase(args.begin(), args.begin() + 2);
  }
  if (args.size() < 2) return Usage();
  const std::string cmd = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (table.empty()) table = DefaultTableName(rest[0]);
  const char* env = std::getenv("AZURE_STORAGE_CONNECTION_STRING");
  auto account = ParseConnectionString(env && *env ? env : kDevelopmentConnectionString);
  if (!account.ok()) return Fail("connection string", account.status());
  return Run(*account, table, cmd, rest);
}

}  // namespace
}  // namespace stampfs

int main(int argc, char** argv) {
  return stampfs::Main(std::vector<std::string>(argv + 1, argv + argc));
}
