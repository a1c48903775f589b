// stampfs_blobrw: raw blob uploads and downloads with the storage client (no
// mount), timed, for side-by-side throughput numbers in tests/e2e/data_path.sh.
//
//   stampfs_blobrw put CONTAINER BLOB FILE            one Put Blob streamed from FILE
//   stampfs_blobrw get CONTAINER BLOB FILE            one Get Blob streamed into FILE
//   stampfs_blobrw putblocks CONTAINER BLOB FILE [MiB] [THREADS]
//       Put Block of MiB-sized blocks (default 4) by THREADS workers (default 4),
//       then Put Block List
//   stampfs_blobrw getranges CONTAINER BLOB FILE [MiB] [THREADS]
//       ranged GETs of MiB-sized pieces by THREADS workers
//
// Prints one line: "OP BYTES bytes SECONDS s MIBPS MiB/s". The connection
// string comes from $AZURE_STORAGE_CONNECTION_STRING, else Azurite's.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "storage/azure_clients.h"
#include "storage/connection_string.h"

namespace stampfs {
namespace {

int Usage() {
  std::cerr << "usage: stampfs_blobrw put|get|putblocks|getranges CONTAINER BLOB FILE [MiB] "
               "[THREADS]\n";
  return 2;
}

HttpBody FileBody(int fd, uint64_t offset, uint64_t size) {
  HttpBody body;
  body.size = size;
  body.reader = [fd, offset](uint64_t at, char* out, size_t len) -> size_t {
    ssize_t n = pread(fd, out, len, static_cast<off_t>(offset + at));
    return n < 0 ? 0 : static_cast<size_t>(n);
  };
  return body;
}

BodySink FileSink(int fd, uint64_t offset) {
  return [fd, offset](uint64_t at, const char* data, size_t len) {
    return pwrite(fd, data, len, static_cast<off_t>(offset + at)) == static_cast<ssize_t>(len);
  };
}

// Runs `work(i)` for i in [0, count) on `threads` workers; the first error wins.
Status Parallel(uint64_t count, int threads, const std::function<Status(uint64_t)>& work) {
  std::atomic<uint64_t> next{0};
  std::mutex mu;
  Status first;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (uint64_t i; (i = next++) < count;) {
        Status s = work(i);
        std::lock_guard<std::mutex> lock(mu);
        if (!s.ok() && first.ok()) first = s;
      }
    });
  }
  for (auto& t : pool) t.join();
  return first;
}

int Run(const std::vector<std::string>& args) {
  if (args.size() < 4) return Usage();
  const std::string op = args[0], container = args[1], blob = args[2], path = args[3];
  const uint64_t piece = (args.size() > 4 ? std::strtoull(args[4].c_str(), nullptr, 10) : 4) << 20;
  const int threads = args.size() > 5 ? std::atoi(args[5].c_str()) : 4;
  const char* env = std::getenv("AZURE_STORAGE_CONNECTION_STRING");
  auto account = ParseConnectionString(env && *env ? env : kDevelopmentConnectionString);
  if (!account.ok()) return std::cerr << account.status().ToString() << "\n", 1;
  ClientOptions o;
  o.retry.attempt_timeout = std::chrono::seconds(120);
  o.retry.total_deadline = std::chrono::seconds(300);
  auto store = MakeAzureBlobClient(*account, o);
  const bool upload = op == "put" || op == "putblocks";
  int fd = upload ? open(path.c_str(), O_RDONLY | O_CLOEXEC)
                  : open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return std::perror(path.c_str()), 1;
  uint64_t size = 0;
  if (upload) {
    struct stat st;
    fstat(fd, &st);
    size = static_cast<uint64_t>(st.st_size);
  } else {
    auto props = store->GetProperties(container, blob);
    if (!props.ok()) return std::cerr << props.status().ToString() << "\n", 1;
    size = props->size;
  }
  const uint64_t pieces = (size + piece - 1) / piece;
  const auto start = std::chrono::steady_clock::now();
  Status s;
  if (op == "put") {
    s = store->Put(container, blob, FileBody(fd, 0, size), {}, Condition::None()).status();
  } else if (op == "get") {
    s = store->Read(container, blob, 0, 0, Condition::None(), FileSink(fd, 0)).status();
  } else if (op == "putblocks") {
    s = Parallel(pieces, threads, [&](uint64_t i) {
      return store->PutBlock(container, blob, BlockIdFor(i),
                             FileBody(fd, i * piece, std::min(piece, size - i * piece)));
    });
    std::vector<BlockRef> refs;
    for (uint64_t i = 0; i < pieces; ++i)
      refs.push_back({BlockIdFor(i), BlockRef::Source::kUncommitted});
    if (s.ok()) s = store->PutBlockList(container, blob, refs, {}, Condition::None()).status();
  } else if (op == "getranges") {
    s = Parallel(pieces, threads, [&](uint64_t i) {
      return store
          ->Read(container, blob, i * piece, std::min(piece, size - i * piece), Condition::None(),
                 FileSink(fd, i * piece))
          .status();
    });
  } else {
    return Usage();
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  close(fd);
  if (!s.ok()) return std::cerr << op << ": " << s.ToString() << "\n", 1;
  std::printf("%s %llu bytes %.2f s %.1f MiB/s\n", op.c_str(),
              static_cast<unsigned long long>(size), secs,
              secs > 0 ? size / 1048576.0 / secs : 0.0);
  return 0;
}

}  // namespace
}  // namespace stampfs

int main(int argc, char** argv) {
  return stampfs::Run(std::vector<std::string>(argv + 1, argv + argc));
}
