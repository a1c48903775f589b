// Failing fast while the service is unreachable: a circuit breaker shared by
// the requests to one endpoint (RetryingHttpClient, storage/http.h, asks it
// before each request and tells it what came back).
//
// The rule:
// - Closed (normal): requests go out with their retries and deadlines.
// - It opens when a request ends, with no attempt or deadline left, on a
//   connection failure or a timeout: the service gave no answer for the
//   whole retry span (in the mount's policy, about a second of refused
//   connections, or 45 s of a service that accepts connections and never
//   answers). A failure that a retry repaired opens nothing, so a network
//   blip shorter than the retries fails no call. HTTP error statuses (a 503
//   is an answer) never open it. A cancelled request opens it only when it
//   had little to send (64 KiB) and no answer for `probe_timeout` or more:
//   callers that give up early (interrupts, offline revalidations) would
//   otherwise each wait on a service that is away.
// - Open: a request fails at once with kTransport (it was not sent). Once
//   `probe_interval` has passed since the last probe, and never while another
//   probe is out, the next request first sends a probe, an unsigned GET of
//   the endpoint's root with a `probe_timeout`: any HTTP answer, even an
//   error status, closes the breaker and the request goes out as usual;
//   no answer keeps it open and the request fails at once.
// - Any answer to any request (one sent before the breaker opened) closes it.
// So while the service is away a call costs at most one probe timeout, and
// once it answers again the mount uses it at the next request that comes at
// least `probe_interval` after the last probe.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "storage/status.h"

namespace stampfs {

struct BreakerPolicy {
  bool enabled = false;  // ClientOptions: give each client a breaker
  std::chrono::milliseconds probe_interval{250};
  std::chrono::milliseconds probe_timeout{2000};
};

class CircuitBreaker {
 public:
  using Clock = std::chrono::steady_clock;
  using NowFn = std::function<Clock::time_point()>;

  explicit CircuitBreaker(BreakerPolicy policy, NowFn now = {});

  enum class Gate {
    kPass,      // closed: send the request
    kProbe,     // open, and this request probes first; then call Probed
    kFailFast,  // open: fail the request without sending it (FailFast)
  };
  Gate Enter();
  // The probe of a kProbe request got an HTTP answer (closes) or not.
  void Probed(bool answered);
  // A request got an HTTP answer, whatever its status.
  void Answered();
  // A request ended on `last`, a connection failure or a timeout, with no
  // attempt left.
  void Unreachable(const Status& last);

  bool open() const { return open_.load(std::memory_order_relaxed); }
  Clock::time_point now() const { return now_(); }
  // The failure of a request failed fast ("GET blob.get").
  Status FailFast(const std::string& what) const;
  const BreakerPolicy& policy() const { return policy_; }

 private:
  const BreakerPolicy policy_;
  const NowFn now_;
  std::atomic<bool> open_{false};  // written under mu_; read without it
  mutable std::mutex mu_;
  Clock::time_point opened_at_;   // GUARDED_BY(mu_)
  Clock::time_point next_probe_;  // GUARDED_BY(mu_)
  bool probing_ = false;          // GUARDED_BY(mu_)
  Status last_;                   // GUARDED_BY(mu_): what opened it, or the latest since
};

// While alive, a probe this thread's requests send waits at most
// kShortProbe: the caller has an answer of its own (a cached copy,
// fs/namespace/offline.h) and would rather give it than wait a probe's
// whole timeout. A service that is back answers a probe well within that.
class ShortProbe {
 public:
  static constexpr std::chrono::milliseconds kShortProbe{500};
  ShortProbe();
  ~ShortProbe();
  ShortProbe(const ShortProbe&) = delete;
  ShortProbe& operator=(const ShortProbe&) = delete;
  static bool Current();

 private:
  bool previous_;
};

// A breaker for a client of one endpoint; null when `policy` is not enabled.
std::shared_ptr<CircuitBreaker> MakeBreaker(const BreakerPolicy& policy);

}  // namespace stampfs
