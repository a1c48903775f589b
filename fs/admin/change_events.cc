#include "fs/admin/change_events.h"

#include <algorithm>

#include "fs/base/log.h"

namespace stampfs {

ChangeEvents::ChangeEvents(QueueStore& queue, ChangeEventOptions options, Apply apply)
    : queue_(queue),
      options_(std::move(options)),
      apply_(std::move(apply)),
      interval_(options_.poll_min) {}

ChangeEvents::~ChangeEvents() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status ChangeEvents::Prepare() { return queue_.CreateQueue(options_.queue + "-poison"); }

Result<size_t> ChangeEvents::PollOnce() {
  auto messages = queue_.GetMessages(options_.queue, kMaxQueueMessagesPerGet, options_.visibility);
  if (!messages.ok()) return messages.status();
  for (const QueueMessage& m : *messages) Settle(m);
  return messages->size();
}

std::chrono::milliseconds ChangeEvents::NextInterval(const Result<size_t>& taken) {
  if (taken.ok() && *taken > 0) {
    interval_ = options_.poll_min;
  } else {
    interval_ = std::min(options_.poll_max, std::max(options_.poll_min, interval_ * 2));
  }
  return interval_;
}

void ChangeEvents::Settle(const QueueMessage& m) {
  auto event = ParseBlobEventMessage(m.text);
  auto count = [this](uint64_t ChangeEventStats::*field) {
    std::lock_guard<std::mutex> lock(mu_);
    ++(stats_.*field);
  };
  if (event.status().Is(Code::kInvalidArgument)) return Poison(m, event.status().message());
  Status done = Status::Ok();
  if (!event.ok() || event->container != options_.container) {
    count(&ChangeEventStats::ignored);  // asks for nothing here
  } else {
    done = apply_(*event);
    if (!done.ok()) {
      if (m.dequeue_count >= options_.max_dequeues) {
        return Poison(m, "applying it failed " + std::to_string(m.dequeue_count) +
                             " times, last: " + done.ToString());
      }
      count(&ChangeEventStats::retried);
      return;  // it comes back after its visibility timeout
    }
    count(&ChangeEventStats::applied);
  }
  Status deleted = queue_.DeleteMessage(options_.queue, m.id, m.pop_receipt);
  // NotFound: taken again meanwhile (its timeout ran out); applying it twice
  // changes nothing, as any duplicate.
  if (!deleted.ok() && !deleted.Is(Code::kNotFound)) {
    LogWarning("events: deleting message " + m.id + " failed (" + deleted.ToString() +
               "); it will be applied again");
  }
}

void ChangeEvents::Poison(const QueueMessage& m, const std::string& why) {
  Status put = queue_.PutMessage(options_.queue + "-poison", m.text);
  if (!put.ok()) {
    LogWarning("events: message " + m.id + " (" + why + ") could not be moved to " +
               options_.queue + "-poison (" + put.ToString() + "); it stays in " + options_.queue);
    return;
  }
  queue_.DeleteMessage(options_.queue, m.id, m.pop_receipt).PermitUnchecked();
  LogWarning("events: message " + m.id + " moved to " + options_.queue + "-poison: " + why);
  std::lock_guard<std::mutex> lock(mu_);
  stats_.poisoned++;
}

void ChangeEvents::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void ChangeEvents::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    lock.unlock();
    auto taken = PollOnce();
    if (!taken.ok()) LogWarning("events: " + taken.status().ToString());
    const auto wait = NextInterval(taken);
    lock.lock();
    wake_.wait_for(lock, wait, [this] { return stopping_; });
  }
}

ChangeEventStats ChangeEvents::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace stampfs
