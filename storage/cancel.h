// Cancellation of storage calls, with no FUSE types: whoever calls into
// storage/ on behalf of someone who may give up (fs/ wires a FUSE interrupt,
// fs/fuse/interrupts.h) makes a CancelToken current on its thread for the call.
// Once the token is cancelled, HTTP calls made on that thread stop: a request
// not sent yet is not sent, one under way is aborted (the transport checks
// the token at least once a second), a backoff sleep ends. Such a call fails
// with kCancelled. A request aborted after it was sent may still have been
// applied by the service: callers treat kCancelled as an unknown outcome, as
// they treat kTimeout.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>

#include "storage/status.h"

namespace stampfs {

class CancelToken {
 public:
  using Clock = std::chrono::steady_clock;

  CancelToken() = default;
  // Cancelled also once `parent` is (it must outlive this token): a shorter
  // deadline for part of a call that the caller may still interrupt.
  explicit CancelToken(const CancelToken* parent) : parent_(parent) {}

  // Cancelled from `at` on; of several times given, the earliest holds.
  void CancelAt(Clock::time_point at);
  void Cancel() { CancelAt(Clock::now()); }
  // Not cancelled again (a token reused for the next call).
  void Reset() { at_ns_.store(kNever, std::memory_order_relaxed); }
  bool cancelled() const;
  // Cancelled because the parent is (the caller gave up), not this token's time.
  bool parent_cancelled() const { return parent_ != nullptr && parent_->cancelled(); }

 private:
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  const CancelToken* const parent_ = nullptr;
  std::atomic<int64_t> at_ns_{kNever};  // steady clock, ns since its epoch
};

// Makes `token` (may be null: none) the current token of this thread while it
// lives; the previous one comes back after.
class ScopedCancelToken {
 public:
  explicit ScopedCancelToken(const CancelToken* token);
  ~ScopedCancelToken();
  ScopedCancelToken(const ScopedCancelToken&) = delete;
  ScopedCancelToken& operator=(const ScopedCancelToken&) = delete;

 private:
  const CancelToken* previous_;
};

// The current token of this thread (null: none).
const CancelToken* CurrentCancelToken();
// True when this thread has a current token and it is cancelled.
bool CurrentlyCancelled();
// The status of a call given up because its token was cancelled.
Status Cancelled(const std::string& what);

// Sleeps for `d`, or less when this thread's token is cancelled meanwhile:
// returns false then.
bool SleepUnlessCancelled(std::chrono::milliseconds d);

}  // namespace stampfs
