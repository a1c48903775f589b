#include "storage/circuit_breaker.h"

#include <cstdio>
#include <utility>

namespace stampfs {

CircuitBreaker::CircuitBreaker(BreakerPolicy policy, NowFn now)
    : policy_(policy), now_(now ? std::move(now) : NowFn(Clock::now)) {}

namespace {
thread_local bool t_short_probe = false;
}  // namespace

ShortProbe::ShortProbe() : previous_(t_short_probe) { t_short_probe = true; }
ShortProbe::~ShortProbe() { t_short_probe = previous_; }
bool ShortProbe::Current() { return t_short_probe; }

CircuitBreaker::Gate CircuitBreaker::Enter() {
  if (!open()) return Gate::kPass;
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_) return Gate::kPass;  // closed meanwhile
  if (probing_ || now_() < next_probe_) return Gate::kFailFast;
  probing_ = true;
  return Gate::kProbe;
}

void CircuitBreaker::Probed(bool answered) {
  std::lock_guard<std::mutex> lock(mu_);
  probing_ = false;
  next_probe_ = now_() + policy_.probe_interval;
  if (answered) open_ = false;
}

void CircuitBreaker::Answered() {
  if (!open()) return;
  std::lock_guard<std::mutex> lock(mu_);
  open_ = false;
}

void CircuitBreaker::Unreachable(const Status& last) {
  std::lock_guard<std::mutex> lock(mu_);
  last_ = last;
  if (open_) return;
  opened_at_ = now_();
  next_probe_ = opened_at_ + policy_.probe_interval;
  open_ = true;
}

Status CircuitBreaker::FailFast(const std::string& what) const {
  std::lock_guard<std::mutex> lock(mu_);
  const double seconds = std::chrono::duration<double>(now_() - opened_at_).count();
  char since[32];
  std::snprintf(since, sizeof since, "%.1f", seconds);
  return Status(Code::kTransport,
                what + ": not sent: no answer from the service (failing fast for " + since +
                    " s, until a probe gets an answer); last failure: " + last_.ToString());
}

std::shared_ptr<CircuitBreaker> MakeBreaker(const BreakerPolicy& policy) {
  return policy.enabled ? std::make_shared<CircuitBreaker>(policy) : nullptr;
}

}  // namespace stampfs
