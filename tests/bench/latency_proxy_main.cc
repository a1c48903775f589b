// stampfs_latency_proxy: a TCP relay that delays each direction by DELAY_MS
// without limiting bandwidth (tests/bench/latency_proxy.h), for the benchmark.
//
//   stampfs_latency_proxy LISTEN_PORT TARGET_HOST:PORT DELAY_MS [JITTER_MS]
//
// Listens on 127.0.0.1:LISTEN_PORT (0: a free one, printed); a round trip
// through it costs 2 x DELAY_MS (a fraction is fine: 0.5), plus, with
// JITTER_MS, an exponential extra wait of that mean each way. Runs until SIGINT
// or SIGTERM, then closes every connection and exits 0 after printing its
// counters. Exit status: 1 it could not listen, 2 usage.
#include <signal.h>

#include <cstdio>
#include <iostream>
#include <string>

#include "tests/bench/latency_proxy.h"

int main(int argc, char** argv) {
  using stampfs::bench::LatencyProxy;
  if (argc != 4 && argc != 5) {
    std::cerr << "usage: stampfs_latency_proxy LISTEN_PORT TARGET_HOST:PORT DELAY_MS [JITTER_MS]\n";
    return 2;
  }
  const std::string target = argv[2];
  const size_t colon = target.rfind(':');
  unsigned long listen_port = 0, target_port = 0;
  double delay_ms = 0, jitter_ms = 0;
  try {
    listen_port = std::stoul(argv[1]);
    target_port = std::stoul(target.substr(colon == std::string::npos ? target.size() : colon + 1));
    delay_ms = std::stod(argv[3]);
    if (argc == 5) jitter_ms = std::stod(argv[4]);
  } catch (const std::exception&) {
    listen_port = 65536;
  }
  if (colon == std::string::npos || listen_port > 65535 || target_port == 0 ||
      target_port > 65535 || !(delay_ms >= 0 && delay_ms <= 60000) ||
      !(jitter_ms >= 0 && jitter_ms <= 60000)) {
    std::cerr << "stampfs_latency_proxy: bad arguments (LISTEN_PORT TARGET_HOST:PORT DELAY_MS)\n";
    return 2;
  }
  // Every thread inherits the mask; the main thread takes the signal below.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto proxy =
      LatencyProxy::Start(static_cast<uint16_t>(listen_port), target.substr(0, colon),
                          static_cast<uint16_t>(target_port),
                          std::chrono::microseconds(static_cast<int64_t>(delay_ms * 1000)),
                          std::chrono::microseconds(static_cast<int64_t>(jitter_ms * 1000)));
  if (!proxy.ok()) {
    std::cerr << "stampfs_latency_proxy: " << proxy.status().ToString() << "\n";
    return 1;
  }
  std::cout << "stampfs_latency_proxy: 127.0.0.1:" << (*proxy)->port() << " -> " << target << ", "
            << delay_ms << " ms each way, jitter " << jitter_ms << " ms" << std::endl;
  int sig = 0;
  sigwait(&signals, &sig);
  (*proxy)->Stop();
  std::cout << "stampfs_latency_proxy: " << (*proxy)->connections() << " connections, "
            << (*proxy)->bytes_up() << " bytes up, " << (*proxy)->bytes_down() << " bytes down"
            << std::endl;
  return 0;
}
