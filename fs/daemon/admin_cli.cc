#include "fs/daemon/admin_cli.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "fs/admin/fsck.h"
#include "fs/admin/import.h"
#include "fs/base/log.h"
#include "fs/daemon/mount_config.h"
#include "fs/daemon/mount_options.h"
#include "storage/azure_clients.h"
#include "storage/connection_string.h"

namespace stampfs {

namespace {

struct AdminArgs {
  std::string container;
  std::string table;
  std::string connection_string_file;
  bool flag = false;         // --refresh (import) / --repair (fsck)
  bool dir_markers = false;  // fsck --dir-markers
};

Result<AdminArgs> ParseAdminArgs(const std::vector<std::string>& args, const std::string& flag) {
  AdminArgs a;
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& s = args[i];
    if (s == flag) {
      a.flag = true;
    } else if (s == "--dir-markers" && flag == "--repair") {
      a.dir_markers = true;
    } else if (s == "--table" || s == "--connection-string-file") {
      if (i + 1 >= args.size()) return Status(Code::kInvalidArgument, s + " needs a value");
      (s == "--table" ? a.table : a.connection_string_file) = args[++i];
    } else if (!s.empty() && s[0] == '-') {
      return Status(Code::kInvalidArgument, "unknown flag " + s);
    } else {
      positional.push_back(s);
    }
  }
  if (positional.size() != 1) return Status(Code::kInvalidArgument, "expected one CONTAINER");
  a.container = positional[0];
  STAMPFS_RETURN_IF_ERROR(CheckContainerName(a.container));
  if (a.table.empty()) a.table = DefaultTableName(a.container);
  return a;
}

struct Clients {
  std::unique_ptr<BlobStore> blobs;
  std::unique_ptr<TableStore> table;
  std::string describe;
};

Result<Clients> Connect(const AdminArgs& a) {
  std::string text = kDevelopmentConnectionString;
  if (!a.connection_string_file.empty()) {
    auto t = ReadConnectionStringFile(a.connection_string_file);
    STAMPFS_RETURN_IF_ERROR(t);
    text = *t;
  } else if (const char* env = std::getenv("AZURE_STORAGE_CONNECTION_STRING"); env && *env) {
    text = env;
  }
  auto account = ParseConnectionString(text);
  STAMPFS_RETURN_IF_ERROR(account);
  // No key or SAS: Entra ID, auth=auto from the environment.
  STAMPFS_RETURN_IF_ERROR(SignIn(MountOptions{}, &*account));
  ClientOptions client = CommandClientOptions();
  return Clients{MakeAzureBlobClient(*account, client), MakeAzureTableClient(*account, client),
                 account->Describe()};
}

int Usage(const std::string& why) {
  std::cerr << "stampfs: " << why << "\n" << AdminUsage();
  return 2;
}

// A progress line on a terminal, rewritten at most ten times a second.
class ProgressLine {
 public:
  ProgressLine() : tty_(isatty(STDERR_FILENO) == 1), start_(Clock::now()), last_(start_) {}
  ~ProgressLine() { Clear(); }

  void Update(const ImportProgress& p) {
    if (!tty_) return;
    const auto now = Clock::now();
    const double secs = std::chrono::duration<double>(now - start_).count();
    if (p.phase == ImportProgress::Phase::kWriting && writing_start_ == 0) writing_start_ = secs;
    if (now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    char line[160];
    switch (p.phase) {
      case ImportProgress::Phase::kListing:
        std::snprintf(line, sizeof line, "listing: %llu blobs (%.0f/s)",
                      static_cast<unsigned long long>(p.blobs_listed),
                      p.blobs_listed / std::max(secs, 0.001));
        break;
      case ImportProgress::Phase::kReading:
        std::snprintf(line, sizeof line, "reading the table: %llu rows",
                      static_cast<unsigned long long>(p.rows_read));
        break;
      case ImportProgress::Phase::kWriting:
        std::snprintf(line, sizeof line, "writing: %llu of %llu entries (%.0f/s)",
                      static_cast<unsigned long long>(p.ops_written),
                      static_cast<unsigned long long>(p.ops_total),
                      p.ops_written / std::max(secs - writing_start_, 0.001));
        break;
    }
    std::fprintf(stderr, "\r%s\033[K", line);
    shown_ = true;
  }

  void Clear() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
    shown_ = false;
  }

 private:
  using Clock = std::chrono::steady_clock;
  bool tty_;
  bool shown_ = false;
  Clock::time_point start_, last_;
  double writing_start_ = 0;
};

std::string ImportSummary(const std::string& container, const ImportReport& r) {
  std::string s = "import " + container + ": " + std::to_string(r.blobs) + " blobs; created " +
                  std::to_string(r.files_created) + " files and " + std::to_string(r.dirs_created) +
                  " directories; " + std::to_string(r.unchanged) + " entries unchanged";
  if (r.updated) s += "; " + std::to_string(r.updated) + " updated";
  if (r.removed) s += "; " + std::to_string(r.removed) + " removed";
  if (r.stale)
    s += "; " + std::to_string(r.stale) + " differ from their blobs (--refresh updates them)";
  if (!r.problems.empty()) s += "; " + std::to_string(r.problems.size()) + " blobs not imported";
  if (r.failed_directories) {
    s += "; writes failed in " + std::to_string(r.failed_directories) +
         " directories (run it again)";
  }
  return s;
}

}  // namespace

ClientOptions CommandClientOptions() {
  ClientOptions client;
  client.retry.attempt_timeout = std::chrono::seconds(20);
  client.retry.total_deadline = std::chrono::seconds(45);
  client.breaker.enabled = true;
  return client;
}

std::string AdminUsage() {
  return "usage: stampfs import CONTAINER [--refresh] [--table NAME] "
         "[--connection-string-file FILE]\n"
         "       stampfs fsck CONTAINER [--repair] [--dir-markers] [--table NAME] "
         "[--connection-string-file FILE]\n";
}

bool WantsHelp(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(),
                     [](const std::string& a) { return a == "--help" || a == "-h"; });
}

int Help(const char* what) {
  std::cout << what << "\n\n"
            << AdminUsage()
            << "The account: $AZURE_STORAGE_CONNECTION_STRING, or --connection-string-file, "
               "else UseDevelopmentStorage=true (Azurite). --table defaults to the mount's "
               "(fs + the container name without hyphens).\n";
  return 0;
}

int ImportCommand(const std::vector<std::string>& args) {
  if (WantsHelp(args)) {
    return Help(
        "stampfs import: adds table entries for the blobs other tools wrote to CONTAINER, so a "
        "mount shows them (--refresh also updates entries whose blob changed and removes entries "
        "whose blob is gone). Safe to run while the container is mounted.");
  }
  auto a = ParseAdminArgs(args, "--refresh");
  if (!a.ok()) return Usage(a.status().message());
  auto c = Connect(*a);
  if (!c.ok()) return Usage(c.status().message());
  ProgressLine progress;
  ImportOptions o;
  o.container = a->container;
  o.table = a->table;
  o.refresh = a->flag;
  o.uid = getuid();
  o.gid = getgid();
  o.progress = [&](const ImportProgress& p) { progress.Update(p); };
  auto r = Importer(*c->table, *c->blobs, o).Run();
  progress.Clear();
  if (!r.ok()) {
    std::cerr << "stampfs import: " << a->container << " (" << c->describe
              << "): " << r.status().ToString() << "\n";
    return 2;
  }
  for (const ImportProblem& p : r->problems) {
    std::cout << "not imported: " << p.blob << ": " << p.reason << "\n";
  }
  for (const std::string& path : r->removed_paths) {
    std::cout << "removed: " << path << " (its blob is gone)\n";
  }
  for (const std::string& e : r->errors) std::cout << "write failed: " << e << "\n";
  std::cout << ImportSummary(a->container, *r) << "\n";
  return r->clean() ? 0 : 1;
}

int FsckCommand(const std::vector<std::string>& args) {
  if (WantsHelp(args)) {
    return Help(
        "stampfs fsck: checks that CONTAINER's table and blobs agree (entries, directories, "
        "inode numbers, hard links, unfinished renames) and lists what does not; --repair fixes "
        "what can be fixed without losing data. Exit status 0: clean (or all repaired), 1: "
        "findings left, 2: could not check.");
  }
  auto a = ParseAdminArgs(args, "--repair");
  if (!a.ok()) return Usage(a.status().message());
  auto c = Connect(*a);
  if (!c.ok()) return Usage(c.status().message());
  FsckOptions o;
  o.container = a->container;
  o.table = a->table;
  o.repair = a->flag;
  o.uid = getuid();
  o.dir_markers = a->dir_markers;
  o.gid = getgid();
  auto r = Fsck(*c->table, *c->blobs, o).Run();
  if (!r.ok()) {
    std::cerr << "stampfs fsck: " << a->container << " (" << c->describe
              << "): " << r.status().ToString() << "\n";
    return 2;
  }
  for (const FsckFinding& f : r->findings) {
    std::cout << FsckKindName(f.kind) << ": " << f.where << ": " << f.detail;
    if (f.repaired) {
      std::cout << " -> repaired: " << f.repair;
    } else if (!f.repair.empty()) {
      std::cout << " -> not repaired: " << f.repair;
    }
    std::cout << "\n";
  }
  const uint64_t left = r->unrepaired();
  std::cout << "fsck " << a->container << ": " << r->rows << " rows, " << r->blobs << " blobs, "
            << r->directories << " directories, " << r->files << " files: ";
  if (r->findings.empty()) {
    std::cout << "clean\n";
  } else {
    std::cout << r->findings.size() << " problems, " << (r->findings.size() - left) << " repaired, "
              << left << " left" << (o.repair || left == 0 ? "" : " (--repair repairs what it can)")
              << "\n";
  }
  return left == 0 ? 0 : 1;
}

Status AutoImportIfNeeded(TableStore& table, BlobStore& blobs, const std::string& container,
                          const std::string& table_name, bool lazily) {
  auto needed = Importer::ShouldAutoImport(table, blobs, container, table_name);
  STAMPFS_RETURN_IF_ERROR(needed);
  if (!*needed) return Status::Ok();
  if (lazily) {
    auto ours = Importer::HoldsStampfsBlobs(blobs, container);
    STAMPFS_RETURN_IF_ERROR(ours);
    if (!*ours) {
      LogInfo("container " + container + " has blobs the table does not know: each directory " +
              "is adopted when it is first read (stampfs import adopts them all at once)");
      return Status::Ok();
    }
  }
  LogInfo("container " + container + " has blobs the table does not know: importing them");
  ImportOptions o;
  o.container = container;
  o.table = table_name;
  o.uid = getuid();
  o.gid = getgid();
  auto r = Importer(table, blobs, o).Run();
  STAMPFS_RETURN_IF_ERROR(r);
  for (const ImportProblem& p : r->problems) {
    LogWarning("not imported: " + p.blob + ": " + p.reason);
  }
  LogInfo(ImportSummary(container, *r));
  if (!r->errors.empty()) {
    return Status(Code::kInternal,
                  r->errors.front() + " (and " + std::to_string(r->errors.size() - 1) + " more)");
  }
  return Status::Ok();
}

}  // namespace stampfs
