#include "fs/daemon/control_socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "storage/auth.h"
#include "storage/stats.h"

namespace stampfs {
namespace {

constexpr int kClientTimeoutMs = 2000;

std::string RuntimeDir() {
  if (getuid() == 0) return "/run/stampfs";
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg) {
    return std::string(xdg) + "/stampfs";
  }
  return "/tmp/stampfs-" + std::to_string(getuid());
}

Result<sockaddr_un> Address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return Status(Code::kInvalidArgument, "control socket path too long: " + path);
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

Result<int> Connect(const std::string& path, int timeout_ms = kClientTimeoutMs) {
  auto addr = Address(path);
  STAMPFS_RETURN_IF_ERROR(addr);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status(Code::kInternal, std::string("socket: ") + strerror(errno));
  if (connect(fd, reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr)) != 0) {
    int err = errno;
    close(fd);
    return Status(err == ENOENT || err == ECONNREFUSED ? Code::kNotFound : Code::kInternal,
                  "no stampfs daemon answers on " + path + " (" + strerror(err) + ")");
  }
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  return fd;
}

bool WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Result<std::string> ControlSocketPath(const std::string& mountpoint) {
  std::error_code ec;
  std::filesystem::path real = std::filesystem::canonical(mountpoint, ec);
  if (ec) return Status(Code::kNotFound, "mount point " + mountpoint + ": " + ec.message());
  return RuntimeDir() + "/" + Sha256Hex(real.string()).substr(0, 16) + ".sock";
}

bool ControlSocketLive(const std::string& path) {
  auto fd = Connect(path);
  if (!fd.ok()) return false;
  close(*fd);
  return true;
}

Result<std::string> QueryControlSocket(const std::string& path, const std::string& command,
                                       int timeout_ms) {
  auto fd = Connect(path, timeout_ms);
  STAMPFS_RETURN_IF_ERROR(fd);
  std::string answer;
  bool sent = WriteAll(*fd, command + "\n");
  char buf[4096];
  while (sent) {
    ssize_t n = recv(*fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      close(*fd);
      return Status(Code::kTimeout, "no answer from " + path);
    }
    if (n == 0) break;
    answer.append(buf, static_cast<size_t>(n));
  }
  close(*fd);
  if (!sent) return Status(Code::kTransport, "cannot send to " + path);
  return answer;
}

Result<std::unique_ptr<ControlSocket>> ControlSocket::Listen(const std::string& path,
                                                             Commands commands) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status(Code::kInternal, "control socket directory " + dir + ": " + strerror(errno));
  }
  // In a shared place (/tmp) someone else could have made it first.
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
      (st.st_mode & 0022) != 0) {
    return Status(Code::kInternal, "control socket directory " + dir +
                                       " is not a directory of this user that only it may write");
  }
  if (ControlSocketLive(path)) {
    return Status(Code::kConflict, "another stampfs daemon answers on " + path);
  }
  unlink(path.c_str());  // a dead daemon's leftover
  auto addr = Address(path);
  STAMPFS_RETURN_IF_ERROR(addr);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status(Code::kInternal, std::string("socket: ") + strerror(errno));
  mode_t old = umask(0177);
  int rc = bind(fd, reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr));
  umask(old);
  if (rc != 0 || listen(fd, 8) != 0) {
    Status s(Code::kInternal, "control socket " + path + ": " + strerror(errno));
    close(fd);
    return s;
  }
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    close(fd);
    unlink(path.c_str());
    return Status(Code::kInternal, std::string("pipe: ") + strerror(errno));
  }
  return std::unique_ptr<ControlSocket>(
      new ControlSocket(path, std::move(commands), fd, pipe_fds[0], pipe_fds[1]));
}

ControlSocket::ControlSocket(std::string path, Commands commands, int listen_fd, int stop_read,
                             int stop_write)
    : path_(std::move(path)),
      commands_(std::move(commands)),
      listen_fd_(listen_fd),
      stop_read_(stop_read),
      stop_write_(stop_write),
      thread_([this] { Serve(); }) {}

ControlSocket::~ControlSocket() {
  char byte = 0;
  while (write(stop_write_, &byte, 1) < 0 && errno == EINTR) {
  }
  thread_.join();
  unlink(path_.c_str());
  close(listen_fd_);
  close(stop_read_);
  close(stop_write_);
}

void ControlSocket::Serve() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_read_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents) return;
    if (!(fds[0].revents & POLLIN)) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    Answer(fd);
    close(fd);
  }
}

// One command line, one answer. A slow or silent client waits at most
// kClientTimeoutMs; the answer is small, so one thread serves every client.
void ControlSocket::Answer(int fd) {
  timeval tv{kClientTimeoutMs / 1000, (kClientTimeoutMs % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  std::string line;
  char c;
  while (line.size() < 256) {
    ssize_t n = recv(fd, &c, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || c == '\n') break;
    line.push_back(c);
  }
  if (line == "stats") {
    WriteAll(fd, StatsJson() + "\n");
  } else if (auto it = commands_.find(line); it != commands_.end()) {
    WriteAll(fd, it->second());
  } else {
    WriteAll(fd, "error: unknown command\n");
  }
}

}  // namespace stampfs
