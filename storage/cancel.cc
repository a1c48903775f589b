#include "storage/cancel.h"

#include <algorithm>
#include <thread>

namespace stampfs {
namespace {

thread_local const CancelToken* t_current = nullptr;

// How often a sleep looks at the token.
constexpr std::chrono::milliseconds kPoll{20};

int64_t SinceEpochNs(CancelToken::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

void CancelToken::CancelAt(Clock::time_point at) {
  const int64_t ns = SinceEpochNs(at);
  int64_t current = at_ns_.load(std::memory_order_relaxed);
  while (ns < current && !at_ns_.compare_exchange_weak(current, ns, std::memory_order_relaxed)) {
  }
}

bool CancelToken::cancelled() const {
  const int64_t at = at_ns_.load(std::memory_order_relaxed);
  return (at != kNever && SinceEpochNs(Clock::now()) >= at) || parent_cancelled();
}

ScopedCancelToken::ScopedCancelToken(const CancelToken* token) : previous_(t_current) {
  t_current = token;
}

ScopedCancelToken::~ScopedCancelToken() { t_current = previous_; }

const CancelToken* CurrentCancelToken() { return t_current; }

bool CurrentlyCancelled() { return t_current != nullptr && t_current->cancelled(); }

Status Cancelled(const std::string& what) {
  return Status(Code::kCancelled, what + ": cancelled (the caller was interrupted)");
}

bool SleepUnlessCancelled(std::chrono::milliseconds d) {
  const auto end = CancelToken::Clock::now() + d;
  if (t_current == nullptr) {
    std::this_thread::sleep_until(end);
    return true;
  }
  while (!t_current->cancelled()) {
    const auto now = CancelToken::Clock::now();
    if (now >= end) return true;
    std::this_thread::sleep_for(std::min<CancelToken::Clock::duration>(end - now, kPoll));
  }
  return false;
}

}  // namespace stampfs
