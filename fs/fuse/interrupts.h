// FUSE interrupts reach the storage calls of the request they interrupt.
//
// Once the kernel has handed a request to the daemon, a caller that gets a
// signal (SIGKILL included) waits for the daemon's answer, and the kernel
// sends FUSE_INTERRUPT for the request. While an operation runs,
// InterruptScope makes a CancelToken (storage/cancel.h) current on its
// thread and registers for that interrupt: it cancels the token
// kInterruptGrace later, so that a call to a healthy service (most answer in
// milliseconds) still completes, while a call waiting on a service that does
// not answer is aborted; the operation then replies EINTR (kCancelled).
// Waits that are not storage calls (a directory's lock held by another
// operation, a file's commit under way) are not cut short.
#pragma once

#include <chrono>

#include "fs/fuse/fuse_ops.h"
#include "storage/cancel.h"

namespace stampfs {

inline constexpr std::chrono::milliseconds kInterruptGrace{1000};

struct InterruptSlot;  // fs/fuse/interrupts.cc

// Lives for one operation, on the thread that runs it. Replying to `req`
// before the scope ends is fine.
class InterruptScope {
 public:
  explicit InterruptScope(fuse_req_t req);
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  InterruptSlot* const slot_;  // this thread's
  ScopedCancelToken current_;
};

}  // namespace stampfs
