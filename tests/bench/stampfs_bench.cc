// stampfs_bench: the helper of tests/bench/run. Raw operations with the
// project's storage client (the "raw limit" column: no FUSE, no metadata),
// polls that time another mount to durability, and the file-system side of
// the small-file and random-read workloads (one process, so no fork per file).
//
// Raw, against CONTAINER (connection string from $AZURE_STORAGE_CONNECTION_STRING):
//   put-many CONTAINER PREFIX COUNT BYTES THREADS   Put Blob PREFIX/f00000...
//   put-tree CONTAINER PREFIX DIR THREADS           Put Blob of every file under DIR
//   head-many CONTAINER PREFIX COUNT THREADS        Get Blob Properties of each
//   list CONTAINER PREFIX                           List Blobs (all pages); prints the count
//   randread CONTAINER BLOB COUNT BYTES THREADS SEED   ranged GETs at aligned random offsets
//   get-many CONTAINER PREFIX COUNT THREADS         Get Blob of each (put-many's names)
//   wait CONTAINER PREFIX COUNT BYTES TIMEOUT [committed]
//       polls List Blobs (every 200 ms) until COUNT blobs under PREFIX hold BYTES
//       in all (exit 1 at TIMEOUT seconds, or after 30 s without progress); with
//       `committed`, also until each of
//       them has its stampfs table entry naming that blob's ETag (the mount's
//       commit of the file is done, not only its upload)
//   wait-tree CONTAINER PREFIX DIR TIMEOUT [committed]
//       the same for a known tree (polled every 100 ms): every file under DIR is a
//       blob PREFIX/RELATIVE_PATH of the same size, whatever else is listed
//       (rsync's temporary names)
//   delete-prefix CONTAINER PREFIX THREADS          deletes every blob under PREFIX
//   batch-many TABLE OPS COUNT      COUNT entity group transactions, one after
//       another, each inserting OPS entities (about 200 bytes, as a file's entry)
//       into one partition; prints the median and total milliseconds
//   create CONTAINER                                the container (fine if it exists)
//   sas                                             an account SAS query string for the
//       blob service (signed with the account key; for rclone's sas_url)
// File system side, through any mount:
//   fs-create DIR COUNT BYTES        creates DIR/f00000... of BYTES each (open, write, close)
//   fs-stat DIR COUNT                lstat of each of them
//   fs-randread FILE COUNT BYTES SEED   preads at the same offsets randread uses
//
// Exit status: 0 done, 1 a failure (printed), 2 usage.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fs/daemon/mount_options.h"
#include "storage/auth.h"
#include "storage/azure_clients.h"
#include "storage/connection_string.h"
#include "storage/table_keys.h"

namespace stampfs {
namespace {

int Usage() {
  std::cerr << "usage: stampfs_bench put-many|put-tree|head-many|get-many|list|randread|wait|"
               "wait-tree|delete-prefix|batch-many|create|sas|fs-create|fs-stat|fs-randread ARGS "
               "(see the source)\n";
  return 2;
}

int Fail(const std::string& what, const Status& s) {
  std::cerr << "stampfs_bench: " << what << ": " << s.ToString() << "\n";
  return 1;
}

Result<StorageAccount> Account() {
  const char* env = std::getenv("AZURE_STORAGE_CONNECTION_STRING");
  return ParseConnectionString(env && *env ? env : kDevelopmentConnectionString);
}

std::unique_ptr<BlobStore> Blobs(const StorageAccount& account) {
  ClientOptions o;
  o.retry.attempt_timeout = std::chrono::seconds(60);
  o.retry.total_deadline = std::chrono::seconds(180);
  return MakeAzureBlobClient(account, o);
}

std::string Leaf(uint64_t i) {
  char leaf[24];
  std::snprintf(leaf, sizeof leaf, "f%05llu", static_cast<unsigned long long>(i));
  return leaf;
}

// The offsets of the random-read workload: COUNT aligned offsets in [0, size).
std::vector<uint64_t> RandomOffsets(uint64_t size, uint64_t count, uint64_t bytes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const uint64_t slots = size / bytes;
  std::vector<uint64_t> out;
  for (uint64_t i = 0; i < count && slots > 0; ++i) out.push_back(rng() % slots * bytes);
  return out;
}

// Runs work(i) for i in [0, count) on `threads` workers, each with its own
// client; the first failure wins.
Status ForEach(const StorageAccount& account, uint64_t count, int threads,
               const std::function<Status(BlobStore&, uint64_t)>& work) {
  std::atomic<uint64_t> next{0};
  std::mutex mu;
  Status first;
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(threads, 1); ++t) {
    pool.emplace_back([&] {
      auto store = Blobs(account);
      for (uint64_t i; (i = next++) < count;) {
        Status s = work(*store, i);
        if (s.ok()) continue;
        std::lock_guard<std::mutex> lock(mu);
        if (first.ok()) first = s;
        next = count;
      }
    });
  }
  for (auto& t : pool) t.join();
  return first;
}

Result<BlobListing> List(const StorageAccount& account, const std::string& container,
                         const std::string& prefix) {
  ListOptions o;
  o.prefix = prefix;
  return Blobs(account)->ListBlobs(container, o);
}

int BatchMany(const StorageAccount& account, const std::vector<std::string>& a) {
  const std::string table_name = a[0];
  const uint64_t ops = std::stoull(a[1]), count = std::stoull(a[2]);
  auto table = MakeAzureTableClient(account);
  Status s = table->CreateTable(table_name);
  if (!s.ok() && !s.Is(Code::kAlreadyExists)) return Fail("batch-many: create table", s);
  const std::string pk = "p" + std::to_string(std::time(nullptr)) + "-" + std::to_string(getpid());
  std::vector<double> ms;
  for (uint64_t b = 0; b < count; ++b) {
    std::vector<TableOperation> batch;
    for (uint64_t i = 0; i < ops; ++i) {
      Entity e{pk,
               Leaf(b * ops + i),
               {{"ino", static_cast<int64_t>(b * ops + i)},
                {"mode", int64_t{0100644}},
                {"size", int64_t{4096}},
                {"mtime", int64_t{1700000000000000000}},
                {"blob", std::string("dir/") + Leaf(b * ops + i)},
                {"betag", std::string("\"0x8DC0123456789AB\"")}},
               {}};
      batch.push_back(TableOperation::Insert(e));
    }
    const auto t0 = std::chrono::steady_clock::now();
    auto r = table->ExecuteBatch(table_name, batch, nullptr);
    if (!r.ok()) return Fail("batch-many", r.status());
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  double total = 0;
  for (double m : ms) total += m;
  std::sort(ms.begin(), ms.end());
  std::printf("%llu transactions of %llu inserts: median %.1f ms, total %.0f ms\n",
              static_cast<unsigned long long>(count), static_cast<unsigned long long>(ops),
              ms.empty() ? 0.0 : ms[ms.size() / 2], total);
  return 0;
}

int PutMany(const StorageAccount& account, const std::vector<std::string>& a) {
  const std::string container = a[0], prefix = a[1];
  const uint64_t count = std::stoull(a[2]), bytes = std::stoull(a[3]);
  const std::string data(bytes, 'x');
  Status s = ForEach(account, count, std::stoi(a[4]), [&](BlobStore& b, uint64_t i) {
    return b.PutString(container, prefix + Leaf(i), data, {}, Condition::None()).status();
  });
  return s.ok() ? 0 : Fail("put-many", s);
}

std::string ReadLocal(const std::string& path) {
  std::string data;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return data;
  char buf[65536];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) data.append(buf, static_cast<size_t>(n));
  close(fd);
  return data;
}

int PutTree(const StorageAccount& account, const std::vector<std::string>& a) {
  const std::string container = a[0], prefix = a[1];
  const std::filesystem::path root = a[2];
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) files.push_back(std::filesystem::relative(e.path(), root).string());
  }
  Status s = ForEach(account, files.size(), std::stoi(a[3]), [&](BlobStore& b, uint64_t i) {
    const std::string data = ReadLocal((root / files[i]).string());
    return b.PutString(container, prefix + files[i], data, {}, Condition::None()).status();
  });
  return s.ok() ? 0 : Fail("put-tree", s);
}

int HeadMany(const StorageAccount& account, const std::vector<std::string>& a) {
  const std::string container = a[0], prefix = a[1];
  Status s = ForEach(account, std::stoull(a[2]), std::stoi(a[3]), [&](BlobStore& b, uint64_t i) {
    return b.GetProperties(container, prefix + Leaf(i)).status();
  });
  return s.ok() ? 0 : Fail("head-many", s);
}

int RandRead(const StorageAccount& account, const std::vector<std::string>& a) {
  const std::string container = a[0], blob = a[1];
  const uint64_t count = std::stoull(a[2]), bytes = std::stoull(a[3]);
  auto props = Blobs(account)->GetProperties(container, blob);
  if (!props.ok()) return Fail("randread " + blob, props.status());
  const auto offsets = RandomOffsets(props->size, count, bytes, std::stoull(a[5]));
  Status s = ForEach(account, offsets.size(), std::stoi(a[4]), [&](BlobStore& b, uint64_t i) {
    return b
        .Read(container, blob, offsets[i], bytes, Condition::None(),
              [](uint64_t, const char*, size_t) { return true; })
        .status();
  });
  return s.ok() ? 0 : Fail("randread", s);
}

int GetMany(const StorageAccount& account, const std::vector<std::string>& a) {
  const std::string container = a[0], prefix = a[1];
  Status s = ForEach(account, std::stoull(a[2]), std::stoi(a[3]), [&](BlobStore& b, uint64_t i) {
    return b
        .Read(container, prefix + Leaf(i), 0, 0, Condition::None(),
              [](uint64_t, const char*, size_t) { return true; })
        .status();
  });
  return s.ok() ? 0 : Fail("get-many", s);
}

// Whether a stampfs mount has committed each blob of `blobs`: its entry in
// the table (partition: the parent directory's path, row: the name) names the
// blob's ETag. Blobs found committed are added to `committed` and not asked
// about again.
bool EntriesCommitted(TableStore& table, const std::string& table_name,
                      const std::vector<const BlobItem*>& blobs, std::set<std::string>* committed) {
  std::map<std::string, std::vector<const BlobItem*>> by_dir;
  for (const BlobItem* b : blobs) {
    if (committed->count(b->name)) continue;
    const size_t slash = b->name.rfind('/');
    by_dir["/" + (slash == std::string::npos ? "" : b->name.substr(0, slash))].push_back(b);
  }
  bool all = true;
  for (const auto& [dir, items] : by_dir) {
    auto rows = table.QueryPartition(table_name, PartitionKeyForDirectory(dir));
    if (!rows.ok()) return false;
    std::map<std::string, std::string> betag;
    for (const Entity& e : *rows) {
      if (const std::string* v = e.GetString("betag")) betag[e.row_key] = *v;
    }
    for (const BlobItem* b : items) {
      const size_t slash = b->name.rfind('/');
      auto it = betag.find(RowKeyForName(b->name.substr(slash == std::string::npos ? 0 : slash + 1)));
      if (it != betag.end() && it->second == b->properties.etag) {
        committed->insert(b->name);
      } else {
        all = false;
      }
    }
  }
  return all;
}

// What a wait expects under PREFIX: every (relative name, size) of `files`,
// or, when `files` is empty, `count` blobs holding `bytes` in all.
struct Expected {
  std::map<std::string, uint64_t> files;
  uint64_t count = 0, bytes = 0;
};

// Polls until the blobs under prefix meet `want` (and, with `committed`, the
// mount's entries name them); 0 when met, 1 at the deadline or after 30 s
// without progress (a mount that lost files: rclone under rsync's renames).
int PollUntil(const StorageAccount& account, const std::string& container,
              const std::string& prefix, const Expected& want, int timeout_s, bool committed,
              std::chrono::milliseconds every) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  auto table = MakeAzureTableClient(account);
  const std::string table_name = DefaultTableName(container);
  std::set<std::string> done;
  std::string state = "nothing listed";
  size_t progress = 0;
  auto progressed = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() < deadline &&
         std::chrono::steady_clock::now() - progressed < std::chrono::seconds(30)) {
    auto listing = List(account, container, prefix);
    if (listing.ok()) {
      std::vector<const BlobItem*> matched;
      uint64_t sum = 0;
      for (const BlobItem& b : listing->blobs) {
        if (want.files.empty()) {
          matched.push_back(&b);
          sum += b.properties.size;
          continue;
        }
        auto it = want.files.find(b.name.substr(prefix.size()));
        if (it != want.files.end() && it->second == b.properties.size) matched.push_back(&b);
      }
      const bool uploaded = want.files.empty()
                                ? matched.size() >= want.count && sum >= want.bytes
                                : matched.size() == want.files.size();
      state = std::to_string(matched.size()) + " blobs as expected";
      if (matched.size() + done.size() > progress) {
        progress = matched.size() + done.size();
        progressed = std::chrono::steady_clock::now();
      }
      if (uploaded && committed) {
        if (EntriesCommitted(*table, table_name, matched, &done)) return 0;
        state += ", " + std::to_string(done.size()) + " of them committed";
      } else if (uploaded) {
        return 0;
      }
    }
    std::this_thread::sleep_for(every);
  }
  std::cerr << "stampfs_bench: wait " << prefix << ": " << state << ", given up\n";
  return 1;
}

bool CommittedArg(const std::vector<std::string>& a, size_t at) {
  return a.size() > at && a[at] == "committed";
}

int Wait(const StorageAccount& account, const std::vector<std::string>& a) {
  Expected want;
  want.count = std::stoull(a[2]);
  want.bytes = std::stoull(a[3]);
  return PollUntil(account, a[0], a[1], want, std::stoi(a[4]), CommittedArg(a, 5),
                   std::chrono::milliseconds(200));
}

int WaitTree(const StorageAccount& account, const std::vector<std::string>& a) {
  Expected want;
  const std::filesystem::path root = a[2];
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) {
      want.files[std::filesystem::relative(e.path(), root).string()] = e.file_size();
    }
  }
  return PollUntil(account, a[0], a[1], want, std::stoi(a[3]), CommittedArg(a, 4),
                   std::chrono::milliseconds(100));
}

int DeletePrefix(const StorageAccount& account, const std::vector<std::string>& a) {
  auto listing = List(account, a[0], a[1]);
  if (!listing.ok()) return Fail("list " + a[1], listing.status());
  const auto& blobs = listing->blobs;
  Status s = ForEach(account, blobs.size(), std::stoi(a[2]), [&](BlobStore& b, uint64_t i) {
    Status d = b.Delete(a[0], blobs[i].name, Condition::None());
    return d.Is(Code::kNotFound) ? Status() : d;
  });
  return s.ok() ? 0 : Fail("delete-prefix", s);
}

// Account SAS (signed version 2019-12-12, before the encryption-scope field):
// blob service, every resource type, every permission, valid for a day.
int Sas(const StorageAccount& account) {
  auto key = Base64Decode(account.account_key);
  if (!key.ok()) return Fail("account key", key.status());
  char expiry[32];
  const std::time_t later = std::time(nullptr) + 86400;
  std::strftime(expiry, sizeof expiry, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&later));
  const std::string sv = "2019-12-12", ss = "b", srt = "sco", sp = "rwdlacup", spr = "https,http";
  const std::string to_sign = account.account_name + "\n" + sp + "\n" + ss + "\n" + srt + "\n\n" +
                              expiry + "\n\n" + spr + "\n" + sv + "\n";
  const std::string sig = Base64Encode(HmacSha256(*key, to_sign));
  std::cout << "sv=" << sv << "&ss=" << ss << "&srt=" << srt << "&sp=" << sp
            << "&se=" << UrlEncode(expiry) << "&spr=" << UrlEncode(spr) << "&sig=" << UrlEncode(sig)
            << "\n";
  return 0;
}

int FsCreate(const std::vector<std::string>& a) {
  const uint64_t count = std::stoull(a[1]);
  const std::string data(std::stoull(a[2]), 'x');
  for (uint64_t i = 0; i < count; ++i) {
    const std::string path = a[0] + "/" + Leaf(i);
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return std::perror(path.c_str()), 1;
    bool ok = write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size());
    if (close(fd) != 0 || !ok) return std::perror(path.c_str()), 1;
  }
  return 0;
}

int FsStat(const std::vector<std::string>& a) {
  const uint64_t count = std::stoull(a[1]);
  struct stat st;
  for (uint64_t i = 0; i < count; ++i) {
    const std::string path = a[0] + "/" + Leaf(i);
    if (lstat(path.c_str(), &st) != 0) return std::perror(path.c_str()), 1;
  }
  return 0;
}

int FsRandRead(const std::vector<std::string>& a) {
  const uint64_t bytes = std::stoull(a[2]);
  int fd = open(a[0].c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::perror(a[0].c_str()), 1;
  struct stat st;
  fstat(fd, &st);
  std::vector<char> buf(bytes);
  for (uint64_t at : RandomOffsets(static_cast<uint64_t>(st.st_size), std::stoull(a[1]), bytes,
                                   std::stoull(a[3]))) {
    if (pread(fd, buf.data(), bytes, static_cast<off_t>(at)) != static_cast<ssize_t>(bytes)) {
      std::perror(a[0].c_str());
      close(fd);
      return 1;
    }
  }
  close(fd);
  return 0;
}

int Run(const std::string& cmd, const std::vector<std::string>& a) {
  if (cmd == "fs-create" && a.size() == 3) return FsCreate(a);
  if (cmd == "fs-stat" && a.size() == 2) return FsStat(a);
  if (cmd == "fs-randread" && a.size() == 4) return FsRandRead(a);
  auto account = Account();
  if (!account.ok()) return Fail("connection string", account.status());
  if (cmd == "put-many" && a.size() == 5) return PutMany(*account, a);
  if (cmd == "put-tree" && a.size() == 4) return PutTree(*account, a);
  if (cmd == "head-many" && a.size() == 4) return HeadMany(*account, a);
  if (cmd == "randread" && a.size() == 6) return RandRead(*account, a);
  if (cmd == "get-many" && a.size() == 4) return GetMany(*account, a);
  if (cmd == "wait" && (a.size() == 5 || (a.size() == 6 && CommittedArg(a, 5)))) {
    return Wait(*account, a);
  }
  if (cmd == "wait-tree" && (a.size() == 4 || (a.size() == 5 && CommittedArg(a, 4)))) {
    return WaitTree(*account, a);
  }
  if (cmd == "delete-prefix" && a.size() == 3) return DeletePrefix(*account, a);
  if (cmd == "batch-many" && a.size() == 3) return BatchMany(*account, a);
  if (cmd == "sas" && a.empty()) return Sas(*account);
  if (cmd == "list" && a.size() == 2) {
    auto listing = List(*account, a[0], a[1]);
    if (!listing.ok()) return Fail("list " + a[1], listing.status());
    std::cout << listing->blobs.size() << "\n";
    return 0;
  }
  if (cmd == "create" && a.size() == 1) {
    Status s = Blobs(*account)->CreateContainer(a[0]);
    return s.ok() || s.Is(Code::kAlreadyExists) ? 0 : Fail("create " + a[0], s);
  }
  return Usage();
}

}  // namespace
}  // namespace stampfs

int main(int argc, char** argv) {
  if (argc < 2) return stampfs::Usage();
  try {
    return stampfs::Run(argv[1], std::vector<std::string>(argv + 2, argv + argc));
  } catch (const std::exception& e) {  // std::stoull on a bad number
    std::cerr << "stampfs_bench: " << e.what() << "\n";
    return 2;
  }
}
