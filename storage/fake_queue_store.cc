// QueueStore in memory, with the service's semantics: Get hides what it
// returns for the visibility timeout and gives each message a new pop
// receipt (an older one no longer deletes it); Peek hides nothing; messages
// come back in insertion order once visible; a message past its TTL is gone.
#include <algorithm>
#include <chrono>
#include <list>
#include <map>
#include <mutex>

#include "storage/queue_store.h"

namespace stampfs {
namespace {

constexpr int64_t kDefaultTtlMs = 7ll * 24 * 3600 * 1000;

class FakeQueueStore final : public QueueStore {
 public:
  explicit FakeQueueStore(std::function<int64_t()> now_ms) : now_ms_(std::move(now_ms)) {
    if (!now_ms_) {
      now_ms_ = [] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
      };
    }
  }

  Status CreateQueue(const std::string& queue) override {
    STAMPFS_RETURN_IF_ERROR(CheckQueueName(queue));
    std::lock_guard<std::mutex> lock(mu_);
    queues_[queue];
    return Status::Ok();
  }

  Result<std::vector<QueueMessage>> GetMessages(const std::string& queue, int max,
                                                std::chrono::seconds visibility) override {
    return Take(queue, max, std::max<int64_t>(1, visibility.count()) * 1000, true);
  }

  Result<std::vector<QueueMessage>> PeekMessages(const std::string& queue, int max) override {
    return Take(queue, max, 0, false);
  }

  Status DeleteMessage(const std::string& queue, const std::string& id,
                       const std::string& pop_receipt) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto q = queues_.find(queue);
    if (q == queues_.end()) return NotFound("queue " + queue, "QueueNotFound");
    for (auto it = q->second.begin(); it != q->second.end(); ++it) {
      if (it->id != id) continue;
      if (it->pop_receipt != pop_receipt) break;
      q->second.erase(it);
      return Status::Ok();
    }
    return NotFound("message " + id, "MessageNotFound");
  }

  Status PutMessage(const std::string& queue, const std::string& text,
                    std::chrono::seconds ttl) override {
    if (text.size() > kMaxQueueMessageBytes) {
      return Status(Code::kTooLarge, "a queue message holds at most 64 KiB");
    }
    std::lock_guard<std::mutex> lock(mu_);
    auto q = queues_.find(queue);
    if (q == queues_.end()) return NotFound("queue " + queue, "QueueNotFound");
    const int64_t now = now_ms_();
    Stored m;
    m.id = "m" + std::to_string(++next_id_);
    m.text = text;
    m.visible_ms = now;
    m.expires_ms = now + (ttl.count() > 0 ? ttl.count() * 1000 : kDefaultTtlMs);
    q->second.push_back(std::move(m));
    return Status::Ok();
  }

 private:
  struct Stored {
    std::string id, text, pop_receipt;
    int64_t dequeue_count = 0;
    int64_t visible_ms = 0;
    int64_t expires_ms = 0;
  };

  static Status NotFound(const std::string& what, const char* code) {
    return Status(Code::kNotFound, what + " does not exist", 404, code);
  }

  Result<std::vector<QueueMessage>> Take(const std::string& queue, int max, int64_t hide_ms,
                                         bool dequeue) {
    std::lock_guard<std::mutex> lock(mu_);
    auto q = queues_.find(queue);
    if (q == queues_.end()) return NotFound("queue " + queue, "QueueNotFound");
    const int64_t now = now_ms_();
    std::erase_if(q->second, [&](const Stored& m) { return m.expires_ms <= now; });
    std::vector<QueueMessage> out;
    const size_t limit = static_cast<size_t>(std::clamp(max, 1, kMaxQueueMessagesPerGet));
    for (Stored& m : q->second) {
      if (out.size() == limit) break;
      if (m.visible_ms > now) continue;
      if (dequeue) {
        m.dequeue_count++;
        m.visible_ms = now + hide_ms;
        m.pop_receipt = "r" + std::to_string(++next_receipt_);
      }
      out.push_back({m.id, dequeue ? m.pop_receipt : std::string(), m.dequeue_count, m.text});
    }
    return out;
  }

  std::function<int64_t()> now_ms_;
  std::mutex mu_;
  std::map<std::string, std::list<Stored>> queues_;  // GUARDED_BY(mu_)
  uint64_t next_id_ = 0, next_receipt_ = 0;          // GUARDED_BY(mu_)
};

}  // namespace

std::unique_ptr<QueueStore> MakeFakeQueueStore(std::function<int64_t()> now_ms) {
  return std::make_unique<FakeQueueStore>(std::move(now_ms));
}

}  // namespace stampfs
