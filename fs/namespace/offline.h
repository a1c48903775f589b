// Offline reads (docs/semantics.md "When the backend goes away"): a table
// read that would only revalidate a cached copy (an entry, a "." row, a
// listing past its TTL) gets a deadline of its own; when it ends without an
// answer from the service (a timeout, a refused connection, failing fast, or
// that deadline), the caller keeps using the cached copy, past its TTL. Reads
// that nothing cached can answer, and reads before a conditional write
// (`fresh`), wait and fail as before.
#pragma once

#include <chrono>

#include "storage/cancel.h"
#include "storage/circuit_breaker.h"
#include "storage/status.h"

namespace stampfs {

// True for a failure that says nothing about what is stored: no answer.
bool NoAnswer(const Status& s);

// While alive, this thread's storage calls are cancelled `within` from now,
// or sooner when the caller's own token (an interrupt) is; while the service
// is taken for away, a probe they send waits 500 ms at most (ShortProbe,
// storage/circuit_breaker.h).
class RevalidationDeadline {
 public:
  explicit RevalidationDeadline(std::chrono::milliseconds within);
  RevalidationDeadline(const RevalidationDeadline&) = delete;
  RevalidationDeadline& operator=(const RevalidationDeadline&) = delete;

  // `s` as the caller sees it: a cancellation by this deadline alone is a
  // timeout (no answer); the caller's own stays kCancelled.
  Status Outcome(Status s) const;

 private:
  const std::chrono::milliseconds within_;
  CancelToken token_;
  ScopedCancelToken scope_;
  ShortProbe short_probe_;
};

// Whether a caller holding a cached copy (`cached`) serves it, stale, for
// the outcome `s` of its revalidation: when `s` is no answer. Counted.
bool ServeStale(bool cached, const Status& s);

}  // namespace stampfs
