// The consumer of a container's change events (-o events=QUEUE, issue 30):
// Event Grid delivers BlobCreated/BlobDeleted into a storage queue
// (storage/blob_events.h); this takes them and hands each to `apply`,
// which reads what is stored before changing anything (an event is a hint:
// at least once, unordered, late, or forged).
//
// Protocol, per message: taken with a visibility timeout; deleted once
// applied, or when it asks for nothing (another event type, another
// container); left to come back when `apply` fails, and moved to
// QUEUE-poison (with a warning) once it has been taken max_dequeues times;
// a message that is no event at all goes to QUEUE-poison at once. Polling
// costs one request per interval: poll_min while messages come, doubling
// to poll_max while the queue is empty.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "storage/blob_events.h"
#include "storage/queue_store.h"

namespace stampfs {

struct ChangeEventOptions {
  std::string queue;
  std::string container;  // events about other containers are dropped
  std::chrono::milliseconds poll_min{200};
  std::chrono::milliseconds poll_max{5000};
  std::chrono::seconds visibility{30};  // a taken message's time to be applied
  int max_dequeues = 5;
};

struct ChangeEventStats {
  uint64_t applied = 0;
  uint64_t ignored = 0;   // other event types or containers
  uint64_t retried = 0;   // apply failed; the message comes back
  uint64_t poisoned = 0;  // moved to QUEUE-poison
};

class ChangeEvents {
 public:
  using Apply = std::function<Status(const BlobEvent&)>;
  ChangeEvents(QueueStore& queue, ChangeEventOptions options, Apply apply);
  ~ChangeEvents();  // stops the thread if started
  ChangeEvents(const ChangeEvents&) = delete;
  ChangeEvents& operator=(const ChangeEvents&) = delete;

  // Creates QUEUE-poison (the queue itself is Event Grid's to fill).
  Status Prepare();
  // One poll: takes up to 32 messages and settles each. Returns how many
  // were taken (0: the queue was empty), or the queue's error.
  Result<size_t> PollOnce();
  // The interval before the next poll after one that took `taken` (or failed).
  std::chrono::milliseconds NextInterval(const Result<size_t>& taken);
  // Polls on a thread of its own until the destructor.
  void Start();
  ChangeEventStats stats() const;

 private:
  void Settle(const QueueMessage& m);
  void Poison(const QueueMessage& m, const std::string& why);
  void Loop();

  QueueStore& queue_;
  const ChangeEventOptions options_;
  const Apply apply_;
  std::chrono::milliseconds interval_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;   // GUARDED_BY(mu_)
  ChangeEventStats stats_;  // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace stampfs
