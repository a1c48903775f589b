// A TCP relay that adds network latency without limiting bandwidth, for the
// benchmark (tests/bench/run puts one in front of Azurite's blob port and one
// in front of its table port).
//
// Every byte read from one side is written to the other `delay` after it was
// read, in order; each direction keeps a queue of timestamped chunks, so the
// reader never waits for the delay and throughput is what the loopback gives
// (up to kMaxQueuedBytes in flight per direction, i.e. kMaxQueuedBytes / delay).
// A round trip through the relay costs 2 x delay; a new connection's first
// bytes wait one round trip more, as a TCP handshake would make them.
// With `jitter`, each chunk waits an extra time drawn from an exponential
// distribution of that mean (a long tail: 1 in 100 waits over 4.6 x the
// mean), still in order: a chunk never leaves before the one read before it.
// A half-close (FIN) is forwarded after the delay like data; a reset or a
// write error ends both sides of that connection.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "storage/status.h"

namespace stampfs::bench {

class LatencyProxy {
 public:
  static constexpr size_t kMaxQueuedBytes = 32u << 20;

  // Listens on 127.0.0.1:listen_port (0: a free port, see port()) and relays
  // each connection to target_host:target_port.
  static Result<std::unique_ptr<LatencyProxy>> Start(uint16_t listen_port,
                                                     const std::string& target_host,
                                                     uint16_t target_port,
                                                     std::chrono::microseconds delay,
                                                     std::chrono::microseconds jitter = {});
  ~LatencyProxy();
  LatencyProxy(const LatencyProxy&) = delete;
  LatencyProxy& operator=(const LatencyProxy&) = delete;

  uint16_t port() const { return port_; }
  // Stops accepting, closes every open connection and joins its thread.
  // Idempotent; the destructor calls it.
  void Stop();

  uint64_t connections() const { return connections_; }
  uint64_t bytes_up() const { return bytes_up_; }      // client to target
  uint64_t bytes_down() const { return bytes_down_; }  // target to client

 private:
  struct Connection {
    std::thread thread;
    std::atomic<bool> finished{false};
  };

  LatencyProxy(int listen_fd, int stop_fd, uint16_t port, const sockaddr_storage& target,
               socklen_t target_len, std::chrono::microseconds delay,
               std::chrono::microseconds jitter);
  void AcceptLoop();
  void Serve(int client);
  void ReapFinished(bool all);

  const int listen_fd_;
  const int stop_fd_;  // eventfd: readable once Stop() was called
  const uint16_t port_;
  const sockaddr_storage target_;
  const socklen_t target_len_;
  const std::chrono::microseconds delay_;
  const std::chrono::microseconds jitter_;  // mean of the extra wait
  std::thread acceptor_;
  std::mutex stop_mu_;
  bool stopped_ = false;  // GUARDED_BY(stop_mu_)
  // Touched only by the acceptor thread until it is joined.
  std::list<Connection> connections_list_;
  std::atomic<uint64_t> connections_{0}, bytes_up_{0}, bytes_down_{0};
};

}  // namespace stampfs::bench
