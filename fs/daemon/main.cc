// stampfs: mount an Azure Storage container as a local file system.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cache/block_cache.h"
#include "cache/meta_cache.h"
#include "fs/admin/change_events.h"
#include "fs/admin/discovery.h"
#include "fs/admin/foreign_view.h"
#include "fs/admin/overlay_table.h"
#include "fs/base/log.h"
#include "fs/daemon/admin_cli.h"
#include "fs/daemon/control_socket.h"
#include "fs/daemon/mount_config.h"
#include "fs/daemon/mount_options.h"
#include "fs/daemon/stat_cli.h"
#include "fs/data/file_data.h"
#include "fs/fuse/fuse_ops.h"
#include "fs/fuse/op_counters.h"
#include "fs/namespace/namespace.h"
#include "fs/namespace/rename_view.h"
#include "storage/azure_clients.h"
#include "storage/connection_string.h"
#include "storage/sas.h"
#include "storage/stats.h"

namespace stampfs {
namespace {

// Threads libfuse may run operations on (fs/fuse/interrupts.h: calls waiting on
// the service each hold one, and one must be left to read interrupts).
constexpr unsigned kMaxFuseThreads = 64;
// `stampfs unmount` waits this long at most for the daemon's commits (the
// largest shutdown_timeout, and then some for a request in flight).
constexpr int kMaxUnmountWaitMs = (3600 + 120) * 1000;

constexpr const char* kUsage =
    "usage: stampfs mount [options] CONTAINER MOUNTPOINT\n"
    "       stampfs unmount MOUNTPOINT\n"
    "       stampfs stat [--json] MOUNTPOINT\n"
    "       stampfs import CONTAINER [--refresh] [--table NAME] [--connection-string-file FILE]\n"
    "       stampfs fsck CONTAINER [--repair] [--table NAME] [--connection-string-file FILE]\n"
    "       stampfs --help | mount --help | --version\n";

int Fail(const std::string& message) {
  std::cerr << "stampfs: " << message << "\n";
  return 1;
}

// What to try next, by the kind of failure.
std::string HintFor(const Status& s) {
  switch (s.code()) {
    case Code::kAuth:
      // The service's answers carry their advice already (storage/azure_errors.cc).
      if (s.message().find("authentication failed") != std::string::npos ||
          s.message().find("permission denied") != std::string::npos) {
        return "";
      }
      return " (check the account name and key, the SAS token's permissions and expiry, or the "
             "Entra ID identity's roles on the account)";
    case Code::kTransport:
    case Code::kTimeout:
      return " (is the endpoint reachable? for the emulator: scripts/azurite start)";
    default:
      return "";
  }
}

// Undoes mountinfo's octal escapes (\040 for a space, ...).
std::string UnescapeMountField(const std::string& field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      out.push_back(static_cast<char>(std::stoi(field.substr(i + 1, 3), nullptr, 8)));
      i += 3;
    } else {
      out.push_back(field[i]);
    }
  }
  return out;
}

// The file system type mounted at `dir` ("fuse.stampfs", "ext4"), the
// last mount there; "" when none. A dead daemon's mount point cannot be
// resolved (ENOTCONN): its absolute path is compared as written.
std::string MountTypeAt(const std::string& dir) {
  std::error_code ec;
  std::string real = std::filesystem::canonical(dir, ec).string();
  if (ec) real = std::filesystem::absolute(dir, ec).lexically_normal().string();
  if (real.size() > 1 && real.back() == '/') real.pop_back();
  std::ifstream in("/proc/self/mountinfo");
  std::string line, type;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string w; fields >> w;) f.push_back(w);
    auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 5 || dash == f.end() || dash + 1 == f.end()) continue;
    if (UnescapeMountField(f[4]) == real) type = *(dash + 1);
  }
  return type;
}

// True when `dir` is already the mount point of a stampfs mount (whoever
// serves it: a daemon of another user has its control socket elsewhere).
bool IsStampfsMountPoint(const std::string& dir) { return MountTypeAt(dir) == "fuse.stampfs"; }

// Holds an exclusive lock on the cache directory for the life of the mount.
Result<int> LockCacheDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir + "/work", ec);
  if (ec) return Status(Code::kInvalidArgument, "cache_dir " + dir + ": " + ec.message());
  int fd = open((dir + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Status(Code::kInvalidArgument, "cache_dir " + dir + ": " + strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return Status(Code::kConflict, "cache_dir " + dir + " is in use by another stampfs mount");
  }
  return fd;
}

// Closed files the commit queue may hold: each keeps a cache file open, so
// the descriptor limit is raised to its hard maximum and half of it is left
// to the queue (the rest: FUSE, sockets, SQLite, open files).
size_t QueueBound() {
  struct rlimit lim;
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return 256;
  if (lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
    getrlimit(RLIMIT_NOFILE, &lim);
  }
  const uint64_t fds = lim.rlim_cur == RLIM_INFINITY ? (1u << 20) : lim.rlim_cur;
  return static_cast<size_t>(std::clamp<uint64_t>(fds / 2, 64, 4096));
}

std::string FuseOptionString(const MountOptions& o) {
  std::string opts = "default_permissions,fsname=stampfs:" + o.container + ",subtype=stampfs";
  if (o.allow_other) opts += ",allow_other";
  if (o.read_only) opts += ",ro";
  for (const std::string& k : o.kernel_options) opts += "," + k;
  return opts;
}

std::chrono::milliseconds ShutdownBudget(const MountOptions& o) {
  return std::chrono::milliseconds(static_cast<int64_t>(o.shutdown_timeout * 1000));
}

// The answer to `stampfs unmount`'s "commit": everything committed ("ok"),
// else "left N", the cache directory and the N paths, one a line.
std::string CommitForUnmount(FileData& data, const MountOptions& o) {
  const std::vector<std::string> left = data.Drain(ShutdownBudget(o));
  if (left.empty()) return "ok\n";
  std::string out = "left " + std::to_string(left.size()) + "\n" + o.cache_dir + "\n";
  for (const std::string& path : left) out += path + "\n";
  return out;
}

// SIGTERM or umount may end the loop with changes not committed (queued,
// retried through an outage, or kept after a failed close): commit them
// now, retrying for at most shutdown_timeout. A commit stuck on an
// unreachable backend is not waited for: the process ends at once
// (skipping destructors that would wait for it). What is left stays in the
// dirty journal (SQLite, durable) for the next mount, named in the log;
// the exit status is 1 then.
bool CommitAtShutdown(FileData& data, const MountOptions& o) {
  const auto budget = ShutdownBudget(o);
  auto result = std::make_shared<std::promise<std::vector<std::string>>>();
  auto left = result->get_future();
  std::thread([&data, budget, result] { result->set_value(data.Drain(budget)); }).detach();
  const std::string journal =
      "they stay in the cache journal of " + o.cache_dir + " and are committed by the next mount";
  if (left.wait_for(budget + std::chrono::seconds(1)) != std::future_status::ready) {
    LogError("shutdown: commits still running after shutdown_timeout (" +
             std::to_string(budget.count() / 1000) + " s): exiting; " + journal);
    std::_Exit(1);
  }
  const std::vector<std::string> paths = left.get();
  if (paths.empty()) return true;
  LogError("shutdown: " + std::to_string(paths.size()) + " file(s) with changes not committed; " +
           journal);
  for (size_t i = 0; i < paths.size() && i < 50; ++i) LogError("  not committed: " + paths[i]);
  if (paths.size() > 50) LogError("  and " + std::to_string(paths.size() - 50) + " more");
  return false;
}

// -o events: the consumer of the container's blob events, polling on a
// thread of its own; each event is applied by `foreign` (which tells the
// namespace and the kernel what changed). The queue must exist.
Result<std::unique_ptr<ChangeEvents>> StartEvents(const MountOptions& o, QueueStore& queue,
                                                  ForeignView& foreign) {
  auto peek = queue.PeekMessages(o.events_queue, 1);
  if (!peek.ok()) {
    return Status(peek.status().code(),
                  "events queue " + o.events_queue + ": " + peek.status().ToString() +
                      (peek.status().Is(Code::kNotFound)
                           ? ": create it and the Event Grid subscription that fills it "
                             "(docs/configuration.md, \"Change events\")"
                           : HintFor(peek.status())));
  }
  ChangeEventOptions eo;
  eo.queue = o.events_queue;
  eo.container = o.container;
  auto events = std::make_unique<ChangeEvents>(
      queue, eo, [&foreign](const BlobEvent& ev) { return foreign.ApplyEvent(ev); });
  Status poison = events->Prepare();
  if (!poison.ok()) {
    LogWarning("events: queue " + o.events_queue + "-poison not created (" + poison.ToString() +
               "): events that keep failing stay in " + o.events_queue);
  }
  events->Start();
  LogInfo("applying blob events from queue " + o.events_queue);
  ChangeEvents* e = events.get();
  RegisterGauge("events.applied", [e] { return e->stats().applied; });
  RegisterGauge("events.retried", [e] { return e->stats().retried; });
  RegisterGauge("events.poisoned", [e] { return e->stats().poisoned; });
  RegisterGauge("events.ignored", [e] { return e->stats().ignored; });
  return events;
}

// Daemon mode forks first, before anything starts a thread (libcurl, SQLite,
// the upload and fetch workers: a fork keeps only the calling thread, so a
// daemon forked later had none and its writes hung). The parent waits on a
// pipe: one byte once the file system is mounted (exit 0), or end of file
// when the child failed (exit with the child's status). The child is the
// daemon: it keeps the terminal's stderr for errors until it is mounted.
class Daemon {
 public:
  // Returns in the child (and at once with -f); in the parent it exits.
  static Daemon Start(bool foreground) {
    if (foreground) return Daemon(-1);
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) std::exit(Fail(std::string("pipe: ") + strerror(errno)));
    pid_t pid = fork();
    if (pid < 0) std::exit(Fail(std::string("fork: ") + strerror(errno)));
    if (pid > 0) {
      close(pipefd[1]);
      char byte = 0;
      ssize_t n;
      do n = read(pipefd[0], &byte, 1);
      while (n < 0 && errno == EINTR);
      if (n == 1) std::exit(0);
      int status = 0;
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      std::exit(WIFEXITED(status) && WEXITSTATUS(status) != 0 ? WEXITSTATUS(status) : 1);
    }
    close(pipefd[0]);
    setsid();
    return Daemon(pipefd[1]);
  }

  // The mount is up: release the parent, leave the terminal.
  void Mounted() {
    if (ready_fd_ < 0) return;
    LogToSyslog();
    if (chdir("/") != 0) LogWarning(std::string("chdir /: ") + strerror(errno));
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
      dup2(null, 0);
      dup2(null, 1);
      dup2(null, 2);
      if (null > 2) close(null);
    }
    char byte = 0;
    if (write(ready_fd_, &byte, 1) != 1) LogWarning(std::string("mount: ") + strerror(errno));
    close(ready_fd_);
    ready_fd_ = -1;
  }

 private:
  explicit Daemon(int ready_fd) : ready_fd_(ready_fd) {}
  int ready_fd_;
};

int Serve(const MountOptions& o, const std::string& control_path, Namespace& ns, FileData& data,
          TableStore& table, BlobStore& blobs, Daemon& daemon) {
  FsContext ctx{&ns, &data, o.attr_timeout, o.read_only};
  // -o discover: imports foreign blobs on a thread of its own, started after
  // daemonizing (a fork keeps no threads), stopped when serving ends.
  std::unique_ptr<Discovery> discovery;
  std::vector<std::string> argv_s = {"stampfs", "-o", FuseOptionString(o)};
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());
  fuse_session* se =
      fuse_session_new(&args, CountedOperations(FuseOperations()), sizeof(fuse_lowlevel_ops), &ctx);
  if (!se) return Fail("cannot create the FUSE session");
  // Attributes only (offset -1): no page lock is taken, so a read or open
  // handler may call it for its own inode.
  data.OnKernelStale([se](uint64_t ino) { fuse_lowlevel_notify_inval_inode(se, ino, -1, 0); });
  int rc = 1;
  if (fuse_set_signal_handlers(se) == 0) {
    if (fuse_session_mount(se, o.mountpoint.c_str()) == 0) {
      {
        daemon.Mounted();
        LogInfo("mounted container " + o.container + " at " + o.mountpoint);
        auto control = ControlSocket::Listen(
            control_path, {{"commit", [&data, &o] { return CommitForUnmount(data, o); }}});
        if (!control.ok()) LogWarning("stampfs stat will not work: " + control.status().message());
        if (o.discover > 0 && !o.read_only) {
          discovery = std::make_unique<Discovery>(table, blobs, o.container, o.table, o.discover);
        }
        fuse_loop_config* cfg = fuse_loop_cfg_create();
        fuse_loop_cfg_set_clone_fd(cfg, 0);
        fuse_loop_cfg_set_idle_threads(cfg, 16);
        // libfuse's default of 10 threads: 10 calls waiting on the service
        // would leave none to read the kernel's interrupts (fs/fuse/interrupts.h).
        fuse_loop_cfg_set_max_threads(cfg, kMaxFuseThreads);
        // A signal (SIGTERM, SIGINT, SIGHUP) ends the loop with its number:
        // an orderly stop.
        int loop = fuse_session_loop_mt(se, cfg);
        fuse_loop_cfg_destroy(cfg);
        rc = loop == 0 || loop == SIGTERM || loop == SIGINT || loop == SIGHUP ? 0 : 1;
        if (loop > 0) LogInfo("signal " + std::to_string(loop) + ": unmounting");
      }
      fuse_session_unmount(se);
      if (!CommitAtShutdown(data, o)) rc = 1;
    } else {
      Fail("cannot mount at " + o.mountpoint);
    }
    fuse_remove_signal_handlers(se);
  }
  data.OnKernelStale(nullptr);
  fuse_session_destroy(se);
  LogInfo("unmounted " + o.mountpoint);
  return rc;
}

int Mount(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << MountUsage();
      return 0;
    }
  }
  auto parsed = ParseMountArgs(args);
  if (!parsed.ok()) return Fail(parsed.status().message() + "\n" + kUsage);
  MountOptions o = *parsed;
  LogLevel level;
  if (!ParseLogLevel(o.log_level, &level)) return Fail("unknown log_level " + o.log_level);
  SetLogLevel(level);
  struct stat st;
  if (stat(o.mountpoint.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Fail("mountpoint " + o.mountpoint + " is not a directory");
  }
  if (access("/dev/fuse", R_OK | W_OK) != 0) {
    return Fail("/dev/fuse is missing or not accessible (" + std::string(strerror(errno)) +
                "): load the fuse module or install fuse3");
  }
  // A second daemon on the same mount point (stacked FUSE mounts) is refused.
  auto control_path = ControlSocketPath(o.mountpoint);
  if (!control_path.ok()) return Fail(control_path.status().message());
  if (ControlSocketLive(*control_path) || IsStampfsMountPoint(o.mountpoint)) {
    return Fail(o.mountpoint + " is already mounted by a running stampfs (stampfs unmount " +
                o.mountpoint + " first)");
  }
  // Paths stay valid after the daemon's chdir("/") (the unmount at exit too).
  std::filesystem::path mnt = std::filesystem::absolute(o.mountpoint).lexically_normal();
  if (!mnt.has_filename() && mnt != mnt.root_path()) mnt = mnt.parent_path();  // "m/" -> "m"
  o.mountpoint = mnt.string();
  if (!o.cache_dir.empty()) o.cache_dir = std::filesystem::absolute(o.cache_dir).string();
  Daemon daemon = Daemon::Start(o.foreground);
  auto account = LoadAccount(o);
  if (!account.ok()) return Fail(account.status().message());
  // A SAS that cannot write mounts read-only: writes get EROFS, not 403/EACCES.
  if (!o.read_only && account->HasSas() && !account->HasKey()) {
    for (const std::string* sas : {&account->sas_token, &account->table_sas_token}) {
      if (sas->empty() || !ParseSas(*sas).read_only()) continue;
      std::string message = "the SAS token grants read-only access (" + DescribeSas(*sas) +
                            "): mounting read-only; writes fail with EROFS";
      LogWarning(message);  // stderr: the daemon has not switched to syslog yet
      o.read_only = true;
      break;
    }
  }
  // A SAS that writes but cannot delete: unlink, rmdir and rename are refused
  // up front (EACCES); they would fail half done (a file renamed, its old
  // blob left; an entry removed, its blob kept).
  bool can_delete = true;
  if (!o.read_only && account->HasSas() && !account->HasKey()) {
    for (const std::string* sas : {&account->sas_token, &account->table_sas_token}) {
      if (sas->empty() || ParseSas(*sas).can_delete()) continue;
      LogWarning("the SAS token grants no delete permission (" + DescribeSas(*sas) +
                 "): unlink, rmdir and rename fail with EACCES");
      can_delete = false;
      break;
    }
  }
  if (o.cache_dir.empty()) o.cache_dir = DefaultCacheDir(account->account_name, o.container);
  auto lock = LockCacheDir(o.cache_dir);
  if (!lock.ok()) return Fail(lock.status().message());

  ClientOptions client = CommandClientOptions();
  auto blobs = MakeAzureBlobClient(*account, client);
  auto table = MakeAzureTableClient(*account, client);
  auto cache = MetaCache::Open(o.cache_dir + "/meta.db");
  if (!cache.ok()) return Fail(cache.status().ToString());

  NamespaceOptions nso;
  nso.container = o.container;
  nso.table = o.table;
  nso.ttl_ms = static_cast<int64_t>(o.attr_timeout * 1000);
  nso.offline_after_ms = std::max<int64_t>(100, static_cast<int64_t>(o.offline_after * 1000));
  nso.read_only = o.read_only;
  nso.can_delete = can_delete;
  nso.dir_markers = o.dir_markers;
  nso.force_uid = o.uid;
  nso.force_gid = o.gid;
  nso.umask = o.umask.value_or(0);
  // A read-only mount cannot finish renames a crashed mount left: it shows
  // them finished (fs/namespace/rename_view.h), and logs each at start.
  std::unique_ptr<TableStore> view;
  if (o.read_only) {
    RollForwardViewOptions vo;
    vo.table = o.table;
    vo.refresh_ms = std::max<int64_t>(1000, nso.ttl_ms);
    view = MakeRollForwardView(*table, vo);
  }
  // A read-only mount keeps what it adopts of other tools' changes
  // (foreign_ttl, events) over the table it cannot write.
  std::unique_ptr<TableStore> overlay;
  if (o.read_only && (o.foreign_ttl > 0 || !o.events_queue.empty())) {
    overlay = MakeOverlayTable(view ? *view : *table, o.table);
  }
  TableStore& ns_table = overlay ? *overlay : view ? *view : *table;
  Namespace ns(ns_table, *blobs, cache->get(), nso);
  Status init = ns.Init();
  if (!init.ok()) {
    return Fail("cannot mount " + o.container + " from " + account->Describe() + ": " +
                init.ToString() + HintFor(init));
  }
  // First mount of a container that other tools filled: import its blobs.
  if (!o.read_only) {
    Status imported = AutoImportIfNeeded(*table, *blobs, o.container, o.table, o.foreign_ttl > 0);
    if (!imported.ok()) {
      return Fail("automatic import of " + o.container + " failed: " + imported.ToString() +
                  HintFor(imported) + "; run stampfs import " + o.container);
    }
  }
  if (!o.read_only) {
    Status range = ns.ReserveInoRange();
    if (!range.ok()) LogWarning("inode numbers not reserved at mount: " + range.ToString());
  }
  // -o foreign_ttl: directories read are checked against their blobs; -o
  // events applies blob events with the same refresher.
  std::unique_ptr<ForeignView> foreign;
  if (o.foreign_ttl > 0 || !o.events_queue.empty()) {
    ImportOptions io;
    io.container = o.container;
    io.table = o.table;
    io.uid = getuid();
    io.gid = getgid();
    foreign = std::make_unique<ForeignView>(
        ns_table, *blobs, io, static_cast<int64_t>(o.foreign_ttl * 1000), nso.offline_after_ms);
    if (o.foreign_ttl > 0) {
      ns.OnDirectoryRead([&foreign](const std::string& dir, Namespace::DirectoryCheck how) {
        return foreign->Check(dir, how);
      });
    }
    RegisterGauge("foreign.checks", [&foreign] { return foreign->stats().checks; });
    RegisterGauge("foreign.changes", [&foreign] { return foreign->stats().changes; });
    RegisterGauge("foreign.events", [&foreign] { return foreign->stats().events; });
    RegisterGauge("foreign.stale_events", [&foreign] { return foreign->stats().stale_events; });
  }
  Status root = ns.ListRoot();
  if (!root.ok()) LogWarning("root directory not listed at mount: " + root.ToString());
  // Per container: a journal must never be replayed into another container
  // that shares the cache directory.
  auto block_cache = BlockCache::Open(o.cache_dir + "/blocks/" + o.container, o.cache_size);
  if (!block_cache.ok()) return Fail(block_cache.status().ToString());
  FileDataOptions fdo;
  fdo.container = o.container;
  fdo.block_size = o.block_size;
  fdo.conflict = ParseConflictPolicy(o.conflict).value();
  fdo.async_commit = o.async_commit && !o.read_only;
  fdo.commit_delay_ms = static_cast<int64_t>(o.commit_delay * 1000);
  fdo.commit_threads = o.commit_threads;
  fdo.dir_readahead = o.dir_readahead;
  fdo.dir_readahead_size = o.dir_readahead_size;
  fdo.max_queued = QueueBound();
  FileData data(ns, *blobs, **block_cache, fdo);
  if (foreign) {
    foreign->OnChanged([&ns](const std::string& dir) { ns.DropCached(dir); },
                       [&data](uint64_t ino) { data.KernelStale(ino); });
  }
  // Changes a crash left uncommitted are committed before anything is served.
  if (!o.read_only) data.ReplayJournal().PermitUnchecked();
  RegisterGauge("cache.dirty_bytes", [&] { return (*block_cache)->Stats().uncommitted; });
  RegisterGauge("cache.used_bytes", [&] { return (*block_cache)->Stats().used; });
  RegisterGauge("cache.evicted_bytes", [&] { return (*block_cache)->Stats().evicted; });
  RegisterGauge("commits.queued", [&] { return data.Pipeline().queued; });
  RegisterGauge("commits.oldest_age_ms",
                [&] { return static_cast<uint64_t>(data.Pipeline().oldest_age_ms); });
  RegisterGauge("commits.retrying", [&] { return data.Pipeline().retrying; });
  RegisterGauge("commits.journaled", [&] { return data.JournaledFiles(); });
  std::unique_ptr<QueueStore> queue;
  std::unique_ptr<ChangeEvents> events;
  if (!o.events_queue.empty()) {
    queue = MakeAzureQueueClient(*account, client);
    auto events_up = StartEvents(o, *queue, *foreign);
    if (!events_up.ok()) {
      foreign->Stop();  // before FileData goes
      return Fail(events_up.status().message());
    }
    events = std::move(*events_up);
  }
  int rc = Serve(o, *control_path, ns, data, *table, *blobs, daemon);
  // Nothing may tell FileData of changes once it goes.
  events.reset();
  if (foreign) foreign->Stop();
  ClearGauges();
  return rc;
}

// Asks the daemon to commit everything first (for at most its
// shutdown_timeout, retrying): while acknowledged changes are only in its
// cache journal, the file system stays mounted and the command fails,
// naming them. A mount point no stampfs daemon answers for is unmounted as is.
int Unmount(const std::vector<std::string>& args) {
  if (args.size() != 1) return Fail(std::string("unmount needs a MOUNTPOINT\n") + kUsage);
  if (auto control = ControlSocketPath(args[0]); control.ok() && ControlSocketLive(*control)) {
    auto answer = QueryControlSocket(*control, "commit", kMaxUnmountWaitMs);
    if (!answer.ok()) return Fail("unmount: " + answer.status().message() + "; not unmounted");
    if (answer->rfind("left ", 0) == 0) {
      std::istringstream lines(*answer);
      std::string count, cache_dir, path, names;
      std::getline(lines, count);
      std::getline(lines, cache_dir);
      while (std::getline(lines, path)) names += "\n  " + path;
      return Fail("unmount: " + count.substr(5) + " file(s) with acknowledged changes could " +
                  "not be committed within shutdown_timeout (is the service reachable?); " +
                  "they are only in the cache journal of " + cache_dir + ":" + names +
                  "\nnot unmounted: try again, or `umount " + args[0] +
                  "` to leave them to the next mount with that cache directory");
    }
  }
  const std::string type = MountTypeAt(args[0]);
  if (type.empty()) return Fail("unmount: " + args[0] + " is not mounted");
  if (type != "fuse.stampfs") {
    return Fail("unmount: " + args[0] + " is a " + type + " mount, not stampfs; not unmounted");
  }
  pid_t pid = fork();
  if (pid == 0) {
    execlp("fusermount3", "fusermount3", "-u", args[0].c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace
}  // namespace stampfs

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return stampfs::Fail(stampfs::kUsage);
  const std::string cmd = args[0];
  args.erase(args.begin());
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::cout << stampfs::kUsage << "\n" << stampfs::MountUsage() << "\n" << stampfs::StatUsage();
    return 0;
  }
  if (cmd == "--version") {
    std::cout << "stampfs 0.1.0\n";
    return 0;
  }
  if (cmd == "mount") return stampfs::Mount(args);
  if (cmd == "unmount" || cmd == "umount") return stampfs::Unmount(args);
  if (cmd == "stat") return stampfs::StatCommand(args);
  if (cmd == "import") return stampfs::ImportCommand(args);
  if (cmd == "fsck") return stampfs::FsckCommand(args);
  return stampfs::Fail("unknown command " + cmd + "\n" + stampfs::kUsage);
}
