#include "tests/bench/latency_proxy.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <optional>
#include <random>

namespace stampfs::bench {
namespace {

using Clock = std::chrono::steady_clock;

Status Errno(const std::string& what) {
  return Status(Code::kTransport, what + ": " + std::strerror(errno));
}

void NoDelay(int fd) {
  int on = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

// Closes fd so that its peer sees a reset, not an orderly end.
void Reset(int fd) {
  linger l{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  close(fd);
}

// One direction of a connection: bytes read from `from` wait in `queue` until
// their due time, then go to `to`. An empty chunk is the end of the stream
// (forwarded as shutdown(SHUT_WR)).
struct Relay {
  struct Chunk {
    Clock::time_point due;
    std::string bytes;
  };
  Relay(int from_fd, int to_fd, std::atomic<uint64_t>* bytes)
      : from(from_fd), to(to_fd), counter(bytes) {}
  const int from, to;
  std::atomic<uint64_t>* const counter;
  std::deque<Chunk> queue;
  size_t queued = 0;    // bytes in queue
  size_t written = 0;   // of queue.front()
  bool read_end = false;  // end of stream read from `from` (and queued)
  bool done = false;      // end of stream forwarded

  bool WantsRead() const { return !read_end && queued < LatencyProxy::kMaxQueuedBytes; }
  std::optional<Clock::time_point> NextDue() const {
    if (queue.empty()) return std::nullopt;
    return queue.front().due;
  }

  // false: the connection is broken (reset or error).
  bool Read(Clock::time_point due) {
    std::string buf(256 * 1024, '\0');
    ssize_t n = read(from, buf.data(), buf.size());
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    buf.resize(static_cast<size_t>(n));
    if (n == 0) read_end = true;
    queued += buf.size();
    queue.push_back({due, std::move(buf)});
    return true;
  }

  // Writes what is due at `now`; false: the connection is broken.
  bool Write(Clock::time_point now) {
    while (!queue.empty() && queue.front().due <= now) {
      Chunk& c = queue.front();
      if (c.bytes.empty()) {
        shutdown(to, SHUT_WR);
        done = true;
        queue.pop_front();
        return true;
      }
      while (written < c.bytes.size()) {
        ssize_t n = send(to, c.bytes.data() + written, c.bytes.size() - written, MSG_NOSIGNAL);
        if (n < 0) {
          if (errno == EINTR) continue;
          return errno == EAGAIN || errno == EWOULDBLOCK;
        }
        written += static_cast<size_t>(n);
        *counter += static_cast<uint64_t>(n);
      }
      queued -= c.bytes.size();
      written = 0;
      queue.pop_front();
    }
    return true;
  }
};

}  // namespace

Result<std::unique_ptr<LatencyProxy>> LatencyProxy::Start(uint16_t listen_port,
                                                          const std::string& target_host,
                                                          uint16_t target_port,
                                                          std::chrono::microseconds delay,
                                                          std::chrono::microseconds jitter) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(target_port);
  if (int rc = getaddrinfo(target_host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return Status(Code::kInvalidArgument, "target " + target_host + ": " + gai_strerror(rc));
  }
  sockaddr_storage target{};
  const socklen_t target_len = found->ai_addrlen;
  std::memcpy(&target, found->ai_addr, target_len);
  freeaddrinfo(found);

  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket");
  int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(listen_port);
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 512) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    Status s = Errno("listen on 127.0.0.1:" + std::to_string(listen_port));
    close(fd);
    return s;
  }
  int stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd < 0) {
    Status s = Errno("eventfd");
    close(fd);
    return s;
  }
  std::unique_ptr<LatencyProxy> proxy(
      new LatencyProxy(fd, stop_fd, ntohs(addr.sin_port), target, target_len, delay, jitter));
  proxy->acceptor_ = std::thread([p = proxy.get()] { p->AcceptLoop(); });
  return proxy;
}

LatencyProxy::LatencyProxy(int listen_fd, int stop_fd, uint16_t port,
                           const sockaddr_storage& target, socklen_t target_len,
                           std::chrono::microseconds delay, std::chrono::microseconds jitter)
    : listen_fd_(listen_fd),
      stop_fd_(stop_fd),
      port_(port),
      target_(target),
      target_len_(target_len),
      delay_(delay),
      jitter_(jitter) {}

LatencyProxy::~LatencyProxy() {
  Stop();
  close(stop_fd_);
}

void LatencyProxy::Stop() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  uint64_t one = 1;
  (void)!write(stop_fd_, &one, sizeof one);
  acceptor_.join();
  close(listen_fd_);
}

void LatencyProxy::ReapFinished(bool all) {
  for (auto it = connections_list_.begin(); it != connections_list_.end();) {
    if (all || it->finished) {
      it->thread.join();
      it = connections_list_.erase(it);
    } else {
      ++it;
    }
  }
}

void LatencyProxy::AcceptLoop() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (poll(fds, 2, 1000) < 0 && errno != EINTR) break;
    if (fds[1].revents) break;
    ReapFinished(false);
    if (!(fds[0].revents & POLLIN)) continue;
    int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (client < 0) continue;
    ++connections_;
    Connection& c = connections_list_.emplace_back();
    c.thread = std::thread([this, client, &c] {
      Serve(client);
      c.finished = true;
    });
  }
  ReapFinished(true);  // each Serve sees stop_fd_ and returns
}

void LatencyProxy::Serve(int client) {
  const Clock::time_point accepted = Clock::now();
  int upstream = socket(target_.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (upstream < 0 || connect(upstream, reinterpret_cast<const sockaddr*>(&target_),
                              target_len_) != 0) {
    if (upstream >= 0) close(upstream);
    Reset(client);  // the target is down: the client sees a refused connection
    return;
  }
  fcntl(upstream, F_SETFL, fcntl(upstream, F_GETFL) | O_NONBLOCK);
  NoDelay(client);
  NoDelay(upstream);
  // The client's first bytes leave one round trip after the accept: what a
  // TCP handshake costs before a real client could send them.
  const Clock::time_point first_send = accepted + 2 * delay_;
  Relay up{client, upstream, &bytes_up_};
  Relay down{upstream, client, &bytes_down_};
  std::mt19937_64 rng(std::random_device{}());
  std::exponential_distribution<double> tail(1.0);
  // When a chunk read now leaves: never before the one read before it.
  const auto due_after = [&](Clock::time_point earliest, Clock::time_point* last) {
    Clock::time_point due = earliest + delay_;
    if (jitter_.count() > 0) {
      due += std::chrono::microseconds(static_cast<int64_t>(tail(rng) * jitter_.count()));
    }
    *last = std::max(*last, due);
    return *last;
  };
  Clock::time_point last_up{}, last_down{};
  bool broken = false;
  while (!broken && !(up.done && down.done)) {
    // fds[0] client, fds[1] upstream; an fd with nothing wanted is left out
    // (-1), so a hang-up on it does not wake the loop.
    short events[2] = {0, 0};
    std::optional<Clock::time_point> wake;
    Clock::time_point now = Clock::now();
    for (Relay* r : {&up, &down}) {
      const int from = r == &up ? 0 : 1, to = 1 - from;
      if (r->WantsRead()) events[from] |= POLLIN;
      if (auto due = r->NextDue()) {
        if (*due <= now) {
          events[to] |= POLLOUT;
        } else if (!wake || *due < *wake) {
          wake = *due;
        }
      }
    }
    pollfd fds[3] = {{events[0] ? client : -1, events[0], 0},
                     {events[1] ? upstream : -1, events[1], 0},
                     {stop_fd_, POLLIN, 0}};
    timespec timeout{};
    if (wake) {
      auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(*wake - now).count();
      ns = std::max<int64_t>(ns, 0);
      timeout.tv_sec = ns / 1000000000;
      timeout.tv_nsec = ns % 1000000000;
    }
    if (ppoll(fds, 3, wake ? &timeout : nullptr, nullptr) < 0 && errno != EINTR) break;
    if (fds[2].revents) {
      broken = true;
      break;
    }
    now = Clock::now();
    for (Relay* r : {&up, &down}) {
      const int from = r == &up ? 0 : 1, to = 1 - from;
      if ((fds[from].revents & (POLLIN | POLLHUP | POLLERR)) && r->WantsRead()) {
        const Clock::time_point due =
            r == &up ? due_after(std::max(now, first_send), &last_up) : due_after(now, &last_down);
        broken = broken || !r->Read(due);
      }
      if (fds[to].revents & (POLLOUT | POLLHUP | POLLERR)) broken = broken || !r->Write(now);
    }
  }
  if (broken) {
    Reset(client);
    Reset(upstream);
  } else {
    close(client);
    close(upstream);
  }
}

}  // namespace stampfs::bench
